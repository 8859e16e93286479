package sketch

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// tableNames returns the tables of a snapshot, sorted.
func tableNames(snap Snapshot) []string {
	var out []string
	for _, ts := range snap.Tables {
		out = append(out, ts.Table)
	}
	slices.Sort(out)
	return out
}

// TestJunkDoesNotCrowdOutActiveTables fills the table bound with a busy
// table and junk, then floods it with thousands of names that come once:
// the busy table keeps its place, the flood costs no churn among names
// seen once in the window, and a real table that arrives in the middle of
// the flood is tracked from its event in a second second.
func TestJunkDoesNotCrowdOutActiveTables(t *testing.T) {
	now := t0
	s := newTestStore(t, Config{MaxTables: 10, Window: time.Minute}, func() time.Time { return now })
	var evicted []string
	s.OnEvict(func(table, index string) { evicted = append(evicted, table) })
	busy := make([]traffic.Event, 50)
	for i := range busy {
		busy[i] = ev("orders", fmt.Sprintf("USER#%d", i%5), traffic.Write, 1)
	}
	put(t, s, busy...)
	for i := range 5000 {
		put(t, s, ev(fmt.Sprintf("junk-%05d", i), "K", traffic.Read, 1))
	}
	if !s.Tracked("orders", "") {
		t.Fatal("orders was evicted by names that come once")
	}
	if s.Tables() != 10 || len(s.Snapshot().Tables) != 10 {
		t.Errorf("%d tables tracked (%d in the snapshot), want the bound 10", s.Tables(), len(s.Snapshot().Tables))
	}
	if len(evicted) != 0 || s.Evicted() != 0 {
		t.Errorf("%d evictions among names seen once each: %v", s.Evicted(), evicted)
	}
	if got := s.Dropped(); got != 5000-9 {
		t.Errorf("dropped = %d, want %d (the flood past the bound)", got, 5000-9)
	}
	// A real table's first event competes with a junk table's one and
	// stays out, and so does a second in the same second: one burst. Its
	// event in the next second gets it in, in place of the oldest junk.
	put(t, s, ev("sessions", "S#1", traffic.Read, 1))
	put(t, s, ev("sessions", "S#2", traffic.Read, 1))
	if s.Tracked("sessions", "") {
		t.Fatal("a table with two events in one second took the place of one with one")
	}
	now = now.Add(time.Second)
	put(t, s, ev("sessions", "S#3", traffic.Read, 1))
	if !s.Tracked("sessions", "") {
		t.Fatal("a table with three events in two seconds is not tracked in place of one with one")
	}
	if len(evicted) != 1 || evicted[0] != "junk-00000" {
		t.Errorf("evicted %v, want the least recent junk table", evicted)
	}
	if ts := findTable(t, s.Snapshot(), "sessions", ""); ts.Events != 1 {
		t.Errorf("sessions counts %d events, want the 1 of the Put that got it in", ts.Events)
	}
}

// TestIdleTablesLeaveFirst runs a live window past the traffic of most
// tables: a newcomer takes the place of an idle table, never of the one
// still busy, and an evicted table that comes back competes with the
// traffic it had.
func TestIdleTablesLeaveFirst(t *testing.T) {
	now := t0
	s := newTestStore(t, Config{MaxTables: 3, Window: time.Minute}, func() time.Time { return now })
	put(t, s, ev("a-table", "K", traffic.Read, 1), ev("a-table", "K", traffic.Read, 1))
	put(t, s, ev("b-table", "K", traffic.Read, 1))
	put(t, s, ev("c-table", "K", traffic.Read, 1))
	now = now.Add(2 * time.Minute) // a, b and c are idle
	for range 5 {
		put(t, s, ev("c-table", "K", traffic.Read, 1))
	}
	put(t, s, ev("d-table", "K", traffic.Read, 1))
	put(t, s, ev("e-table", "K", traffic.Read, 1))
	if got := tableNames(s.Snapshot()); fmt.Sprint(got) != "[c-table d-table e-table]" {
		t.Fatalf("tables %v, want c (busy), d and e in place of the idle a and b", got)
	}
	if s.Evicted() != 2 {
		t.Errorf("evicted = %d, want 2", s.Evicted())
	}
	// A table that was never idle and a busier one: f, with as many
	// events as d and e, stays out.
	put(t, s, ev("f-table", "K", traffic.Read, 1))
	if s.Tracked("f-table", "") {
		t.Error("f took the place of a table as busy as itself")
	}
}

// TestTableBoundInWholeFiles checks the bound without a clock (analyze):
// the busiest tables of the input are the ones counted.
func TestTableBoundInWholeFiles(t *testing.T) {
	s := newTestStore(t, Config{MaxTables: 4}, nil)
	var batch []traffic.Event
	for i := range 200 {
		batch = append(batch, ev(fmt.Sprintf("junk-%03d", i), "K", traffic.Read, 1))
	}
	put(t, s, batch...)
	for _, name := range []string{"orders", "sessions"} {
		var run []traffic.Event
		for i := range 100 {
			run = append(run, ev(name, fmt.Sprint(i), traffic.Write, 1))
		}
		put(t, s, run...)
	}
	snap := s.Snapshot()
	if names := tableNames(snap); !slices.Contains(names, "orders") || !slices.Contains(names, "sessions") || len(names) != 4 {
		t.Errorf("tables %v, want orders, sessions and two junk tables", names)
	}
	if ts := findTable(t, snap, "orders", ""); ts.Events != 100 {
		t.Errorf("orders counts %d events, want 100", ts.Events)
	}
}

// TestEvictionRaces puts a flood of names, a busy table, snapshots and
// merges at once (run with -race): the busy table stays, every table
// counted is tracked, and no event is counted in a table that was
// dropped.
func TestEvictionRaces(t *testing.T) {
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := newTestStore(t, Config{MaxTables: 16, Window: time.Minute}, clock)
	var tracked sync.Map
	s.OnEvict(func(table, index string) { tracked.Delete(table) })
	put(t, s, ev("orders", "K", traffic.Write, 1))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				name := fmt.Sprintf("junk-%d-%d", w, i%300)
				_ = s.Put(context.Background(), []traffic.Event{ev(name, "K", traffic.Read, 1), ev("orders", "K", traffic.Write, 1)})
				if s.Tracked(name, "") {
					tracked.Store(name, true)
				}
				if i%25 == 0 {
					mu.Lock()
					now = now.Add(time.Second)
					mu.Unlock()
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			s.Snapshot()
		}
	})
	wg.Wait()
	snap := s.Snapshot()
	if len(snap.Tables) > 16 || s.Tables() != len(snap.Tables) {
		t.Errorf("%d tables in the snapshot, %d counted, bound 16", len(snap.Tables), s.Tables())
	}
	if !s.Tracked("orders", "") {
		t.Error("the busiest table was evicted")
	}
	for _, ts := range snap.Tables {
		if !s.Tracked(ts.Table, ts.Index) {
			t.Errorf("%s is in the snapshot but not tracked", ts.Table)
		}
	}
}

// TestUnitsNoCallConsumes puts events whose units no DynamoDB call can
// consume, as a reader that forgot to check would: they are dropped and
// counted, and every total stays a finite number.
func TestUnitsNoCallConsumes(t *testing.T) {
	for _, window := range []time.Duration{0, time.Minute} {
		s := newTestStore(t, Config{Window: window}, nil)
		put(t, s,
			ev("orders", "USER#1", traffic.Write, 1.7e308), ev("orders", "USER#1", traffic.Write, 1.7e308),
			ev("orders", "USER#2", traffic.Write, math.NaN()), ev("orders", "USER#2", traffic.Write, math.Inf(1)),
			ev("orders", "USER#3", traffic.Write, -1), ev("orders", "USER#3", traffic.Read, traffic.MaxBatchWriteUnits+1),
			ev("orders", "USER#4", traffic.Write, traffic.MaxBatchWriteUnits), ev("orders", "USER#4", traffic.Read, 0.5))
		ts := findTable(t, s.Snapshot(), "orders", "")
		w, r := ts.Classes[traffic.Write], ts.Classes[traffic.Read]
		if w.Units != traffic.MaxBatchWriteUnits || r.Units != 0.5 || ts.Events != 2 || s.Dropped() != 6 {
			t.Errorf("window %v: write units %v, read units %v, events %d, dropped %d; want %v, 0.5, 2, 6",
				window, w.Units, r.Units, ts.Events, s.Dropped(), float64(traffic.MaxBatchWriteUnits))
		}
		for _, k := range append(w.Top, r.Top...) {
			if math.IsInf(k.Units, 0) || math.IsNaN(k.Units) || k.Key == "USER#1" || k.Key == "USER#2" {
				t.Errorf("window %v: key %+v", window, k)
			}
		}
	}
}

// TestNewcomerKeepsItsPlace checks that a table that won its place with
// events refused before weighs them for the rest of the window: another
// name as busy as it was does not take its place at once, so names that
// come twice do not churn through the places of one another.
func TestNewcomerKeepsItsPlace(t *testing.T) {
	now := t0
	s := newTestStore(t, Config{MaxTables: 3, Window: time.Minute}, func() time.Time { return now })
	for _, name := range []string{"a-table", "b-table", "c-table"} {
		put(t, s, ev(name, "K", traffic.Read, 1))
	}
	for _, name := range []string{"d-table", "e-table", "f-table", "g-table"} {
		put(t, s, ev(name, "K", traffic.Read, 1))
		now = now.Add(time.Second)
		put(t, s, ev(name, "K", traffic.Read, 1))
	}
	if got := tableNames(s.Snapshot()); fmt.Sprint(got) != "[d-table e-table f-table]" {
		t.Errorf("tables %v, want d, e and f, each in with two events, g refused with as many", got)
	}
	if s.Evicted() != 3 {
		t.Errorf("evicted = %d, want 3 (a, b and c)", s.Evicted())
	}
	// A window later the credit is spent: g's event beats an idle table.
	now = now.Add(2 * time.Minute)
	put(t, s, ev("g-table", "K", traffic.Read, 1))
	if !s.Tracked("g-table", "") {
		t.Error("g is not tracked in place of an idle table a window later")
	}
}

// TestBurstOfMadeUpTables has 300 real tables count 5 events each over 5
// seconds, then one burst of 3000 made-up tables of 20 events each (one
// HTTP body of 3 MB): every real table keeps its place, the made-up
// events are dropped. A real table that keeps coming, more events in more
// seconds than the least busy table, gets in.
func TestBurstOfMadeUpTables(t *testing.T) {
	now := t0
	s := newTestStore(t, Config{MaxTables: 300, Window: time.Minute}, func() time.Time { return now })
	for sec := range 5 {
		var batch []traffic.Event
		for i := range 300 {
			batch = append(batch, ev(fmt.Sprintf("real-%03d", i), fmt.Sprintf("K%d", sec), traffic.Write, 1))
		}
		put(t, s, batch...)
		now = now.Add(time.Second)
	}
	dropped := s.Dropped()
	var burst []traffic.Event
	for i := range 3000 {
		for k := range 20 {
			burst = append(burst, ev(fmt.Sprintf("madeup-%04d", i), fmt.Sprintf("K%d", k), traffic.Write, 1))
		}
	}
	for len(burst) > 0 { // in batches, as a reader hands them on
		n := min(len(burst), 1000)
		put(t, s, burst[:n]...)
		burst = burst[n:]
	}
	if s.Evicted() != 0 {
		t.Errorf("%d real tables evicted by one burst of made-up ones", s.Evicted())
	}
	for i := range 300 {
		if name := fmt.Sprintf("real-%03d", i); !s.Tracked(name, "") {
			t.Fatalf("%s is no longer tracked", name)
		}
	}
	if got := s.Dropped() - dropped; got != 3000*20 {
		t.Errorf("%d events dropped, want the burst's %d", got, 3000*20)
	}
	// A newcomer that keeps coming: one event a second. After six, more
	// events in more seconds than a real table's five, it is in.
	for sec := range 6 {
		now = now.Add(time.Second)
		put(t, s, ev("latecomer", "K", traffic.Write, 1))
		if s.Tracked("latecomer", "") != (sec == 5) {
			t.Fatalf("latecomer tracked = %v after %d seconds of one event", s.Tracked("latecomer", ""), sec+1)
		}
	}
}

// tick puts one event of each of n made-up names, as one body a second
// of names that only tick would.
func tick(t *testing.T, s *Store, n int) {
	t.Helper()
	batch := make([]traffic.Event, 0, n)
	for i := range n {
		batch = append(batch, ev(fmt.Sprintf("tick-%03d", i), "K", traffic.Read, 1))
	}
	put(t, s, batch...)
}

// realTable returns a second of a real table's writes: 200 events of 3
// WCU (600 WCU/s), 30 % of them on USER#HOT.
func realTable(name string, sec int) []traffic.Event {
	out := make([]traffic.Event, 0, 200)
	for i := range 200 {
		pk := fmt.Sprintf("USER#%d-%d", sec, i)
		if i%10 < 3 {
			pk = "USER#HOT"
		}
		out = append(out, ev(name, pk, traffic.Write, 3))
	}
	return out
}

// TestRealTrafficWinsOverTickingNames has 300 made-up names tick at one
// event a second each for a whole window, then two real tables of 200
// events a second each, one declared in the config, with a key at 30 %:
// the declared one is tracked from its first event, the other within 10
// s (on its third second), both with their hot key on top; the names
// that tick churn only among themselves, and neither real table is
// evicted while it keeps its traffic.
func TestRealTrafficWinsOverTickingNames(t *testing.T) {
	now := t0
	s := newTestStore(t, Config{MaxTables: 300, Window: time.Minute}, func() time.Time { return now })
	s.Declare([]string{"orders"})
	var evicted []string
	s.OnEvict(func(table, _ string) { evicted = append(evicted, table) })
	for range 70 {
		tick(t, s, 300)
		now = now.Add(time.Second)
	}
	if s.Tables() != 299 || s.Tracked("orders", "") {
		t.Fatalf("%d tables tracked before the real ones, want 299 (one place reserved for orders)", s.Tables())
	}
	in := map[string]int{}
	for sec := range 40 {
		tick(t, s, 300)
		put(t, s, realTable("orders", sec)...)
		put(t, s, realTable("sessions", sec)...)
		for _, name := range []string{"orders", "sessions"} {
			if _, ok := in[name]; !ok && s.Tracked(name, "") {
				in[name] = sec + 1
			}
		}
		now = now.Add(time.Second)
	}
	if in["orders"] != 1 {
		t.Errorf("the declared table is tracked from its second %d, want its first", in["orders"])
	}
	if got, ok := in["sessions"]; !ok || got > 10 {
		t.Errorf("the undeclared real table is tracked from its second %d (tracked: %v), want within 10", got, ok)
	}
	if slices.Contains(evicted, "orders") || slices.Contains(evicted, "sessions") || !s.Tracked("orders", "") || !s.Tracked("sessions", "") {
		t.Errorf("a real table was evicted while it kept its traffic: evicted %d tables, orders %v, sessions %v",
			len(evicted), s.Tracked("orders", ""), s.Tracked("sessions", ""))
	}
	if s.Tables() != 300 {
		t.Errorf("%d tables tracked, want the bound 300", s.Tables())
	}
	snap := s.Snapshot()
	for _, name := range []string{"orders", "sessions"} {
		w := findTable(t, snap, name, "").Classes[traffic.Write]
		if len(w.Top) == 0 || w.Top[0].Key != "USER#HOT" || math.Abs(w.Top[0].Units/w.Units-0.3) > 0.01 {
			t.Errorf("%s: top write keys %v of %v units, want USER#HOT at 30 %%", name, w.Top[:min(len(w.Top), 1)], w.Units)
		}
	}
}

// TestBurstEvictsNoSteadyTable has 300 tables with steady traffic, one
// event a second each, then one burst (and then a second one, the next
// second) of 3000 made-up names of 20 events each: no steady table is
// evicted, as a burst is one second however many events it carries.
func TestBurstEvictsNoSteadyTable(t *testing.T) {
	now := t0
	s := newTestStore(t, Config{MaxTables: 300, Window: time.Minute}, func() time.Time { return now })
	for range 20 {
		tick(t, s, 300)
		now = now.Add(time.Second)
	}
	for range 2 {
		tick(t, s, 300)
		var burst []traffic.Event
		for i := range 3000 {
			for k := range 20 {
				burst = append(burst, ev(fmt.Sprintf("madeup-%04d", i), fmt.Sprintf("K%d", k), traffic.Write, 1))
			}
		}
		for len(burst) > 0 { // in batches, as a reader hands them on
			n := min(len(burst), 1000)
			put(t, s, burst[:n]...)
			burst = burst[n:]
		}
		now = now.Add(time.Second)
	}
	tick(t, s, 300)
	if s.Evicted() != 0 {
		t.Errorf("%d steady tables evicted by bursts of made-up ones", s.Evicted())
	}
	for i := range 300 {
		if name := fmt.Sprintf("tick-%03d", i); !s.Tracked(name, "") {
			t.Fatalf("%s is no longer tracked", name)
		}
	}
}

// TestDeclareReservesPlaces declares tables while others hold every
// place: the least busy of those are evicted to make room, the declared
// ones are tracked whatever their traffic and never evicted, and a table
// no longer declared competes again.
func TestDeclareReservesPlaces(t *testing.T) {
	now := t0
	s := newTestStore(t, Config{MaxTables: 4, Window: time.Minute}, func() time.Time { return now })
	for i, name := range []string{"a-table", "b-table", "c-table", "d-table"} {
		for range i + 1 {
			put(t, s, ev(name, "K", traffic.Read, 1))
		}
	}
	s.Declare([]string{"orders", "orders/by-status"})
	if got := tableNames(s.Snapshot()); fmt.Sprint(got) != "[c-table d-table]" {
		t.Fatalf("tables %v after declaring two, want the two busiest of the others", got)
	}
	put(t, s, ev("orders", "K", traffic.Read, 1))
	put(t, s, traffic.Event{Table: "orders", Index: "by-status", PK: "S", Class: traffic.Read, Units: 1, Time: now, Source: "test"})
	now = now.Add(time.Second)
	for range 3 { // far busier than the declared ones, in three seconds
		for range 100 {
			put(t, s, ev("e-table", "K", traffic.Read, 1))
		}
		now = now.Add(time.Second)
	}
	if !s.Tracked("orders", "") || !s.Tracked("orders", "by-status") || s.Tables() != 4 {
		t.Errorf("declared tracked: %v, %v; %d tables, want both and 4", s.Tracked("orders", ""), s.Tracked("orders", "by-status"), s.Tables())
	}
	if !s.Tracked("e-table", "") {
		t.Error("e-table, far busier, did not take the place of an undeclared table")
	}
	s.Declare(nil)
	for range 3 {
		for range 100 {
			put(t, s, ev("f-table", "K", traffic.Read, 1))
		}
		now = now.Add(time.Second)
	}
	if !s.Tracked("f-table", "") || s.Tracked("orders", "") {
		t.Errorf("f-table tracked %v, orders tracked %v: orders, no longer declared and the least busy, should give its place", s.Tracked("f-table", ""), s.Tracked("orders", ""))
	}
}

// TestUntrackedInWholeFiles counts 400 tables of 10 events each, then a
// busier one, over whole files with room for 300: every event is either
// in a tracked table or counted as untracked, the events of the table the
// busier one evicted among them.
func TestUntrackedInWholeFiles(t *testing.T) {
	s := newTestStore(t, Config{MaxTables: 300}, nil)
	for i := range 400 {
		batch := make([]traffic.Event, 10)
		for k := range batch {
			batch[k] = ev(fmt.Sprintf("table-%03d", i), fmt.Sprint(k), traffic.Write, 1)
		}
		put(t, s, batch...)
	}
	busy := make([]traffic.Event, 50)
	for k := range busy {
		busy[k] = ev("busy", fmt.Sprint(k), traffic.Write, 1)
	}
	put(t, s, busy...)
	var counted uint64
	for _, ts := range s.Snapshot().Tables {
		counted += ts.Events
	}
	if s.Tables() != 300 || counted+s.Untracked() != 4050 || s.Untracked() != 4050-counted || s.Untracked() != 1010 {
		t.Errorf("%d tables, %d events counted, %d untracked; want 300 tables, 3040 counted and 1010 untracked (100 tables refused, one evicted)",
			s.Tables(), counted, s.Untracked())
	}
}
