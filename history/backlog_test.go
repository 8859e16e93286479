package history

import (
	"context"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestBacklogReachesCells: a reader catching up a backlog hands the
// sketch 30 seconds of events in one batch, so the judged second jumps by
// 30 between two evaluations (the daemon's tick: SnapshotSince, then
// detect.LastSeconds and detect.EarlierSeconds into Record). Every one of
// those seconds reaches the cells, once: the minute's cell holds their
// units, its busiest second is theirs, and the hot key's units are
// counted for the seconds its ring still held (the newest 8) only.
func TestBacklogReachesCells(t *testing.T) {
	c := newClock(t0)
	s, _ := openStore(t, t.TempDir(), c, nil)
	store, err := sketch.NewStore(sketch.Config{Window: 60 * time.Second, SubWindows: 12, Tracked: 10}, c.now)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]uint64{}
	evaluate := func() {
		snap := store.SnapshotSince(func(table, _ string) (uint64, bool) { return held[table], false }, nil)
		for _, ts := range snap.Tables {
			held[ts.Table] = ts.Version
		}
		s.Record(Evaluation{Snapshot: snap, Seconds: detect.LastSeconds(snap, 5), Earlier: detect.EarlierSeconds(snap, 5)})
	}
	put := func(at time.Time, key string, n int) {
		batch := make([]traffic.Event, n)
		for i := range batch {
			batch[i] = traffic.Event{Table: "orders", PK: key, Class: traffic.Write, Units: 1, Time: at}
		}
		if err := store.Put(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	// Second 0 judged on its own, then 30 seconds (1 to 30) in one
	// batch: second i has 100+i units of "hot" and 10 of "cold"; second
	// 20 is the busiest.
	c.set(t0.Add(500 * time.Millisecond))
	put(t0, "hot", 50)
	c.set(t0.Add(time.Second))
	evaluate()
	var want float64 = 50
	var batch []traffic.Event
	for i := 1; i <= 30; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		n := 100 + i
		if i == 20 {
			n = 400
		}
		want += float64(n + 10)
		for range n {
			batch = append(batch, traffic.Event{Table: "orders", PK: "hot", Class: traffic.Write, Units: 1, Time: at})
		}
		for range 10 {
			batch = append(batch, traffic.Event{Table: "orders", PK: "cold", Class: traffic.Write, Units: 1, Time: at})
		}
	}
	c.set(t0.Add(31 * time.Second))
	if err := store.Put(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	evaluate()
	// One more second, so that second 30 is folded too.
	c.set(t0.Add(32 * time.Second))
	put(t0.Add(31*time.Second), "cold", 1)
	evaluate()
	c.set(t0.Add(33 * time.Second))
	evaluate()
	a, err := s.Cells(context.Background(), Query{Table: "orders", Class: "write", From: t0, To: t0.Add(time.Minute), Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Series) != 1 || len(a.Series[0].Cells) != 1 {
		t.Fatalf("series %+v: want one of one cell", a.Series)
	}
	cell := a.Series[0].Cells[0]
	// Seconds 0 to 30 and 31's pending one folded at 32 (one unit).
	if got := cell.Units; got != want+1 {
		t.Errorf("the minute's cell = %v units, want %v (seconds 0 to 31, each once)", got, want+1)
	}
	if got := cell.BusiestSecond; got != 410 {
		t.Errorf("its busiest second = %v units, want 410 (second 20)", got)
	}
	var hot float64 = 50
	for i := 23; i <= 30; i++ { // the 8 seconds the key's ring held
		hot += float64(100 + i)
	}
	for _, k := range cell.Keys {
		if k.Key == "hot" && k.Units != hot {
			t.Errorf("the hot key's units = %v, want %v (second 0 and seconds 23 to 30, those its ring held)", k.Units, hot)
		}
	}
	if len(cell.Keys) == 0 {
		t.Errorf("no keys in the cell %+v", cell)
	}
}
