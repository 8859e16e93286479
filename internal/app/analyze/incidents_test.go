package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// incidentScenario is a testdata/incidents file: traffic over a span of
// event time, written as JSON lines, and the incidents analyze must
// report of it.
type incidentScenario struct {
	Start   time.Time      `json:"start"`
	Seconds int            `json:"seconds"`
	Seed    uint64         `json:"seed"`
	Traffic []trafficSpec  `json:"traffic"`
	Want    []wantIncident `json:"want"`
}

// trafficSpec is a stream of calls: PerSecond a second (spread over the
// second) from From to To (the whole span when zero), on Key, or on keys
// drawn from Keys distinct ones.
type trafficSpec struct {
	Table          string    `json:"table"`
	Index          string    `json:"index"`
	Op             string    `json:"op"`
	Units          float64   `json:"units"`
	PerSecond      int       `json:"per_second"`
	Key            string    `json:"key"`
	Keys           int       `json:"keys"`
	From           time.Time `json:"from"`
	To             time.Time `json:"to"`
	ThrottleReason string    `json:"throttle_reason"`
}

// wantIncident is an incident analyze must report: Start is when its
// traffic began (the incident starts within startSlack after), End when
// it stopped (the incident ends within endSlack after; null: open).
type wantIncident struct {
	Table    string     `json:"table"`
	Index    string     `json:"index"`
	Cause    string     `json:"cause"`
	Class    string     `json:"class"`
	Keys     []string   `json:"keys"`
	Severity string     `json:"severity"`
	Start    time.Time  `json:"start"`
	End      *time.Time `json:"end"`
	Peak     float64    `json:"peak_units_per_second"`
}

const (
	// startSlack: the share of the window takes a while to pass the
	// threshold (14 s for 3 calls a second over 6), then the hold (1 s).
	startSlack = 20 * time.Second
	// endSlack: the window (60 s) forgets the key's units.
	endSlack = 75 * time.Second
)

// lines writes the scenario's calls as JSON lines, in time order.
func (sc incidentScenario) lines(t *testing.T) []string {
	rng := rand.New(rand.NewPCG(sc.Seed, sc.Seed+1))
	type line struct {
		at   time.Time
		text string
	}
	var out []line
	for s := range sc.Seconds {
		sec := sc.Start.Add(time.Duration(s) * time.Second)
		for _, tr := range sc.Traffic {
			if !tr.From.IsZero() && sec.Before(tr.From) || !tr.To.IsZero() && !sec.Before(tr.To) {
				continue
			}
			for i := range tr.PerSecond {
				at := sec.Add(time.Duration(i) * time.Second / time.Duration(tr.PerSecond))
				key := tr.Key
				if key == "" {
					key = fmt.Sprintf("USER#%d", rng.IntN(tr.Keys))
				}
				m := map[string]any{"ts": at.Format(time.RFC3339Nano), "table": tr.Table, "pk": key, "op": tr.Op, "units": max(tr.Units, 1)}
				if tr.Index != "" {
					m["index"] = tr.Index
				}
				if tr.ThrottleReason != "" {
					m["throttle_reason"] = tr.ThrottleReason
				}
				b, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, line{at, string(b)})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b line) int { return a.at.Compare(b.at) })
	texts := make([]string, len(out))
	for i, l := range out {
		texts[i] = l.text
	}
	return texts
}

// runIncidents analyzes lines (as a file) with workers and returns the
// report.
func runIncidents(t *testing.T, lines []string, workers int, replayAll bool) report.Report {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	err := Run(context.Background(), Config{Files: []string{path}, Pipeline: defaultPipeline(), Format: "json", Workers: workers, MinPart: 64 << 10,
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errs, replayAll: replayAll})
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, errs.String())
	}
	var rep report.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// raceScenario is the scenario TestIncidents runs under the race
// detector: two incidents, two tables.
const raceScenario = "two-spans"

// TestIncidents analyzes each testdata/incidents scenario, in time order
// on one worker, then shuffled on four: the incidents of each table entry
// are those the scenario wants, and the same both ways.
func TestIncidents(t *testing.T) {
	files, err := filepath.Glob("testdata/incidents/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		if raceEnabled && name != raceScenario {
			// Under the race detector one scenario exercises the
			// replay's goroutines; `make test` runs them all without
			// it (Makefile).
			continue
		}
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var sc incidentScenario
			if err := json.Unmarshal(b, &sc); err != nil {
				t.Fatal(err)
			}
			lines := sc.lines(t)
			ordered := incidentsByTable(runIncidents(t, lines, 1, false))
			checkIncidents(t, ordered, sc.Want)
			rng := rand.New(rand.NewPCG(sc.Seed, 7))
			rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
			shuffled := incidentsByTable(runIncidents(t, lines, 4, false))
			a, _ := json.Marshal(ordered)
			b2, _ := json.Marshal(shuffled)
			if !bytes.Equal(a, b2) {
				t.Errorf("shuffled on 4 workers:\n%s\nin order on 1:\n%s", b2, a)
			}
			// The screen passes over only tables the replay finds
			// nothing in.
			all, _ := json.Marshal(incidentsByTable(runIncidents(t, lines, 2, true)))
			if !bytes.Equal(a, all) {
				t.Errorf("every table replayed:\n%s\nscreened:\n%s", all, a)
			}
		})
	}
}

func incidentsByTable(rep report.Report) map[string][]report.Incident {
	out := map[string][]report.Incident{}
	for _, tr := range rep.Tables {
		for _, inc := range tr.Incidents {
			if inc.Table != tr.Table || inc.Index != tr.Index {
				panic(fmt.Sprintf("incident of %s/%s under %s/%s", inc.Table, inc.Index, tr.Table, tr.Index))
			}
		}
		out[tr.Table+"/"+tr.Index] = tr.Incidents
	}
	return out
}

// checkIncidents holds got, the incidents of every table entry, to want.
func checkIncidents(t *testing.T, got map[string][]report.Incident, want []wantIncident) {
	t.Helper()
	n := 0
	for _, incs := range got {
		n += len(incs)
	}
	if n != len(want) {
		b, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("%d incidents, want %d:\n%s", n, len(want), b)
	}
	seen := map[string]int{}
	for _, w := range want {
		entry := w.Table + "/" + w.Index
		i := seen[entry]
		seen[entry]++
		if i >= len(got[entry]) {
			t.Errorf("%s: no incident %d, want %+v", entry, i, w)
			continue
		}
		g := got[entry][i]
		if g.Cause != w.Cause || g.Class != w.Class || g.Severity != w.Severity || !slices.Equal(g.Keys, w.Keys) {
			t.Errorf("%s incident %d: %s %s %s %q, want %s %s %s %q", entry, i, g.Cause, g.Class, g.Severity, g.Keys, w.Cause, w.Class, w.Severity, w.Keys)
		}
		if d := g.Start.Sub(w.Start); d < 0 || d > startSlack {
			t.Errorf("%s incident %d: starts %v after its traffic, want within %v", entry, i, d, startSlack)
		}
		switch {
		case w.End == nil && g.End != nil:
			t.Errorf("%s incident %d: ends at %v, want open", entry, i, g.End)
		case w.End != nil && g.End == nil:
			t.Errorf("%s incident %d: open, want ended after %v", entry, i, w.End)
		case w.End != nil:
			if d := g.End.Sub(*w.End); d < 0 || d > endSlack {
				t.Errorf("%s incident %d: ends %v after its traffic, want within %v", entry, i, d, endSlack)
			}
		}
		if g.Peak != w.Peak {
			t.Errorf("%s incident %d: peak %v, want %v", entry, i, g.Peak, w.Peak)
		}
		if g.ID == "" || g.Summary == "" {
			t.Errorf("%s incident %d: id %q, summary %q", entry, i, g.ID, g.Summary)
		}
	}
}

// TestIncidentScreen: a busy table of many keys is passed over (no
// replay); one with a key above the clear threshold, a throttled call or a
// key that reads as a time is not.
func TestIncidentScreen(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	uniform := func(extra func(sec time.Time) []traffic.Event) *incidentLog {
		l := newIncidentLog(traffic.SinkFunc(func(context.Context, []traffic.Event) error { return nil }), nil)
		rng := rand.New(rand.NewPCG(1, 2))
		for s := range 300 {
			sec := t0.Add(time.Duration(s) * time.Second)
			var batch []traffic.Event
			for range 150 {
				batch = append(batch, traffic.Event{Table: "orders", PK: fmt.Sprintf("USER#%d", rng.IntN(1_000_000)), Class: traffic.Write, Units: 1, Time: sec})
			}
			batch = append(batch, extra(sec)...)
			if err := l.Put(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
		}
		return l
	}
	for _, tc := range []struct {
		name  string
		extra func(sec time.Time) []traffic.Event
		quiet bool
	}{
		{"uniform", func(time.Time) []traffic.Event { return nil }, true},
		{"a key at 9.6%", func(sec time.Time) []traffic.Event {
			return slices.Repeat([]traffic.Event{{Table: "orders", PK: "USER#hot", Class: traffic.Write, Units: 1, Time: sec}}, 16)
		}, false},
		{"a key at 5%", func(sec time.Time) []traffic.Event {
			return slices.Repeat([]traffic.Event{{Table: "orders", PK: "USER#warm", Class: traffic.Write, Units: 1, Time: sec}}, 8)
		}, true},
		// Each second's busiest key carries an eighth of the index's
		// units, but no key more than a few of a window's 480 calls.
		{"a light index of many keys", func(sec time.Time) []traffic.Event {
			return lightIndex(sec, 8, nil)
		}, true},
		{"a light index's key at 11% of its window", func(sec time.Time) []traffic.Event {
			return lightIndex(sec, 8, &traffic.Event{Table: "orders", Index: "GSI1", PK: "STATUS#late", Class: traffic.Write, Units: 1, Time: sec})
		}, false},
		{"a throttled call", func(sec time.Time) []traffic.Event {
			if sec.Second() != 7 {
				return nil
			}
			return []traffic.Event{{Table: "orders", PK: "USER#1", Class: traffic.Write, Units: 1, Time: sec, Throttled: true}}
		}, false},
		// The replay judges the last second once: a key hot in it alone
		// is never flagged (a hold of a second needs two evaluations).
		{"a key hot in the last second only", func(sec time.Time) []traffic.Event {
			if !sec.Equal(t0.Add(299 * time.Second)) {
				return nil
			}
			return slices.Repeat([]traffic.Event{{Table: "orders", PK: "USER#last", Class: traffic.Write, Units: 1, Time: sec}}, 30)
		}, true},
		{"a key like a date", func(sec time.Time) []traffic.Event {
			return []traffic.Event{{Table: "orders", PK: "2026-11-22", Class: traffic.Write, Units: 1, Time: sec}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := uniform(tc.extra)
			plan := l.plan()
			if len(plan.groups) != 1 {
				t.Fatalf("%d tables, want 1", len(plan.groups))
			}
			if err := l.load(plan, plan.groups); err != nil {
				t.Fatal(err)
			}
			g := plan.groups[0]
			l.sortGroup(g)
			if got := l.quiet(g, defaultPipeline(), 1); got != tc.quiet {
				t.Errorf("quiet = %v, want %v", got, tc.quiet)
			}
			if !tc.quiet {
				return
			}
			// What the screen passes over, the replay finds nothing in.
			incs, err := l.replay(context.Background(), g, defaultPipeline())
			if err != nil {
				t.Fatal(err)
			}
			if len(incs) > 0 {
				t.Errorf("the screen passed over a table with incidents: %v", incs)
			}
		})
	}
}

// lightIndex is one second of n writes to index GSI1 of orders, on keys
// drawn from a million (by the second: the same every run), and hot once
// when not nil.
func lightIndex(sec time.Time, n int, hot *traffic.Event) []traffic.Event {
	rng := rand.New(rand.NewPCG(uint64(sec.Unix()), 3))
	var out []traffic.Event
	for range n {
		out = append(out, traffic.Event{Table: "orders", Index: "GSI1", PK: fmt.Sprintf("STATUS#%d", rng.IntN(1_000_000)), Class: traffic.Write, Units: 1, Time: sec})
	}
	if hot != nil {
		out = append(out, *hot)
	}
	return out
}

// TestNoIncidents: with NoIncidents (--no-incidents) a table entry that
// has incidents by default has none, and the rest of the report is the
// same byte for byte as the default's on as many workers (one, two).
func TestNoIncidents(t *testing.T) {
	if raceEnabled {
		t.Skip("run by make test without the race detector (Makefile): no goroutine of its own beyond TestIncidents'")
	}
	b, err := os.ReadFile("testdata/incidents/hot-key-midday.json")
	if err != nil {
		t.Fatal(err)
	}
	var sc incidentScenario
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(sc.lines(t), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(workers int, none bool) report.Report {
		var out, errs bytes.Buffer
		err := Run(context.Background(), Config{Files: []string{path}, Pipeline: defaultPipeline(), Format: "json", Workers: workers, MinPart: 64 << 10,
			NoIncidents: none, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errs})
		if err != nil {
			t.Fatalf("analyze: %v\n%s", err, errs.String())
		}
		var rep report.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	for _, workers := range []int{1, 2} {
		// The light keys that fill a list out may differ between 1 and
		// 2 workers (TestAnalyzeManyKeysAnyOrder): each is compared
		// with the default on as many workers.
		with := run(workers, false)
		found := 0
		for i := range with.Tables {
			found += len(with.Tables[i].Incidents)
			with.Tables[i].Incidents = nil
		}
		if found == 0 {
			t.Fatalf("%d workers: the scenario has no incident by default: nothing to skip", workers)
		}
		want, _ := json.Marshal(with)
		without := run(workers, true)
		for _, tr := range without.Tables {
			if len(tr.Incidents) > 0 {
				t.Errorf("%d workers: %s/%s has %d incidents with NoIncidents", workers, tr.Table, tr.Index, len(tr.Incidents))
			}
		}
		if got, _ := json.Marshal(without); !bytes.Equal(got, want) {
			t.Errorf("%d workers: the report without incidents differs beyond them:\n%s\nwant:\n%s", workers, got, want)
		}
	}
}
