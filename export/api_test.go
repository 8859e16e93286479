package export

import (
	"encoding/json"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// TestHotkeysEncodeError checks that a report JSON cannot encode (a +Inf
// total) answers 500 with a JSON error and a logged error, never a 200 with
// an empty or cut body.
func TestHotkeysEncodeError(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	live := NewLive(nil)
	rep := handState()
	rep.Tables[0].WriteUnits = math.Inf(1)
	live.Update(rep)
	h := hotkeysHandler{live: live, log: zap.New(core)}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/hotkeys", nil))
	if rec.Code != 500 {
		t.Errorf("status %d, want 500; body %q", rec.Code, rec.Body)
	}
	var body struct{ Error string }
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || !strings.Contains(body.Error, "encode") {
		t.Errorf("body %q (%v), want a JSON error saying the report could not be encoded", rec.Body, err)
	}
	errs := logs.FilterLevelExact(zapcore.ErrorLevel).All()
	if len(errs) != 1 || !strings.Contains(errs[0].ContextMap()["error"].(string), "Inf") {
		t.Errorf("logged %+v, want one error line naming the encoding error", logs.All())
	}
}

// TestHotkeysIdleTables checks that a table with nothing in the window (no
// events, no throttled calls, nothing flagged) is left out of the live
// report unless asked for by name, and that a table with only throttled
// calls or a flagged finding stays.
func TestHotkeysIdleTables(t *testing.T) {
	live := NewLive(nil)
	rep := handState()
	rep.Tables = append(rep.Tables,
		report.TableReport{Table: "idle", TopKeys: []report.TopKey{}, Findings: []report.Finding{}},
		report.TableReport{Table: "refused", ThrottledKeys: []report.ThrottledKey{{Key: "K", Count: 3}}},
		report.TableReport{Table: "quiet", Findings: []report.Finding{{Kind: report.KindLowCardinality, Class: "write"}}},
	)
	live.Update(rep)
	h := hotkeysHandler{live: live, log: zap.NewNop()}
	tables := func(query string) []string {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/hotkeys"+query, nil))
		var r report.Report
		if err := json.Unmarshal(rec.Body.Bytes(), &r); rec.Code != 200 || err != nil {
			t.Fatalf("GET %s = %d %s", query, rec.Code, rec.Body)
		}
		var out []string
		for _, tr := range r.Tables {
			out = append(out, TableLabel(tr.Table, tr.Index))
		}
		return out
	}
	if got, want := strings.Join(tables(""), " "), "orders orders/status-index refused quiet"; got != want {
		t.Errorf("tables %q, want %q", got, want)
	}
	if got := tables("?table=idle"); len(got) != 1 || got[0] != "idle" {
		t.Errorf("?table=idle: %q, want the idle table, asked for by name", got)
	}
}
