package export

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// goldenReport is the detector's report over the golden workload, as
// hotkeyd analyze makes it, with a note, a rejected count and a key that
// must be quoted.
func goldenReport(t *testing.T) report.Report {
	t.Helper()
	store, err := sketch.NewStore(sketch.Config{Window: 0, SubWindows: 1, Tracked: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := goldenEvents()
	for i := range 20 {
		evs = append(evs, traffic.Event{Table: "sessions", PK: "S 99\t", Class: traffic.Read, Units: 1, Source: "demo", Time: t0.Add(time.Duration(i) * time.Second)})
	}
	if err := store.Put(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	rep := detect.Evaluate(store.Snapshot(), detect.DefaultSettings())
	rep.Rejected = 1234
	rep.Notes = []string{"CloudTrail input counts one unit per item."}
	return rep
}

func TestWriteTextReportGolden(t *testing.T) {
	for name, rep := range map[string]func() report.Report{
		"report.txt":        func() report.Report { return goldenReport(t) },
		"report-redact.txt": func() report.Report { return mustMasker(t, KeysRedact, "").MaskReport(goldenReport(t)) },
		"report-empty.txt":  func() report.Report { return report.Report{Settings: detect.DefaultSettings().Report()} },
		"report-kinds.txt":  func() report.Report { return detect.Evaluate(privacySnapshot(), detect.DefaultSettings()) },
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTextReport(&b, rep()); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name)
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != string(want) {
				t.Errorf("text report differs from %s (run go test ./export -run TestWriteTextReportGolden -update to accept):\n%s", path, lineDiff(string(want), b.String()))
			}
		})
	}
}

func TestHumanNumbers(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{groupDigits(1234567), "1,234,567"},
		{groupDigits(12), "12"},
		{fmtSpan(774*24*time.Hour + 8*time.Hour + 40*time.Minute), "774d 9h"},
		{fmtSpan(90 * time.Second), "1m30s"},
		// Rounded to the hour before it is split into days.
		{fmtSpan(2*24*time.Hour + 23*time.Hour + 45*time.Minute), "3d 0h"},
		{fmtSpan(math.MaxInt64), "106751d 23h"},
		// Wider than a time.Duration holds: Sub would saturate at 292 years.
		{fmtSpanOf(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)), "3652059d 0h"},
		{fmtSpanOf(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), time.Date(2026, 11, 22, 10, 1, 0, 0, time.UTC)), "1m0s"},
		{fmtSpanOf(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 22, 10, 31, 0, 0, time.UTC)), "2d 11h"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestWriteTextReportError(t *testing.T) {
	if err := WriteTextReport(failingWriter{}, report.Report{}); err == nil {
		t.Error("a failing writer's error was dropped")
	}
}

// TestWriteTextReportThreshold: the threshold printed is the one the
// report was judged by.
func TestWriteTextReportThreshold(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTextReport(&b, report.Report{Settings: report.Settings{Threshold: 0.25}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "a key is hot at 25% of its table's units of a class") {
		t.Errorf("report judged at 25%%:\n%s", b.String())
	}
}

// TestBinaryKeyText: a binary key whose bytes are text is shown with that
// text beside its base64, in the key column and the throttled keys;
// masked, neither its text nor any text form of it is shown.
func TestBinaryKeyText(t *testing.T) {
	const key, text = "dXNlcjYyODQ3ODE4NjA2NjczNzcyMTE=", "user6284781860667377211"
	r := report.Report{Tables: []report.TableReport{{Table: "users",
		TopKeys:       []report.TopKey{{Key: key, KeyText: report.KeyText(key), Class: "read", Units: 10, Share: 1}},
		ThrottledKeys: []report.ThrottledKey{{Key: key, KeyText: report.KeyText(key), Count: 3}}}}}
	var b bytes.Buffer
	if err := WriteTextReport(&b, r); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), key+" (text "+text+")"); n != 2 {
		t.Errorf("the key and its text are shown %d times, want 2 (top keys, throttled keys):\n%s", n, b.String())
	}
	for _, mode := range []KeyMode{KeysHash, KeysRedact} {
		masked := mustMasker(t, mode, "k").MaskReport(r)
		js, _ := json.Marshal(masked)
		b.Reset()
		if err := WriteTextReport(&b, masked); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(js), text) || strings.Contains(b.String(), text) || strings.Contains(string(js), "key_text") {
			t.Errorf("%s: the key's text shows through:\n%s\n%s", mode, js, b.String())
		}
	}
}
