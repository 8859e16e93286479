package sketch

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// zipfEvents makes n Zipf-distributed write events over keys keys, one
// second of event time per 1000 events, with units of 1 or 0.5, and their
// exact units per key and per second.
func zipfEvents(n, keys int, skew float64, seed uint64) ([]traffic.Event, exactCounts, map[int64]float64) {
	z := newZipf(keys, skew, seed)
	names := make([]string, keys)
	for i := range names {
		names[i] = keyName(i)
	}
	evs := make([]traffic.Event, n)
	exact := exactCounts{}
	perSecond := map[int64]float64{}
	for i := range evs {
		k := names[z.next()]
		u := 1.0
		if i%3 == 0 {
			u = 0.5
		}
		at := t0.Add(time.Duration(i/1000) * time.Second)
		evs[i] = traffic.Event{Table: "t", PK: k, Class: traffic.Write, Units: u, Time: at}
		exact[k] += u
		perSecond[at.Unix()] += u
	}
	return evs, exact, perSecond
}

func putAll(t *testing.T, s *Store, evs []traffic.Event) {
	t.Helper()
	for i := 0; i < len(evs); i += 500 {
		put(t, s, evs[i:min(i+500, len(evs))]...)
	}
}

// TestMerge merges stores fed parts of one input (analyze mode) and checks
// the result against exact counts and against one store fed the whole
// input: totals exact, no key under its true units or over them by more
// than its Error, the true top 10 and at least 98 of the top 100 reported,
// distinct keys as one store counts them. Split in time (byte ranges of a
// log), the per-second peaks are exact too; split event by event (the same
// seconds in both), they are never above the truth.
func TestMerge(t *testing.T) {
	evs, exact, perSecond := zipfEvents(200_000, 20_000, 1.0, 7)
	var truePeak float64
	for _, u := range perSecond {
		truePeak = max(truePeak, u)
	}
	whole := newTestStore(t, Config{}, nil)
	putAll(t, whole, evs)
	want := findTable(t, whole.Snapshot(), "t", "")
	for _, split := range []string{"time", "interleaved", "four"} {
		t.Run(split, func(t *testing.T) {
			parts := 2
			if split == "four" {
				parts = 4
			}
			stores := make([]*Store, parts)
			for i := range stores {
				stores[i] = newTestStore(t, Config{}, nil)
			}
			if split == "interleaved" {
				for i := 0; i < len(evs); i += 500 {
					putAll(t, stores[i/500%parts], evs[i:i+500])
				}
			} else {
				n := len(evs) / parts
				for i, s := range stores {
					putAll(t, s, evs[i*n:(i+1)*n])
				}
			}
			for _, s := range stores[1:] {
				if err := stores[0].Merge(s); err != nil {
					t.Fatal(err)
				}
			}
			ts := findTable(t, stores[0].Snapshot(), "t", "")
			w := ts.Classes[traffic.Write]
			if w.Units != want.Classes[traffic.Write].Units || w.Events != uint64(len(evs)) {
				t.Fatalf("totals %v/%d, want %v/%d", w.Units, w.Events, want.Classes[traffic.Write].Units, len(evs))
			}
			exactKeys := 0
			for _, k := range w.Top {
				truth := exact[k.Key]
				if k.Units < truth || k.Units-truth > k.Error+1e-9 {
					t.Errorf("%s: %v units, true %v, error %v", k.Key, k.Units, truth, k.Error)
				}
				if k.Error == 0 {
					exactKeys++
				}
			}
			p10, p100 := precisionAt(10, keysOf(w.Top), exact), precisionAt(100, keysOf(w.Top), exact)
			t.Logf("precision@10 %.2f precision@100 %.2f, %d of %d keys exact, distinct %d (one store: %d)", p10, p100, exactKeys, len(w.Top), ts.DistinctKeys, want.DistinctKeys)
			if p10 != 1 || p100 < 0.98 {
				t.Errorf("precision@10 %v, @100 %v; want 1 and at least 0.98", p10, p100)
			}
			if ts.DistinctKeys != want.DistinctKeys {
				t.Errorf("distinct keys %d, one store counts %d", ts.DistinctKeys, want.DistinctKeys)
			}
			if split == "interleaved" {
				if w.PeakSecondUnits > truePeak {
					t.Errorf("class peak %v over the true %v", w.PeakSecondUnits, truePeak)
				}
				return
			}
			if w.PeakSecondUnits != truePeak {
				t.Errorf("class peak %v, want %v", w.PeakSecondUnits, truePeak)
			}
			for _, k := range w.Top[:10] {
				if peak := keyPeak(evs, k.Key); k.Error == 0 && k.PeakUnitsPerSecond != peak {
					t.Errorf("%s: peak %v, want %v", k.Key, k.PeakUnitsPerSecond, peak)
				}
			}
		})
	}
}

// keyPeak is a key's exact units in its busiest second of evs.
func keyPeak(evs []traffic.Event, key string) float64 {
	per := map[int64]float64{}
	var peak float64
	for _, e := range evs {
		if e.PK == key {
			per[e.Time.Unix()] += e.Units
			peak = max(peak, per[e.Time.Unix()])
		}
	}
	return peak
}

// TestMergeSmall merges tables that count every key exactly: the result
// stays exact while the keys fit, and grows into the sketch when they do
// not, keeping every bound. Shards and throttled calls add up.
func TestMergeSmall(t *testing.T) {
	mk := func(prefix string, keys int) *Store {
		s := newTestStore(t, Config{}, nil)
		var batch []traffic.Event
		for i := range keys {
			for r := range i%5 + 1 {
				e := ev("orders", fmt.Sprint(prefix, i), traffic.Class(r%2), 1)
				e.Shard = fmt.Sprint("shard-", i%3)
				batch = append(batch, e)
			}
			if i%50 == 0 {
				th := ev("orders", fmt.Sprint(prefix, i), traffic.Write, 1)
				th.Throttled = true
				batch = append(batch, th)
			}
		}
		put(t, s, batch...)
		return s
	}
	for _, tc := range []struct {
		name       string
		a, b       int
		sameKeys   bool
		wantExact  bool
		wantKeys   uint64
		wantEvents uint64
	}{
		{"same keys", 100, 100, true, true, 100, 600},
		{"other keys", 100, 150, false, true, 250, 750},
		{"overflow", 300, 300, false, false, 600, 1800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := mk("A", tc.a)
			pb := "B"
			if tc.sameKeys {
				pb = "A"
			}
			b := mk(pb, tc.b)
			if err := a.Merge(b); err != nil {
				t.Fatal(err)
			}
			ts := findTable(t, a.Snapshot(), "orders", "")
			if ts.DistinctKeys != tc.wantKeys || ts.Events != tc.wantEvents {
				t.Errorf("distinct %d events %d, want %d and %d", ts.DistinctKeys, ts.Events, tc.wantKeys, tc.wantEvents)
			}
			var shardRecords uint64
			for _, sh := range ts.Shards {
				shardRecords += sh.Records
			}
			if shardRecords != tc.wantEvents || len(ts.Shards) != 3 {
				t.Errorf("shards %v, want 3 with %d records", ts.Shards, tc.wantEvents)
			}
			if want := uint64((tc.a+49)/50 + (tc.b+49)/50); ts.ThrottledEvents != want {
				t.Errorf("throttled %d, want %d", ts.ThrottledEvents, want)
			}
			for c := range traffic.NumClasses {
				for _, k := range ts.Classes[c].Top {
					i := 0
					_, _ = fmt.Sscanf(k.Key[1:], "%d", &i)
					// Each input has i%5+1 events of key i, alternating classes.
					n := 0
					for r := range i%5 + 1 {
						if r%2 == c {
							n++
						}
					}
					if tc.sameKeys {
						n *= 2
					}
					if k.Units < float64(n) || k.Units-float64(n) > k.Error {
						t.Errorf("%s %v: %v units (error %v), want %d", k.Key, traffic.Class(c), k.Units, k.Error, n)
					}
					if tc.wantExact && (k.Error != 0 || k.Units != float64(n)) {
						t.Errorf("%s: %v units, error %v; want exactly %d", k.Key, k.Units, k.Error, n)
					}
				}
			}
		})
	}
}

// TestMergeUpperBound checks the invariant behind "never undercounts" for
// every key after merging stores with heavy churn (16 candidates), over
// whole files and in a live window that crosses a generation flip: each
// key's candidate total, or else each generation's count-min estimate, is
// at least its true units, so nothing a merge moved between candidates and
// the sketch was lost.
func TestMergeUpperBound(t *testing.T) {
	for _, tc := range churnCases {
		window := tc.window
		t.Run(fmt.Sprintf("window=%v/width=%d", window, tc.width), func(t *testing.T) {
			cfg := Config{Window: window, Width: tc.width, Depth: tc.depth, Tracked: 10, Candidates: 16}
			now := t0.Add(30 * time.Second) // the window crosses a generation flip at t0+60s
			clock := func() time.Time { return now }
			stores := []*Store{newTestStore(t, cfg, clock), newTestStore(t, cfg, clock), newTestStore(t, cfg, clock)}
			flip := t0.Add(time.Minute)
			exact := [2]map[string]uint64{{}, {}} // per generation (live)
			z := newZipf(2000, 1.0, 3)
			for i := range 30_000 {
				k := keyName(z.next())
				g := 0
				if window > 0 && !now.Before(flip) {
					g = 1
				}
				exact[g][k] += 2 // 0.5 units
				put(t, stores[i/100%3], ev("t", k, traffic.Write, 0.5))
				if window > 0 && i%4000 == 3999 {
					now = now.Add(6 * time.Second) // 42 s in all: nothing leaves the window
				}
			}
			for _, s := range stores[1:] {
				if err := stores[0].Merge(s); err != nil {
					t.Fatal(err)
				}
			}
			// Then other keys turn hot in the merged store: the merged
			// candidates are evicted, and write back what they counted.
			for range 20_000 {
				k := keyName((z.next() + 1000) % 2000)
				g := 0
				if window > 0 && !now.Before(flip) {
					g = 1
				}
				exact[g][k] += 2
				put(t, stores[0], ev("t", k, traffic.Write, 0.5))
			}
			v, _ := stores[0].tables.Load(tableID{"t", ""})
			tb := v.(*table)
			checkUpperBounds(t, &tb.classes[traffic.Write], window == 0, exact)
		})
	}
}

// TestMergeLive merges two live stores fed the same seconds under virtual
// time: totals add, the recent seconds add up second by second, and the
// window's distinct keys are the union.
func TestMergeLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newTestStore(t, DefaultConfig(), time.Now)
		b := newTestStore(t, DefaultConfig(), time.Now)
		for sec := range 10 {
			for i := range 10 {
				put(t, a, ev("orders", fmt.Sprint("A", i), traffic.Read, 1))
				put(t, b, ev("orders", fmt.Sprint("B", i), traffic.Read, float64(sec)))
				put(t, b, ev("orders", "A0", traffic.Read, 1))
			}
			time.Sleep(time.Second)
		}
		if err := a.Merge(b); err != nil {
			t.Fatal(err)
		}
		ts := findTable(t, a.Snapshot(), "orders", "")
		r := ts.Classes[traffic.Read]
		// Seconds 7, 8, 9: each 10 from a, 10·sec + 10 from b.
		if want := 30 + 10*(7+8+9) + 30.0; r.RecentUnits != want || r.LastSecondUnits != 10+90+10 {
			t.Errorf("recent %v last %v, want %v and 110", r.RecentUnits, r.LastSecondUnits, want)
		}
		if r.PeakSecondUnits != 110 {
			t.Errorf("peak %v, want 110 (second 9, both stores)", r.PeakSecondUnits)
		}
		if ts.DistinctKeys != 20 || r.Events != 300 {
			t.Errorf("distinct %d events %d, want 20 and 300", ts.DistinctKeys, r.Events)
		}
		// A0: 1 a second in a, 10 in b.
		a0 := reported(t, r, "A0")
		if a0.Units != 110 || a0.Error != 0 || a0.RecentUnits != 33 || a0.PeakUnitsPerSecond != 11 {
			t.Errorf("A0: %+v, want 110 units exactly, 33 recent, a peak of 11", a0)
		}
	})
}

func TestMergeErrors(t *testing.T) {
	a := newTestStore(t, Config{}, nil)
	if err := a.Merge(a); err == nil {
		t.Error("merging a store into itself: no error")
	}
	b := newTestStore(t, Config{Width: 1024}, nil)
	err := a.Merge(b)
	if err == nil || !strings.Contains(err.Error(), "count-min 5×4096 against 5×1024") {
		t.Errorf("merging another shape: %v", err)
	}
	c := newTestStore(t, Config{MaxTables: 2}, nil)
	d := newTestStore(t, Config{}, nil)
	for i := range 3 {
		put(t, d, ev(fmt.Sprint("t", i), "K", traffic.Read, 1))
	}
	if err := c.Merge(d); err != nil {
		t.Fatal(err)
	}
	if c.Tables() != 2 || c.Dropped() != 1 {
		t.Errorf("tables %d dropped %d, want 2 and 1", c.Tables(), c.Dropped())
	}
}

// TestMergeConcurrent merges a store while it is being fed, into a store
// that is being read; under -race it checks for data races. A merge taken
// while b is fed holds part of b's events, never more; one taken after
// holds every event once.
func TestMergeConcurrent(t *testing.T) {
	a := newTestStore(t, DefaultConfig(), nil)
	b := newTestStore(t, DefaultConfig(), nil)
	c := newTestStore(t, DefaultConfig(), nil)
	const batches, size = 40, 100
	var wg sync.WaitGroup
	feed := func(s *Store, prefix string) {
		defer wg.Done()
		for i := range batches {
			batch := make([]traffic.Event, size)
			for j := range batch {
				batch[j] = traffic.Event{Table: "t", PK: fmt.Sprint(prefix, (i*size+j)%500), Class: traffic.Class(j % 2), Units: 1, Time: time.Now()}
			}
			if err := s.Put(t.Context(), batch); err != nil {
				t.Error(err)
			}
		}
	}
	wg.Add(3)
	go feed(a, "A")
	go feed(b, "B")
	go func() {
		defer wg.Done()
		for range 5 {
			if err := c.Merge(b); err != nil {
				t.Error(err)
			}
			_ = c.Snapshot()
			_ = a.Snapshot()
		}
	}()
	wg.Wait()
	var merged uint64
	for _, ts := range c.Snapshot().Tables {
		merged += ts.Events
	}
	if merged > 5*batches*size {
		t.Errorf("merged while fed: %d events, more than five merges of b can hold", merged)
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	if got := findTable(t, a.Snapshot(), "t", "").Events; got != 2*batches*size {
		t.Fatalf("events = %d, want %d", got, 2*batches*size)
	}
}
