package judge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// liveStore is a live store on a virtual clock: a window of 20 s in four
// slots of 5 s.
func liveStore(t *testing.T, now *time.Time) *sketch.Store {
	t.Helper()
	store, err := sketch.NewStore(sketch.Config{Window: 20 * time.Second, SubWindows: 4, Tracked: 50}, func() time.Time { return *now })
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func put(t *testing.T, store *sketch.Store, evs []traffic.Event) {
	t.Helper()
	if err := store.Put(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

// writes returns n writes to table at now, a share hot of them to HOT and
// the others spread over 200 keys.
func writes(rnd *rand.Rand, table string, n int, hot float64, now time.Time) []traffic.Event {
	evs := make([]traffic.Event, 0, n)
	for range n {
		pk := fmt.Sprintf("KEY#%d", rnd.IntN(200))
		if rnd.Float64() < hot {
			pk = "HOT"
		}
		evs = append(evs, traffic.Event{Table: table, PK: pk, Class: traffic.Write, Units: 1, Time: now})
	}
	return evs
}

// TestIdleTableKept holds the incremental rule: a table that got no event
// and whose window did not move is not copied out or evaluated again (its
// revision, which changes with each evaluation, stays), while a busy
// table is evaluated once per second that closes; the idle table is
// evaluated again when its traffic leaves the window.
func TestIdleTableKept(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	store := liveStore(t, &now)
	rnd := rand.New(rand.NewPCG(1, 2))
	tr := detect.NewTracker(detect.DefaultSettings())
	e := Alone(store, tr)
	put(t, store, writes(rnd, "idle", 500, 0.3, now))
	revs := func(j Judgement) (busy, idle uint64, idleKept bool) {
		for i, ts := range j.Snapshot.Tables {
			switch ts.Table {
			case "busy":
				busy = j.Revisions[i]
			case "idle":
				idle, idleKept = j.Revisions[i], ts.Kept
			}
		}
		return busy, idle, idleKept
	}
	var lastBusy, lastIdle uint64
	idleEvaluated := 0
	for s := 1; s <= 40; s++ {
		put(t, store, writes(rnd, "busy", 300, 0.2, now))
		// Ten looks a second, as the daemon's tick: only those after a
		// second closed find something.
		for tenth := 1; tenth <= 10; tenth++ {
			now = now.Add(100 * time.Millisecond)
			closed := tenth == 10 // the second of the events closes
			if moved := e.Moved(); moved != closed && s > 1 {
				t.Errorf("second %d.%d: Moved %v", s, tenth, moved)
			}
			if !closed {
				continue
			}
			j := e.Evaluate()
			busy, idle, kept := revs(j)
			if busy == lastBusy {
				t.Errorf("second %d: the busy table not evaluated as its second closed", s)
			}
			if idle != lastIdle {
				idleEvaluated++
				if kept {
					t.Errorf("second %d: a kept entry with a new revision", s)
				}
				t.Logf("second %d: idle table evaluated", s)
			}
			lastBusy, lastIdle = busy, idle
		}
		switch {
		case s == 10 && idleEvaluated > 5:
			// Its first second, and the next while its events were in
			// the recent seconds (3) or its hold was under way.
			t.Fatalf("the idle table was evaluated %d times in its first 10 s, want at most 5", idleEvaluated)
		case s == 10:
			idleEvaluated = 0
		case s == 19 && idleEvaluated != 0:
			t.Fatalf("the idle table was evaluated %d times from second 11 to 19, want none", idleEvaluated)
		}
	}
	// Its traffic left the window at second 20 or 21 (its slot): that
	// moved its window once; it holds nothing since.
	if idleEvaluated != 1 {
		t.Errorf("the idle table was evaluated %d times from second 20 to 40, want once, when its traffic left the window", idleEvaluated)
	}
}

// verdict is what a table's report says, without the figures that depend
// on how long its window is (units per second over the window), which an
// idle table keeps from its last picture.
type verdict struct {
	Events, Distinct uint64
	Units            [2]float64
	Top              []string
	Diagnoses        []string
	Findings         []string
	Quiet            string
}

func verdictOf(t report.TableReport) verdict {
	v := verdict{Events: t.Events, Distinct: t.DistinctPartitionKeys, Units: [2]float64{t.ReadUnits, t.WriteUnits}}
	for _, k := range t.TopKeys {
		v.Top = append(v.Top, fmt.Sprintf("%s %s %.2f %.4f %.2f", k.Class, k.Key, k.Units, k.Share, k.PeakUnitsPerSecond))
	}
	for _, d := range t.Diagnoses {
		v.Diagnoses = append(v.Diagnoses, fmt.Sprintf("%s %s %s %s %s %.4f %.2f", d.Cause, d.Class, d.Key(), d.Severity, d.Fix.Kind, d.Share, d.PeakUnitsPerSecond))
	}
	for _, f := range t.Findings {
		v.Findings = append(v.Findings, fmt.Sprintf("%s %s %s %s %.4f", f.Kind, f.Class, f.Key, f.Severity, f.Share))
	}
	if t.Quiet != nil {
		v.Quiet = fmt.Sprintf("%s %s %.4f", t.Quiet.Reason, t.Quiet.Key, t.Quiet.Share)
	}
	return v
}

func changesOf(cs []report.Change) []string {
	var out []string
	for _, c := range cs {
		what := "raised"
		switch {
		case c.Cleared:
			what = "cleared"
		case c.Was != nil:
			what = "changed from " + string(c.Was.Severity)
		}
		out = append(out, fmt.Sprintf("%s %s %s %s %s", what, c.Table, c.Diagnosis.Cause, c.Diagnosis.Key(), c.Diagnosis.Severity))
	}
	return out
}

// TestIncrementalMatchesFull is the property behind the incremental tick:
// over random traffic (tables that come, go idle for long stretches and
// come back, keys that turn hot and cool, bursts near the partition
// ceiling), the daemon's evaluator, which copies out and evaluates only
// the tables that changed, says at every look what evaluating every table
// every time says: the same top keys, shares, peaks, diagnoses, findings
// and quiet reasons, raised and cleared at the same moments, with the
// default hold and one longer than the recent seconds. The figures
// over the window's length (units per second) are left out: an idle
// table keeps those of its last picture. The traffic floor's mean rate is
// off (min_units_per_second 0) for the same reason; its event count holds.
func TestIncrementalMatchesFull(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			store := liveStore(t, &now)
			s := detect.DefaultSettings()
			s.MinUnitsPerSecond = 0
			s.MinEvents = 50
			if seed%2 == 1 {
				s.Hold = 5 * time.Second // longer than the recent seconds
			}
			inc := detect.NewTracker(s)
			full := detect.NewTracker(s)
			e := Alone(store, inc)
			rnd := rand.New(rand.NewPCG(seed, 99))
			tables := []string{"a", "b", "c", "d", "e"}
			// Each table's state: how busy, how hot its hot key, until when.
			type mood struct {
				rate  int
				hot   float64
				until int
				units float64
			}
			moods := make([]mood, len(tables))
			kept, evaluated, raised := 0, 0, 0
			last := int64(0)
			for tenth := range 1800 { // three minutes, ten looks a second
				sec := tenth / 10
				for i := range tables {
					m := &moods[i]
					if sec >= m.until {
						m.until = sec + 2 + rnd.IntN(25)
						m.rate, m.hot, m.units = 0, 0, 1
						switch r := rnd.Float64(); {
						case r < 0.4: // idle
						case r < 0.7:
							m.rate, m.hot = 20+rnd.IntN(40), 0.05+0.2*rnd.Float64()
						case r < 0.9:
							m.rate, m.hot = 10+rnd.IntN(20), 0.08+0.04*rnd.Float64() // around the threshold
						default:
							m.rate, m.hot, m.units = 20, 0.5, 40+30*rnd.Float64() // near the ceiling
						}
					}
					if m.rate > 0 {
						evs := writes(rnd, tables[i], m.rate, m.hot, now.Add(-time.Duration(rnd.IntN(900))*time.Millisecond))
						for j := range evs {
							if evs[j].PK == "HOT" {
								evs[j].Units = m.units
							}
						}
						put(t, store, evs)
					}
				}
				// The daemon's tick: a look every tenth of a second, an
				// evaluation in each second of the clock and whenever the
				// window moved.
				now = now.Add(100 * time.Millisecond)
				if now.Unix() == last && !e.Moved() {
					continue
				}
				last = now.Unix()
				j := e.Evaluate()
				rep, changes := full.Evaluate(store.Snapshot())
				if len(j.Report.Tables) != len(rep.Tables) {
					t.Fatalf("%.1f s: %d tables incrementally, %d in full", float64(tenth)/10, len(j.Report.Tables), len(rep.Tables))
				}
				for i := range rep.Tables {
					if j.Snapshot.Tables[i].Kept {
						kept++
					} else {
						evaluated++
					}
					a, b := verdictOf(j.Report.Tables[i]), verdictOf(rep.Tables[i])
					if fmt.Sprint(a) != fmt.Sprint(b) {
						t.Fatalf("%.1f s, table %s (kept %v):\nincremental %+v\nfull        %+v", float64(tenth)/10, rep.Tables[i].Table, j.Snapshot.Tables[i].Kept, a, b)
					}
				}
				raised += len(changes)
				if a, b := changesOf(j.Changes), changesOf(changes); !slices.Equal(a, b) {
					t.Fatalf("%.1f s: changes incrementally %q, in full %q", float64(tenth)/10, a, b)
				}
			}
			t.Logf("%d table evaluations, %d kept, %d changes announced", evaluated, kept, raised)
			if kept == 0 || evaluated == 0 || raised == 0 {
				t.Errorf("%d evaluated, %d kept, %d changes: the traffic did not exercise them all", evaluated, kept, raised)
			}
		})
	}
}
