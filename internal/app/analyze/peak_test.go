package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// line is one access of the peak tests' inputs.
type line struct {
	at    time.Time
	key   string
	write bool
	units float64
}

// analyzeLines writes lines as a JSON-lines file and returns analyze's
// JSON report of it.
func analyzeLines(t *testing.T, lines []line) report.Report {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		op := "GetItem"
		if l.write {
			op = "PutItem"
		}
		fmt.Fprintf(&b, `{"ts":%q,"table":"orders","pk":%q,"op":%q,"units":%g}`+"\n", l.at.Format(time.RFC3339Nano), l.key, op, l.units)
	}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), Config{Files: []string{path}, Pipeline: defaultPipeline(), Format: "json",
		Log: zap.NewNop(), Workers: 1, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr.String())
	}
	var r report.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSmallFilePeak: 16 events, one a second from :00 to :15, lie in 16
// seconds; the table's busiest second is 1 unit, and its mean 1 unit a
// second, not 16 units over the 15 s between the first and the last.
func TestSmallFilePeak(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var lines []line
	for i := range 16 {
		lines = append(lines, line{at: t0.Add(time.Duration(i) * time.Second), key: fmt.Sprintf("k%d", i%2), write: true, units: 1})
	}
	r := analyzeLines(t, lines)
	w := r.Tables[0].Classes[traffic.Write]
	if w.PeakUnitsPerSecond != 1 || w.UnitsPerSecond != 1 {
		t.Errorf("writes %v WCU/s, peak %v; want 1 and 1", w.UnitsPerSecond, w.PeakUnitsPerSecond)
	}
	for _, k := range r.Tables[0].TopKeys {
		if k.PeakUnitsPerSecond != 1 || k.UnitsPerSecond != 0.5 {
			t.Errorf("%s: %v WCU/s, peak %v; want 0.5 and 1", k.Key, k.UnitsPerSecond, k.PeakUnitsPerSecond)
		}
	}
}

// TestPeakNeverAboveBusiestSecond is a property over random small inputs
// (a few events in a few seconds, fractions of seconds, both classes,
// several keys, any order): a class's peak is its busiest second's units,
// exactly, and its mean is not above it; a key's peak is not above its
// busiest second, nor its mean above its peak.
func TestPeakNeverAboveBusiestSecond(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for run := range 150 {
		n := 1 + rng.IntN(40)
		span := 1 + rng.IntN(20) // seconds the events fall in, at most
		var lines []line
		for range n {
			lines = append(lines, line{
				at:    t0.Add(time.Duration(rng.Int64N(int64(span) * int64(time.Second)))).Truncate(time.Millisecond),
				key:   fmt.Sprintf("k%d", rng.IntN(4)),
				write: rng.IntN(2) == 0,
				units: float64(1 + rng.IntN(4)),
			})
		}
		// The truth: units per second, per class and per key and class.
		class := map[bool]map[int64]float64{false: {}, true: {}}
		key := map[string]map[int64]float64{}
		for _, l := range lines {
			class[l.write][l.at.Unix()] += l.units
			id := fmt.Sprint(l.key, l.write)
			if key[id] == nil {
				key[id] = map[int64]float64{}
			}
			key[id][l.at.Unix()] += l.units
		}
		busiest := func(m map[int64]float64) (most float64) {
			for _, v := range m {
				most = math.Max(most, v)
			}
			return most
		}
		r := analyzeLines(t, lines)
		if len(r.Tables) != 1 {
			t.Fatalf("run %d: %d tables", run, len(r.Tables))
		}
		tr := r.Tables[0]
		for _, c := range tr.Classes {
			most := busiest(class[c.Class == traffic.Write.String()])
			if c.PeakUnitsPerSecond != most || c.UnitsPerSecond > c.PeakUnitsPerSecond+1e-9 {
				t.Errorf("run %d: %s: %v units/s, peak %v; the busiest second has %v\n%v", run, c.Class, c.UnitsPerSecond, c.PeakUnitsPerSecond, most, lines)
			}
		}
		for _, k := range tr.TopKeys {
			most := busiest(key[fmt.Sprint(k.Key, k.Class == traffic.Write.String())])
			if k.PeakUnitsPerSecond > most+1e-9 || k.UnitsPerSecond > k.PeakUnitsPerSecond+1e-9 {
				t.Errorf("run %d: %s %s: %v units/s, peak %v; its busiest second has %v\n%v", run, k.Key, k.Class, k.UnitsPerSecond, k.PeakUnitsPerSecond, most, lines)
			}
		}
	}
}
