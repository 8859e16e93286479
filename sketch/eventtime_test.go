package sketch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// fixedMarks is a Watermarks of fixed times, by source.
type fixedMarks map[string]time.Time

func (m fixedMarks) Watermark(source string) (time.Time, bool) {
	t, ok := m[source]
	return t, ok
}

// backlog returns seconds×perSecond writes to table, one second after
// another from start, with key HOT at share of them and the rest spread
// over 1000 keys, each of 1 WCU.
func backlog(table string, start time.Time, seconds, perSecond int, share float64, source string) []traffic.Event {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []traffic.Event
	for s := range seconds {
		at := start.Add(time.Duration(s) * time.Second)
		for i := range perSecond {
			key := fmt.Sprintf("K%03d", rng.IntN(1000))
			if float64(i) < share*float64(perSecond) {
				key = "HOT"
			}
			out = append(out, traffic.Event{Table: table, PK: key, Class: traffic.Write, Units: 1,
				Time: at.Add(time.Duration(i) * time.Second / time.Duration(perSecond)), Source: source})
		}
	}
	return out
}

// TestEventTimeBacklog checks that a backlog read in one go (a restart
// with trim_horizon) is judged at the rates it happened: a key at 30 % of
// 200 writes/s peaks at 60 WCU in a second, not at the backlog's size, and
// the table's busiest second is 200 WCU.
func TestEventTimeBacklog(t *testing.T) {
	now := t0.Add(time.Hour)
	s := newTestStore(t, DefaultConfig(), func() time.Time { return now })
	s.SetWatermarks(fixedMarks{"streams": now})
	events := backlog("orders", now.Add(-61*time.Second), 60, 200, 0.3, "streams")
	for i := 0; i < len(events); i += 1000 {
		put(t, s, events[i:min(i+1000, len(events))]...)
	}
	ts := findTable(t, s.Snapshot(), "orders", "")
	w := ts.Classes[traffic.Write]
	if w.PeakSecondUnits != 200 {
		t.Errorf("table's busiest second %v WCU, want 200", w.PeakSecondUnits)
	}
	if len(w.Top) == 0 || w.Top[0].Key != "HOT" || w.Top[0].PeakUnitsPerSecond != 60 {
		t.Fatalf("top %+v, want HOT peaking at 60 WCU in a second", w.Top)
	}
	if d := ts.End.Sub(ts.Start); d < 55*time.Second || d > 61*time.Second {
		t.Errorf("window %v..%v (%v): a backlog read at start fills the window", ts.Start, ts.End, d)
	}
	if got := s.LateEvents()["streams"]; got != 0 {
		t.Errorf("%d late events, want none: the backlog is inside the window", got)
	}
}

// TestEventTimeLate checks that events older than their table's window
// are counted as late, by source, and in no window.
func TestEventTimeLate(t *testing.T) {
	now := t0.Add(time.Hour)
	s := newTestStore(t, DefaultConfig(), func() time.Time { return now })
	s.SetWatermarks(fixedMarks{"a": now, "b": now})
	put(t, s, traffic.Event{Table: "t", PK: "NEW", Class: traffic.Read, Units: 2, Time: now.Add(-time.Second), Source: "a"})
	put(t, s,
		traffic.Event{Table: "t", PK: "OLD", Class: traffic.Read, Units: 5, Time: now.Add(-10 * time.Minute), Source: "b"},
		traffic.Event{Table: "t", PK: "OLD", Class: traffic.Read, Units: 5, Time: now.Add(-2 * time.Minute), Source: "b"},
		traffic.Event{Table: "t", PK: "NEW", Class: traffic.Read, Units: 3, Time: now.Add(-30 * time.Second), Source: "a"},
	)
	r := findTable(t, s.Snapshot(), "t", "").Classes[traffic.Read]
	if r.Units != 5 || r.Events != 2 || len(r.Top) != 1 || r.Top[0].Key != "NEW" {
		t.Fatalf("read class %+v, want NEW's 5 units only", r)
	}
	if late := s.LateEvents(); late["b"] != 2 || late["a"] != 0 {
		t.Fatalf("late events %v, want b:2", late)
	}
}

// TestEventTimeShards checks that a table read from two shards at their
// own pace, one 30 s behind the other, adds up second by second: the
// class's busiest second is the sum of both shards' seconds, and a key's
// (each key in one shard) its own.
func TestEventTimeShards(t *testing.T) {
	now := t0.Add(time.Hour)
	s := newTestStore(t, DefaultConfig(), func() time.Time { return now })
	s.SetWatermarks(fixedMarks{"kinesis": now})
	start := now.Add(-50 * time.Second)
	mk := func(key string, sec int, units float64) traffic.Event {
		return traffic.Event{Table: "t", PK: key, Class: traffic.Write, Units: units,
			Time: start.Add(time.Duration(sec) * time.Second), Source: "kinesis"}
	}
	// Shard A runs 30 s ahead of shard B; both write 10 WCU a second,
	// with a burst of 100 in second 20 on each.
	for step := range 45 {
		var batch []traffic.Event
		if step < 45 {
			u := 10.0
			if step == 20 {
				u = 100
			}
			batch = append(batch, mk("A", step, u))
		}
		if b := step - 30; b >= 0 {
			u := 10.0
			if b == 20 {
				u = 100
			}
			batch = append(batch, mk("B", b, u))
		}
		put(t, s, batch...)
	}
	for b := 15; b < 45; b++ {
		u := 10.0
		if b == 20 {
			u = 100
		}
		put(t, s, mk("B", b, u))
	}
	w := findTable(t, s.Snapshot(), "t", "").Classes[traffic.Write]
	if w.PeakSecondUnits != 200 {
		t.Errorf("busiest second %v, want 200: both shards' bursts fell in second 20", w.PeakSecondUnits)
	}
	for _, k := range w.Top {
		if k.PeakUnitsPerSecond != 100 {
			t.Errorf("key %s peaks at %v, want 100", k.Key, k.PeakUnitsPerSecond)
		}
	}
}

// TestEventTimeWatermark checks that a table's judged seconds stop at the
// watermark of its sources: the last complete second is the one before
// the watermark's, even when one source has read further; and that an
// idle table's window slides with the watermark until its traffic is gone.
func TestEventTimeWatermark(t *testing.T) {
	now := t0.Add(time.Hour)
	wm := fixedMarks{"fast": now, "slow": now.Add(-20 * time.Second)}
	s := newTestStore(t, DefaultConfig(), func() time.Time { return now })
	s.SetWatermarks(wm)
	put(t, s,
		traffic.Event{Table: "t", PK: "F", Class: traffic.Read, Units: 7, Time: now.Add(-2 * time.Second), Source: "fast"},
		traffic.Event{Table: "t", PK: "S", Class: traffic.Read, Units: 3, Time: now.Add(-22 * time.Second), Source: "slow"},
	)
	ts := findTable(t, s.Snapshot(), "t", "")
	if want := time.Unix(wm["slow"].Unix()-1, 0); !ts.LastSecond.Equal(want) {
		t.Errorf("last second %v, want %v: the slow source has not passed later seconds", ts.LastSecond, want)
	}
	if ts.Classes[traffic.Read].LastSecondUnits != 0 || ts.Classes[traffic.Read].Units != 10 {
		t.Errorf("read class %+v", ts.Classes[traffic.Read])
	}
	// Both sources move on without traffic: the window slides past it.
	now = now.Add(2 * time.Minute)
	wm["fast"], wm["slow"] = now, now
	ts = findTable(t, s.Snapshot(), "t", "")
	if ts.Events != 0 || ts.Classes[traffic.Read].Top != nil {
		t.Fatalf("after two idle minutes: %+v, want an empty window", ts)
	}
}

// TestEventTimeMerged checks that logs of several hosts, each in time
// order and interleaved as a follower reads them, add up second by second
// for a key they all carry, within the disorder a key tolerates
// (keyLateSeconds).
func TestEventTimeMerged(t *testing.T) {
	now := t0.Add(time.Hour)
	s := newTestStore(t, DefaultConfig(), func() time.Time { return now })
	s.SetWatermarks(fixedMarks{"jsonl": now})
	start := now.Add(-40 * time.Second)
	// Four hosts, host h 2h seconds behind host 0; each logs 25 WCU a
	// second of TENANT, 275 in second 10 (a burst of 1100 in all).
	for step := range 40 {
		var batch []traffic.Event
		for h := range 4 {
			sec := step - 2*h
			if sec < 0 || sec >= 30 {
				continue
			}
			u := 25.0
			if sec == 10 {
				u = 275
			}
			batch = append(batch, traffic.Event{Table: "t", PK: "TENANT", Class: traffic.Write, Units: u,
				Time: start.Add(time.Duration(sec) * time.Second), Source: "jsonl"})
		}
		put(t, s, batch...)
	}
	w := findTable(t, s.Snapshot(), "t", "").Classes[traffic.Write]
	if w.PeakSecondUnits != 1100 || len(w.Top) != 1 || w.Top[0].PeakUnitsPerSecond != 1100 {
		t.Fatalf("busiest second: class %v, key %+v; want 1100 for both", w.PeakSecondUnits, w.Top)
	}
	if math.Abs(w.Units-(4*29*25+4*275)) > 0 {
		t.Errorf("units %v", w.Units)
	}
}

// TestEventTimeReplicas checks that replicas' summaries add up by event
// time: a replica that has just started (its window begins later) does
// not shorten the table's window, and one reading behind adds its seconds
// to the slots they happened in.
func TestEventTimeReplicas(t *testing.T) {
	now := t0.Add(time.Hour)
	cfg := DefaultConfig()
	a := newTestStore(t, cfg, func() time.Time { return now })
	a.SetWatermarks(fixedMarks{"s": now})
	startB := now.Add(-10 * time.Second)
	b := newTestStore(t, cfg, func() time.Time { return startB })
	b.SetWatermarks(fixedMarks{"s": startB})
	// A has read 50 s of its shard, 10 WCU a second; B's shard has 100
	// WCU in the second 30 s ago, which B reads 20 s late (its watermark
	// is 20 s behind A's).
	for sec := 50; sec > 0; sec-- {
		put(t, a, traffic.Event{Table: "t", PK: "A", Class: traffic.Write, Units: 10, Time: now.Add(-time.Duration(sec) * time.Second), Source: "s"})
	}
	put(t, a, traffic.Event{Table: "t", PK: "A", Class: traffic.Write, Units: 50, Time: now.Add(-30 * time.Second), Source: "s"})
	put(t, b, traffic.Event{Table: "t", PK: "B", Class: traffic.Write, Units: 100, Time: now.Add(-30 * time.Second), Source: "s"})
	sa, sb := a.Summary(true), b.Summary(true)
	for _, s := range []*Summary{sa, sb} {
		enc, _, _, err := EncodeSummary(s, 10, 64<<10)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := DecodeSummary(enc)
		if err != nil {
			t.Fatal(err)
		}
		*s = *dec
	}
	c := Combine(Replica{"b", sb}, []Replica{{"a", sa}}, 10)
	ts := findTable(t, c.Snapshot, "t", "")
	if d := ts.End.Sub(ts.Start); d < 50*time.Second {
		t.Errorf("combined window %v..%v (%v): the replica that just started shortened it", ts.Start, ts.End, d)
	}
	if w := ts.Classes[traffic.Write]; w.PeakSecondUnits != 160 {
		t.Errorf("combined busiest second %v, want 160 (A's 60 and B's 100 in the same second)", w.PeakSecondUnits)
	}
}

// TestEventTimeFarAhead checks that a time far past the clock (a year
// 9999 that got through) is dropped and does not move the window: the
// traffic in it stays.
func TestEventTimeFarAhead(t *testing.T) {
	now := t0.Add(time.Hour)
	s := newTestStore(t, DefaultConfig(), func() time.Time { return now })
	put(t, s, traffic.Event{Table: "t", PK: "K", Class: traffic.Read, Units: 4, Time: now.Add(-time.Second), Source: "a"})
	put(t, s, traffic.Event{Table: "t", PK: "J", Class: traffic.Read, Units: 4, Time: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), Source: "a"})
	r := findTable(t, s.Snapshot(), "t", "").Classes[traffic.Read]
	if r.Units != 4 || len(r.Top) != 1 || r.Top[0].Key != "K" {
		t.Fatalf("read class %+v, want K's 4 units", r)
	}
	if s.Dropped() != 1 {
		t.Errorf("%d dropped, want the one far ahead", s.Dropped())
	}
}

// TestEventTimeShuffledBatch checks that a batch whose events come in no
// order (a shuffled log posted at once) is counted second by second: a
// key's burst keeps its busiest second, though its ring takes only a few
// seconds of disorder between batches.
func TestEventTimeShuffledBatch(t *testing.T) {
	now := t0.Add(time.Hour)
	s := newTestStore(t, DefaultConfig(), func() time.Time { return now })
	start := now.Add(-50 * time.Second)
	var batch []traffic.Event
	for sec := range 45 {
		u := 20.0
		if sec%30 < 5 {
			u = 1100
		}
		for range 10 {
			batch = append(batch, traffic.Event{Table: "t", PK: "TENANT", Class: traffic.Write, Units: u / 10,
				Time: start.Add(time.Duration(sec) * time.Second), Source: "http"})
		}
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
	put(t, s, batch...)
	w := findTable(t, s.Snapshot(), "t", "").Classes[traffic.Write]
	if len(w.Top) != 1 || math.Abs(w.Top[0].PeakUnitsPerSecond-1100) > 1e-6 || math.Abs(w.PeakSecondUnits-1100) > 1e-6 {
		t.Fatalf("busiest second: key %+v, class %v; want 1100", w.Top, w.PeakSecondUnits)
	}
}
