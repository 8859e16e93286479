package sketch

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestCountersDoNotSaturate feeds three keys 5.5e9 write units in all
// over one long log (analyze mode: one slot holds the whole input), each
// key far past 2^30 units and 2^32 quanta in its one slot, and checks that
// each key's units and share are exact, also once two such stores merge.
func TestCountersDoNotSaturate(t *testing.T) {
	const (
		perEvent = traffic.MaxBatchWriteUnits // 110 000 WCU, the most one call writes
		events   = 50_000                     // 5.5e9 WCU in all
	)
	feed := func() *Store {
		s, err := NewStore(Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		batch := make([]traffic.Event, 0, 1000)
		for i := range events {
			e := ev("big", fmt.Sprint("key", i%3), traffic.Write, perEvent)
			e.Time = t0.Add(time.Duration(i) * time.Second)
			batch = append(batch, e)
			if len(batch) == cap(batch) {
				put(t, s, batch...)
				batch = batch[:0]
			}
		}
		put(t, s, batch...)
		return s
	}
	check := func(s *Store, times float64) {
		t.Helper()
		ts := findTable(t, s.Snapshot(), "big", "")
		st := ts.Classes[traffic.Write]
		if want := times * events * perEvent; st.Units != want {
			t.Fatalf("table units %v, want %v", st.Units, want)
		}
		if len(st.Top) != 3 {
			t.Fatalf("%d keys, want 3", len(st.Top))
		}
		var shares float64
		for _, k := range st.Top {
			n := events / 3
			if k.Key < fmt.Sprint("key", events%3) {
				n++ // the first events%3 keys get one more
			}
			if want := times * float64(n) * perEvent; k.Units != want || k.Error != 0 || k.Events != uint64(times*float64(n)) {
				t.Errorf("%s: %v units ± %v in %d events, want %v exactly in %v", k.Key, k.Units, k.Error, k.Events, want, times*float64(n))
			}
			share := k.Units / st.Units
			shares += share
			if math.Abs(share-1.0/3) > 1e-4 {
				t.Errorf("%s: share %.4f, want 0.3333", k.Key, share)
			}
		}
		if math.Abs(shares-1) > 1e-9 {
			t.Errorf("shares add up to %v, want 1", shares)
		}
	}
	a := feed()
	check(a, 1)
	if err := a.Merge(feed()); err != nil {
		t.Fatal(err)
	}
	check(a, 2)
}

// TestCountersDoNotSaturateLive does the same in a live window of long
// slots, and checks that a slot past 2^32 quanta expires whole.
func TestCountersDoNotSaturateLive(t *testing.T) {
	now := t0
	s := newTestStore(t, Config{Window: 48 * time.Hour, SubWindows: 2}, func() time.Time { return now })
	const perEvent = traffic.MaxBatchWriteUnits
	batch := make([]traffic.Event, 0, 30_000)
	for i := range 30_000 { // 3.3e9 WCU, 1.1e9 a key
		batch = append(batch, ev("big", fmt.Sprint("key", i%3), traffic.Write, perEvent))
	}
	put(t, s, batch...)
	top := findTable(t, s.Snapshot(), "big", "").Classes[traffic.Write].Top
	if len(top) != 3 {
		t.Fatalf("%d keys, want 3", len(top))
	}
	for _, k := range top {
		if want := 10_000.0 * perEvent; k.Units != want || k.Events != 10_000 {
			t.Errorf("%s: %v units in %d events, want %v in 10000", k.Key, k.Units, k.Events, want)
		}
	}
	now = now.Add(24 * time.Hour)
	put(t, s, ev("big", "key0", traffic.Write, 1))
	now = now.Add(24 * time.Hour) // the first slot leaves the window
	put(t, s, ev("big", "key1", traffic.Write, 1))
	top = findTable(t, s.Snapshot(), "big", "").Classes[traffic.Write].Top
	if len(top) != 2 || top[0].Units != 1 || top[1].Units != 1 {
		t.Fatalf("after the big slot expired: %+v, want key0 and key1 at 1 unit each", top)
	}
}
