package export

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// recordedStore is a history store with 90 seconds of one hot key on
// table orders and its incident, recorded as the daemon's tick does.
func recordedStore(t *testing.T, start time.Time) *history.Store {
	t.Helper()
	// The store's writer reads the clock while the loop below moves it.
	var now atomic.Int64
	now.Store(start.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	s, err := history.Open(context.Background(), history.Options{Dir: t.TempDir(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; s.Close() })
	for i := range 90 {
		at := start.Add(time.Duration(i) * time.Second)
		end := at.Add(time.Second)
		now.Store(end.UnixNano())
		ts := sketch.TableSnapshot{Table: "orders", Start: at.Add(-59 * time.Second), End: end, LastSecond: at, DistinctKeys: 2}
		ts.Classes[traffic.Write] = sketch.ClassStats{Events: 1000, Units: 1000}
		sec := report.TableSecond{Table: "orders", At: at, Classes: []report.ClassSecond{{Class: "read"},
			{Class: "write", Units: 1000, Keys: []report.KeySecond{{Key: "USER#4242", Units: 600}, {Key: "USER#7", Units: 400}}}}}
		var flags []report.Flag
		if i >= 10 && i < 60 {
			flags = []report.Flag{{Table: "orders", Diagnosis: report.Diagnosis{Cause: report.KindHotKey, Class: "write", Keys: []string{"USER#4242"},
				Severity: report.SeverityWarning, PeakUnitsPerSecond: 600, Summary: "USER#4242 takes 60% of the writes",
				Fix: report.Recommendation{Kind: "calculated_suffix", Text: "append a suffix to USER#4242"}}}}
		}
		s.Record(history.Evaluation{Snapshot: sketch.Snapshot{Tables: []sketch.TableSnapshot{ts}}, Seconds: []report.TableSecond{sec}, Flags: flags})
	}
	return s
}

// TestRecordedAPI: /api/v1/history and /api/v1/incidents answer the
// store's cells and incidents with keys masked, and bad parameters 400
// with what is wrong.
func TestRecordedAPI(t *testing.T) {
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	masker, err := NewKeyMasker(KeysHash, "k")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(zap.NewNop(), ServerConfig{Gatherer: NewSourcesRegistry(), Live: NewLive(nil), Readiness: NewReadiness(),
		Recorded: recordedStore(t, start), Masker: masker})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(rec.Body)
		return rec.Code, string(body)
	}
	var a history.Answer
	var code int
	var body string
	// The writer writes the closed minute as the tick hands it over.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		code, body = get("/api/v1/history?table=orders&class=write&from=2026-12-02T10:00:00Z&to=2026-12-02T10:05:00Z")
		a = history.Answer{}
		if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil {
			t.Fatalf("history: %d %s", code, body)
		}
		if len(a.Series) == 1 && len(a.Series[0].Cells) == 2 {
			break
		}
		<-tick.C
	}
	if a.StepSeconds != 60 || len(a.Series) != 1 || len(a.Series[0].Cells) != 2 {
		t.Fatalf("history: step %d, series %+v", a.StepSeconds, a.Series)
	}
	if k := a.Series[0].Cells[0].Keys[0]; k.Key != masker.Mask("USER#4242") || k.Share != 0.6 || k.BusiestSecond != 600 {
		t.Errorf("first cell's top key %+v", k)
	}
	if strings.Contains(body, "4242") {
		t.Errorf("history shows a key unmasked: %s", body)
	}
	code, body = get("/api/v1/incidents?from=2026-12-02T09:00:00Z&to=2026-12-02T11:00:00Z")
	var incs struct{ Incidents []history.Incident }
	if err := json.Unmarshal([]byte(body), &incs); code != 200 || err != nil || len(incs.Incidents) != 1 {
		t.Fatalf("incidents: %d %s", code, body)
	}
	if inc := incs.Incidents[0]; inc.End == nil || !inc.Start.Equal(start.Add(11*time.Second)) || strings.Contains(body, "4242") {
		t.Errorf("incident %s", body)
	}
	for path, want := range map[string]string{
		"/api/v1/history": "table: required",
		"/api/v1/history?table=orders&from=yesterday":                         `from: want an RFC 3339 time (2026-12-02T09:00:00Z), got \"yesterday\"`,
		"/api/v1/history?table=orders&step=0":                                 `step: want a number of seconds from 1 to a year, got \"0\"`,
		"/api/v1/history?table=orders&class=scan":                             `bad query: class \"scan\" is neither read nor write`,
		"/api/v1/incidents?from=2026-12-02T10:00:00Z&to=2026-12-02T09:00:00Z": "from (2026-12-02T10:00:00Z) must be before to (2026-12-02T09:00:00Z)",
	} {
		if code, body := get(path); code != 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s, want 400 with %s", path, code, body, want)
		}
	}
}
