package analyze

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/benchgen"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// manyKeys writes the benchmark's shape (internal/benchgen: four tables,
// a fifth of the traffic on 50 hot keys, the rest over 500 000 keys, far
// more than the sketch counts exactly) in time order and shuffled.
func manyKeys(t *testing.T, events int) (ordered, shuffled string) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := benchgen.Generate(&buf, events, 7); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ordered = filepath.Join(dir, "ordered.jsonl")
	if err := os.WriteFile(ordered, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(buf.String(), "\n")
	lines = lines[:len(lines)-1] // after the last newline
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	shuffled = filepath.Join(dir, "shuffled.jsonl")
	if err := os.WriteFile(shuffled, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return ordered, shuffled
}

// TestAnalyzeManyKeysAnyOrder: with far more keys than the sketch counts
// exactly, the report of a shuffled file is the ordered file's, on one
// worker and on several: every figure of the tables, their diagnoses,
// and the keys with their units, busiest seconds and forecasts, byte for
// byte. The many keys of a few events each, which tie at the sketch's
// noise, are listed by none (tailkeys.go): a list of them would hold the
// keys the sketch happened to meet last.
func TestAnalyzeManyKeysAnyOrder(t *testing.T) {
	ordered, shuffled := manyKeys(t, 60_000)
	cases := []struct {
		name    string
		file    string
		workers int
	}{
		{"ordered on one worker", ordered, 1},
		{"shuffled on one worker", shuffled, 1},
		{"ordered on two workers", ordered, 2},
		{"shuffled on two workers", shuffled, 2},
		{"shuffled on three workers", shuffled, 3},
	}
	reports := make([]string, len(cases))
	for i, c := range cases {
		_, reports[i] = analyzeJSON(t, c.workers, "", c.file)
	}
	if !strings.Contains(reports[0], `"KEY#0"`) || strings.Count(reports[0], `"peak_units_per_second"`) < 50 {
		t.Fatalf("the ordered file's report lacks the hot keys:\n%s", reports[0])
	}
	for i, c := range cases {
		if reports[i] != reports[0] {
			t.Errorf("%s: report differs from the ordered file's on one worker:\n%s", c.name, firstLineDiff(reports[i], reports[0]))
		}
	}
}

// TestAnalyzeSpillAsSecondRead: the keys' seconds, the forecasts' hours
// and the throttled keys added up from the spill are those a second read
// of the inputs counts: with no spill (no temporary directory to write it
// to) the report is the same, byte for byte, and stderr says the inputs
// were read twice. The inputs: the benchmark's shape shuffled (keys
// counted from estimates), and three days of traffic, shuffled, with
// more throttled keys than the store counts exactly.
func TestAnalyzeSpillAsSecondRead(t *testing.T) {
	_, shuffled := manyKeys(t, 30_000)
	inputs := map[string]string{"many keys": shuffled, "three days, throttled": daysThrottled(t)}
	for name, file := range inputs {
		for _, workers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s, %d workers", name, workers), func(t *testing.T) {
				rep, spilled := analyzeJSON(t, workers, "", file)
				if name == "three days, throttled" {
					checkDaysThrottled(t, rep)
				}
				t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
				_, read, stderr := analyzeJSONStderr(t, workers, "", file)
				if !strings.Contains(stderr, "read twice") {
					t.Fatalf("stderr does not say the inputs were read twice:\n%s", stderr)
				}
				if read != spilled {
					t.Errorf("report from the spill differs from a second read's:\n%s", firstLineDiff(spilled, read))
				}
			})
		}
	}
}

// checkDaysThrottled checks that the report of daysThrottled counted
// what the spill must give: the tenant's trend (its hours' busiest
// seconds), and the throttled keys listed exactly although there are
// more (about 2300) than the store counts exactly.
func checkDaysThrottled(t *testing.T, rep report.Report) {
	t.Helper()
	if len(rep.Tables) != 1 {
		t.Fatalf("%d tables, want orders", len(rep.Tables))
	}
	orders := rep.Tables[0]
	if len(orders.ThrottledKeys) == 0 {
		t.Fatal("no throttled keys")
	}
	for _, k := range orders.ThrottledKeys {
		if k.CountMax != 0 {
			t.Fatalf("throttled key %+v is known within bounds, want exact", k)
		}
	}
	for _, f := range orders.Forecasts {
		if f.Key == "TENANT#acme" && f.TrendPerDay != nil && *f.TrendPerDay > 0 {
			return
		}
	}
	t.Errorf("no growing trend for the tenant in %+v", orders.Forecasts)
}

// daysThrottled writes three days of a table's traffic, shuffled: a
// tenant growing hour by hour (a forecast's input), 2000 other keys, and
// 3000 keys throttled once or twice, more than analyzeThrottledKeys.
func daysThrottled(t *testing.T) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 10))
	var lines []string
	add := func(at time.Time, pk string, units int, throttled bool) {
		l := fmt.Sprintf(`{"ts":%q,"table":"orders","pk":%q,"op":"PutItem","units":%d`, at.Format(time.RFC3339Nano), pk, units)
		if throttled {
			l += `,"throttled":true`
		}
		lines = append(lines, l+"}\n")
	}
	for h := range 72 {
		hour := burstStart.Add(time.Duration(h) * time.Hour)
		for range 20 + h {
			add(hour.Add(time.Duration(rng.IntN(3600))*time.Second), "TENANT#acme", 1+h/10, false)
		}
		for range 40 {
			add(hour.Add(time.Duration(rng.IntN(3600))*time.Second), fmt.Sprintf("USER#%d", rng.IntN(2000)), 1, false)
		}
		for range 60 {
			add(hour.Add(time.Duration(rng.IntN(3600))*time.Second), fmt.Sprintf("USER#%d", rng.IntN(3000)), 1, true)
		}
	}
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	path := filepath.Join(t.TempDir(), "days.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSpillCountsMergedPartsOnly: the records of a part that is never
// merged (package parallel drops the parts of an input after one that
// failed) are not counted, even once written to the file; those of the
// parts merged are, each in its second, within the range kept.
func TestSpillCountsMergedPartsOnly(t *testing.T) {
	valid := plausible(time.Now())
	s, err := newKeySpill(valid)
	if err != nil {
		t.Fatal(err)
	}
	defer s.remove()
	at := burstStart
	event := func(key string, sec int, units float64) traffic.Event {
		return traffic.Event{Table: "orders", PK: key, Class: traffic.Write, Units: units, Time: at.Add(time.Duration(sec) * time.Second)}
	}
	merged, dropped := newSpillWriter(s), newSpillWriter(s)
	// Enough records to fill several chunks of the dropped part.
	var batch []traffic.Event
	for i := range 3 * spillChunk / 20 {
		batch = append(batch, event("TENANT#acme", i%4, 1))
	}
	dropped.put(batch)
	dropped.flush()
	merged.put([]traffic.Event{event("TENANT#acme", 0, 2), event("TENANT#acme", 0, 0.5), event("TENANT#acme", 3, 1), event("USER#1", 0, 7)})
	merged.put([]traffic.Event{{Table: "orders", PK: "TENANT#acme", Class: traffic.Write, Throttled: true}})
	merged.close()
	want := map[rankedKey]struct{}{{table: "orders", key: "TENANT#acme", class: traffic.Write}: {}}
	keep := timeRange{from: valid.from, to: at.Add(3 * time.Second).Unix()}
	keys, err := s.count(want, true, nil, keep, 2)
	if err != nil {
		t.Fatal(err)
	}
	ks := keys.keys[rankedKey{table: "orders", key: "TENANT#acme", class: traffic.Write}]
	if got := ks.at(at.Unix()); got != 10 {
		t.Errorf("second 0: %d quarter units, want 10 (2.5 units of the merged part)", got)
	}
	if got := ks.at(at.Unix() + 3); got != 0 {
		t.Errorf("second 3: %d quarter units, want 0 (outside the range kept)", got)
	}
	if got := ks.at(at.Unix() + 1); got != 0 {
		t.Errorf("second 1: %d quarter units, want 0 (only the dropped part had traffic then)", got)
	}
	kc := keys.throttled.groups[throttleGroup{"orders", "", traffic.Write}]
	if kc == nil || len(kc.keys) != 1 || kc.counts[0] != 1 {
		t.Errorf("throttled keys %+v, want TENANT#acme once", kc)
	}
}

// TestSpillBoundsItsTables: past maxSpillTables table names the spill is
// dropped, and counts nothing (analyze then reads the inputs again,
// countAgain): made-up names do not grow its maps without bound.
func TestSpillBoundsItsTables(t *testing.T) {
	s, err := newKeySpill(plausible(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.remove()
	w := newSpillWriter(s)
	batch := make([]traffic.Event, 0, 512)
	for i := range maxSpillTables + 1 {
		batch = append(batch, traffic.Event{Table: fmt.Sprintf("t%d", i), PK: "k", Units: 1, Time: burstStart})
		if len(batch) == cap(batch) {
			w.put(batch)
			batch = batch[:0]
		}
	}
	w.put(batch)
	w.close()
	if s.ok() {
		t.Fatalf("the spill holds %d tables, want it dropped past %d", len(s.names), maxSpillTables)
	}
	if _, err := s.count(map[rankedKey]struct{}{}, false, nil, plausible(time.Now()), 1); err == nil {
		t.Fatal("a dropped spill counted")
	}
}
