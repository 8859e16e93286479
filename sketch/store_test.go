package sketch

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/hotkeyd/hotkeyd/traffic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func newTestStore(t *testing.T, cfg Config, now func() time.Time) *Store {
	t.Helper()
	s, err := NewStore(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// put adds events. In a live Store, events made by ev (at t0) happen when
// they are put: at the Store's clock, as a source that reads in real time
// sees them; tests of event time give their events other times.
func put(t *testing.T, s *Store, evs ...traffic.Event) {
	t.Helper()
	if s.slot > 0 {
		now := s.now()
		for i := range evs {
			if evs[i].Time.Equal(t0) {
				evs[i].Time = now
			}
		}
	}
	if err := s.Put(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

func ev(table, pk string, c traffic.Class, units float64) traffic.Event {
	return traffic.Event{Table: table, PK: pk, Class: c, Units: units, Time: t0, Source: "test"}
}

func findTable(t *testing.T, snap Snapshot, table, index string) TableSnapshot {
	t.Helper()
	for _, ts := range snap.Tables {
		if ts.Table == table && ts.Index == index {
			return ts
		}
	}
	t.Fatalf("table %q index %q not in snapshot", table, index)
	return TableSnapshot{}
}

func keysOf(top []KeyStat) []string {
	out := make([]string, len(top))
	for i, k := range top {
		out[i] = k.Key
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"negative window", Config{Window: -time.Second}, "window: must not be negative, got -1s"},
		{"width not power of two", Config{Width: 1000}, "width 1000: must be a power of two from 16 to 2^24"},
		{"depth", Config{Depth: 9}, "depth 9: must be 1 to 8"},
		{"candidates below tracked", Config{Tracked: 10, Candidates: 5}, "candidates 5: must be tracked (10) to 32768"},
		{"sub-windows", Config{Window: time.Minute, SubWindows: 65}, "sub-windows 65: must be 1 to 64"},
		{"short window", Config{Window: time.Millisecond}, "window: must be at least 12ms (12 slots of 1ms), got 1ms"},
		{"precision", Config{HLLPrecision: 3}, "hll precision 3: must be 4 to 18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
			if _, err := NewStore(tc.cfg, nil); err == nil {
				t.Fatal("NewStore accepted an invalid config")
			}
		})
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
}

// TestSemantics checks what detect/ and export/ rely on, in analyze mode.
func TestSemantics(t *testing.T) {
	s := newTestStore(t, Config{}, nil) // zero Window: analyze mode
	later := t0.Add(10 * time.Second)
	batch := []traffic.Event{
		ev("orders", "USER#1", traffic.Write, 2),
		ev("orders", "USER#1", traffic.Write, 2),
		{Table: "orders", PK: "USER#2", Class: traffic.Write, Units: 1, Time: later},
		ev("orders", "USER#1", traffic.Read, 0.5),
		ev("orders", "", traffic.Read, 10), // a Scan: totals only
		{Table: "orders", Index: "status-index", PK: "OPEN", Class: traffic.Read, Units: 1, Time: later},
		{Table: "orders", PK: "USER#9", Class: traffic.Write, Units: 1, Time: t0, Throttled: true},
		{Table: "orders", PK: "USER#9", Class: traffic.Write, Units: 1, Time: t0, Throttled: true},
		{Table: "orders", PK: "USER#8", Class: traffic.Read, Units: 1, Time: t0, Throttled: true},
		{Table: "orders", PK: "USER#3", Class: 7, Units: 1, Time: t0}, // unknown class
	}
	put(t, s, batch...)
	snap := s.Snapshot()
	if len(snap.Tables) != 2 {
		t.Fatalf("tables = %d, want 2 (base table and index)", len(snap.Tables))
	}
	if snap.Tables[0].Index != "" || snap.Tables[1].Index != "status-index" {
		t.Fatalf("order = %q, %q; want the base table first", snap.Tables[0].Index, snap.Tables[1].Index)
	}
	if !snap.Start.Equal(t0) || !snap.End.Equal(later) {
		t.Fatalf("bounds = %v..%v, want %v..%v", snap.Start, snap.End, t0, later)
	}
	o := findTable(t, snap, "orders", "")
	if o.Events != 5 {
		t.Errorf("events = %d, want 5 (throttled and unknown class excluded)", o.Events)
	}
	w, r := o.Classes[traffic.Write], o.Classes[traffic.Read]
	if w.Events != 3 || w.Units != 5 || r.Events != 2 || r.Units != 10.5 {
		t.Errorf("totals: write %d/%v read %d/%v, want 3/5 and 2/10.5", w.Events, w.Units, r.Events, r.Units)
	}
	if got := keysOf(w.Top); fmt.Sprint(got) != "[USER#1 USER#2]" {
		t.Errorf("write top = %v", got)
	}
	if w.Top[0].Units != 4 || w.Top[0].Events != 2 || w.Top[0].Error != 0 || math.Abs(w.Top[0].Units/w.Units-0.8) > 1e-9 {
		t.Errorf("USER#1 = %+v, want 4 units, 2 events, share 0.8, exact", w.Top[0])
	}
	if got := keysOf(r.Top); fmt.Sprint(got) != "[USER#1]" {
		t.Errorf("read top = %v (the empty key must not be a key)", got)
	}
	if o.DistinctKeys != 2 {
		t.Errorf("distinct = %d, want 2", o.DistinctKeys)
	}
	if o.ThrottledEvents != 3 || fmt.Sprint(o.Classes[traffic.Write].Throttled.Keys) != "[{USER#9 2 2}]" || fmt.Sprint(o.Classes[traffic.Read].Throttled.Keys) != "[{USER#8 1 1}]" {
		t.Errorf("throttled = %d %+v", o.ThrottledEvents, o.Classes)
	}
	// Whole files: the rate is units over the seconds covered, the first
	// event's and the last's counted: t0 to t0+10s is 11 seconds.
	if got := w.PeakUnitsPerSecond; math.Abs(got-5.0/11) > 1e-9 || o.RateSpan != 11*time.Second {
		t.Errorf("write rate = %v over %s, want 5 units / 11 s", got, o.RateSpan)
	}
	idx := findTable(t, snap, "orders", "status-index")
	if got := idx.Classes[traffic.Read].PeakUnitsPerSecond; got != 1 {
		t.Errorf("index rate = %v, want 1 (zero duration counts as 1 s)", got)
	}
	// The busiest second, by event time.
	if got := w.PeakSecondUnits; got != 4 {
		t.Errorf("write peak second = %v, want 4 (USER#1's two writes at t0)", got)
	}
	if got := w.Top[0].PeakUnitsPerSecond; got != 4 {
		t.Errorf("USER#1 peak = %v, want 4", got)
	}
	if got := w.Top[1].PeakUnitsPerSecond; got != 1 {
		t.Errorf("USER#2 peak = %v, want 1", got)
	}
	if s.Dropped() != 1 {
		t.Errorf("dropped = %d, want 1", s.Dropped())
	}
}

func TestSortKeys(t *testing.T) {
	s := newTestStore(t, Config{}, nil)
	var batch []traffic.Event
	for i := range 40 {
		e := ev("music", "ONE", traffic.Read, 1)
		e.SK = "SONG#1"
		batch = append(batch, e)
		e = ev("music", "MANY", traffic.Read, 1)
		e.SK = fmt.Sprintf("SONG#%d", i%20)
		batch = append(batch, e)
		batch = append(batch, ev("music", "NONE", traffic.Read, 1))
	}
	put(t, s, batch...)
	got := map[string]uint64{}
	for _, k := range findTable(t, s.Snapshot(), "music", "").Classes[traffic.Read].Top {
		got[k.Key] = k.SortKeys
	}
	if got["ONE"] != 1 || got["NONE"] != 0 {
		t.Errorf("sort keys: one item %d, none %d; want 1 and 0", got["ONE"], got["NONE"])
	}
	// 20 sort keys in a 32-bit linear-counting bitmap: many, within ±40 %.
	if got["MANY"] < 12 || got["MANY"] > 28 {
		t.Errorf("sort keys of an item collection of 20 = %d", got["MANY"])
	}
}

func TestShards(t *testing.T) {
	s := newTestStore(t, Config{MaxShards: 3}, nil)
	var batch []traffic.Event
	for i := range 10 {
		for j := 0; j <= i%5; j++ {
			e := ev("orders", "K", traffic.Write, 1)
			e.Shard = fmt.Sprintf("shardId-%d", i%5)
			batch = append(batch, e)
		}
	}
	put(t, s, batch...)
	ts := findTable(t, s.Snapshot(), "orders", "")
	// Shards 0, 1, 2 came first and fill the bound; 3 and 4 are not counted.
	want := "[{shardId-2 6 6} {shardId-1 4 4} {shardId-0 2 2}]" // all in one second: each its busiest
	if fmt.Sprint(ts.Shards) != want {
		t.Fatalf("shards = %v, want %v", ts.Shards, want)
	}
	if ts.Events != uint64(len(batch)) {
		t.Fatalf("events = %d, want %d: uncounted shards still count in totals", ts.Events, len(batch))
	}
}

func TestMaxTables(t *testing.T) {
	s := newTestStore(t, Config{MaxTables: 3}, nil)
	for i := range 10 {
		put(t, s, ev(fmt.Sprintf("t%d", i), "K", traffic.Read, 1), ev(fmt.Sprintf("t%d", i), "K", traffic.Read, 1))
	}
	if n := len(s.Snapshot().Tables); n != 3 {
		t.Fatalf("tables = %d, want 3", n)
	}
	if s.Dropped() != 14 {
		t.Fatalf("dropped = %d, want 14", s.Dropped())
	}
	// Known tables still count.
	put(t, s, ev("t0", "K", traffic.Read, 1))
	if got := findTable(t, s.Snapshot(), "t0", "").Events; got != 3 {
		t.Fatalf("t0 events = %d, want 3", got)
	}
}

func TestPutCancelled(t *testing.T) {
	s := newTestStore(t, Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Put(ctx, []traffic.Event{ev("a", "b", traffic.Read, 1)}); err != context.Canceled {
		t.Fatalf("Put on a done context = %v, want context.Canceled", err)
	}
}

// TestSnapshotImmutable checks that a snapshot does not change as traffic
// goes on.
func TestSnapshotImmutable(t *testing.T) {
	s := newTestStore(t, Config{}, nil)
	put(t, s, ev("a", "K1", traffic.Read, 1))
	snap := s.Snapshot()
	before := fmt.Sprintf("%+v", snap)
	for range 100 {
		put(t, s, ev("a", "K1", traffic.Read, 1), ev("a", "K2", traffic.Read, 3))
	}
	if after := fmt.Sprintf("%+v", snap); after != before {
		t.Fatalf("snapshot changed:\n%s\n%s", before, after)
	}
}

// TestWindowExpiry runs a live window under virtual time: a key hot in one
// window is gone two windows later, and traffic expires one slot at a time.
func TestWindowExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig() // 60 s of 12 × 5 s
		s := newTestStore(t, cfg, time.Now)
		for range 100 {
			put(t, s, ev("orders", "OLD", traffic.Write, 1))
		}
		time.Sleep(cfg.Window)
		for range 10 {
			put(t, s, ev("orders", "NEW", traffic.Write, 1))
		}
		w := findTable(t, s.Snapshot(), "orders", "").Classes[traffic.Write]
		if fmt.Sprint(keysOf(w.Top)) != "[NEW]" || w.Units != 10 {
			t.Fatalf("after one window: top %v units %v, want only NEW's 10", keysOf(w.Top), w.Units)
		}
		time.Sleep(2 * cfg.Window)
		snap := s.Snapshot()
		ts := findTable(t, snap, "orders", "")
		if len(ts.Classes[traffic.Write].Top) != 0 || ts.Events != 0 || ts.DistinctKeys != 0 {
			t.Fatalf("after two idle windows: %+v, want empty", ts)
		}
		if !snap.End.Equal(time.Now()) || snap.End.Sub(snap.Start) > cfg.Window || snap.End.Sub(snap.Start) < cfg.Window-cfg.Window/12 {
			t.Fatalf("window bounds %v..%v at %v", snap.Start, snap.End, time.Now())
		}
	})
}

func TestWindowSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		slot := cfg.Window / time.Duration(cfg.SubWindows)
		s := newTestStore(t, cfg, time.Now)
		// Align to a slot boundary, then one event per slot with units = slot number.
		time.Sleep(slot - time.Duration(time.Now().UnixNano()%int64(slot)))
		for i := 1; i <= cfg.SubWindows; i++ {
			e := ev("t", "K", traffic.Read, float64(i))
			e.SK = fmt.Sprint(i)
			put(t, s, e)
			time.Sleep(slot)
		}
		// The first slot has expired now: units 2..12 remain.
		r := findTable(t, s.Snapshot(), "t", "").Classes[traffic.Read]
		if r.Units != 77 || r.Events != 11 || len(r.Top) != 1 || r.Top[0].Units != 77 || r.Top[0].Events != 11 {
			t.Fatalf("after 12 slots: %+v, want 77 units over 11 events", r)
		}
		if want := 12 / slot.Seconds(); r.PeakUnitsPerSecond != want {
			t.Fatalf("peak = %v, want %v (the busiest slot)", r.PeakUnitsPerSecond, want)
		}
		if r.PeakSecondUnits != 12 || r.Top[0].PeakUnitsPerSecond != 12 {
			t.Fatalf("peak second = %v, key peak %v, want 12 (the busiest second)", r.PeakSecondUnits, r.Top[0].PeakUnitsPerSecond)
		}
		if k := r.Top[0]; k.Error != 0 || k.SortKeys < 8 || k.SortKeys > 16 {
			t.Fatalf("key = %+v, want exact units and about 11 sort keys (±40%% for 32-bit linear counting)", k)
		}
		// A clock that goes back does not reopen old slots.
		back := time.Now().Add(-cfg.Window)
		s2 := newTestStore(t, cfg, func() time.Time { return back })
		put(t, s2, ev("t", "K", traffic.Read, 1))
		if got := findTable(t, s2.Snapshot(), "t", "").Events; got != 1 {
			t.Fatalf("events = %d", got)
		}
	})
}

// TestConcurrent feeds a store from several goroutines while snapshots are
// taken; under -race it also checks for data races. Totals are exact.
func TestConcurrent(t *testing.T) {
	s := newTestStore(t, DefaultConfig(), nil)
	const writers, batches, size = 4, 50, 200
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = s.Snapshot()
			}
		}
	}()
	var writersWG sync.WaitGroup
	for w := range writers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			z := newZipf(1000, 1.0, uint64(w))
			for range batches {
				batch := make([]traffic.Event, size)
				for i := range batch {
					table := "shared"
					if i%4 == 0 {
						table = fmt.Sprintf("own-%d", w)
					}
					batch[i] = traffic.Event{Table: table, PK: keyName(z.next()), Class: traffic.Class(i % 2), Units: 1, Time: time.Now()}
				}
				if err := s.Put(context.Background(), batch); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	writersWG.Wait()
	close(stop)
	wg.Wait()
	var total uint64
	for _, ts := range s.Snapshot().Tables {
		total += ts.Events
	}
	if total != writers*batches*size {
		t.Fatalf("events = %d, want %d", total, writers*batches*size)
	}
}

// TestDistinctRefresh checks the distinct-key estimate of a live window:
// exact counts follow every snapshot; the HyperLogLog estimate (past 1000
// keys, half a millisecond to compute) is refreshed once per slot.
func TestDistinctRefresh(t *testing.T) {
	now := t0
	s := newTestStore(t, DefaultConfig(), func() time.Time { return now })
	slot := s.Config().Window / time.Duration(s.Config().SubWindows)
	add := func(from, to int) {
		var batch []traffic.Event
		for i := from; i < to; i++ {
			batch = append(batch, ev("t", keyName(i), traffic.Read, 1))
		}
		put(t, s, batch...)
	}
	distinct := func() uint64 { return findTable(t, s.Snapshot(), "t", "").DistinctKeys }
	add(0, 500)
	if got := distinct(); got != 500 {
		t.Fatalf("distinct = %d, want 500", got)
	}
	add(500, 900)
	if got := distinct(); got != 900 {
		t.Fatalf("distinct = %d, want 900 (exact counts refresh at once)", got)
	}
	add(900, 5000)
	first := distinct()
	if math.Abs(float64(first)-5000) > 0.03*5000 {
		t.Fatalf("distinct = %d, want about 5000", first)
	}
	add(5000, 10000)
	if got := distinct(); got != first {
		t.Fatalf("distinct = %d within the slot, want the cached %d", got, first)
	}
	now = now.Add(slot)
	if got := distinct(); math.Abs(float64(got)-10000) > 0.03*10000 {
		t.Fatalf("distinct = %d in the next slot, want about 10000", got)
	}
}

// TestWindowStartsAtStart checks that a freshly made live Store does not
// reach back before it began watching: a daemon up for 10 s has a 10 s
// window, so a key's rate is its units over 10 s, not over the full 60 s.
func TestWindowStartsAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		began := time.Now()
		s := newTestStore(t, cfg, time.Now)
		time.Sleep(10 * time.Second)
		put(t, s, ev("orders", "K", traffic.Write, 9000))
		snap := s.Snapshot()
		ts := findTable(t, snap, "orders", "")
		if !snap.Start.Equal(began) || !ts.Start.Equal(began) || ts.End.Sub(ts.Start) != 10*time.Second {
			t.Fatalf("window %v..%v, want it to start when the store did (%v)", ts.Start, ts.End, began)
		}
		// Once a whole window has passed, the window is full length again.
		time.Sleep(2 * cfg.Window)
		snap = s.Snapshot()
		if d := snap.End.Sub(snap.Start); d < cfg.Window-cfg.Window/time.Duration(cfg.SubWindows) || d > cfg.Window {
			t.Fatalf("window after two windows lasts %v, want about %v", d, cfg.Window)
		}
	})
}
