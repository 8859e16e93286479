package sketch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// feed puts n Zipf-distributed events into one table of s and returns the
// exact units per key. Units are 1, or 0.5 for every third event, so
// fractional units are exercised.
func feed(t testing.TB, s *Store, keys, n int, skew float64, seed uint64) (exactCounts, float64) {
	z := newZipf(keys, skew, seed)
	names := make([]string, keys)
	for i := range names {
		names[i] = keyName(i)
	}
	exact := make(exactCounts, keys)
	var total float64
	batch := make([]traffic.Event, 0, 512)
	for i := range n {
		k := names[z.next()]
		u := 1.0
		if i%3 == 0 {
			u = 0.5
		}
		exact[k] += u
		total += u
		batch = append(batch, traffic.Event{Table: "t", PK: k, Class: traffic.Write, Units: u, Time: t0})
		if len(batch) == cap(batch) || i == n-1 {
			if err := s.Put(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return exact, total
}

// TestAccuracy compares the heavy hitters with exact counts on seeded Zipf
// workloads: no key is undercounted, no key overcounts by more than its
// Error, and with skew ≥ 1 at the default size the top 10 is the true top
// 10 and at least 98 of the top 100 are (the heaviest keys are counted
// exactly from early on). The ε, δ bound
// of the count-min sketch itself is checked by TestCountMinBound: keys that
// are reported are selected for high estimates, so the a-priori δ does not
// apply to them.
func TestAccuracy(t *testing.T) {
	for _, tc := range []struct {
		skew       float64
		keys, n    int
		wantTop10  bool
		width      int
		candidates int
	}{
		{skew: 0.8, keys: 20_000, n: 100_000, width: 0},
		{skew: 1.0, keys: 20_000, n: 100_000, width: 0, wantTop10: true},
		{skew: 1.2, keys: 20_000, n: 100_000, width: 0, wantTop10: true},
		// A tiny sketch: the bounds hold however small it is.
		{skew: 1.0, keys: 20_000, n: 100_000, width: 64, candidates: 100},
	} {
		for _, seed := range []uint64{1, 2} {
			if seed == 2 && testing.Short() {
				continue
			}
			t.Run(fmt.Sprintf("zipf%.1f/width%d/seed%d", tc.skew, tc.width, seed), func(t *testing.T) {
				cfg := Config{Width: tc.width, Candidates: tc.candidates} // analyze mode
				s := newTestStore(t, cfg, nil)
				exact, total := feed(t, s, tc.keys, tc.n, tc.skew, seed)
				w := findTable(t, s.Snapshot(), "t", "").Classes[traffic.Write]
				if w.Units != total || w.Events != uint64(tc.n) {
					t.Fatalf("totals %v/%d, want %v/%d", w.Units, w.Events, total, tc.n)
				}
				for _, k := range w.Top {
					truth := exact[k.Key]
					if k.Units < truth {
						t.Errorf("%s: estimate %v under true %v", k.Key, k.Units, truth)
					}
					if k.Units-truth > k.Error+1e-9 {
						t.Errorf("%s: estimate %v over true %v by more than its error %v", k.Key, k.Units, truth, k.Error)
					}
				}
				p10 := precisionAt(10, keysOf(w.Top), exact)
				p100 := precisionAt(100, keysOf(w.Top), exact)
				t.Logf("precision@10 %.2f precision@100 %.2f", p10, p100)
				if tc.wantTop10 && p10 != 1 {
					t.Errorf("precision@10 = %v, want 1", p10)
				}
				if tc.wantTop10 && p100 < 0.98 {
					t.Errorf("precision@100 = %v, want at least 0.98", p100)
				}
			})
		}
	}
}

// TestAccuracyWindow checks the same bounds in live mode, where keys expire:
// traffic shifts to other keys halfway and the estimates follow the window.
func TestAccuracyWindow(t *testing.T) {
	now := t0
	s := newTestStore(t, DefaultConfig(), func() time.Time { return now })
	slot := s.Config().Window / time.Duration(s.Config().SubWindows)
	z := newZipf(20_000, 1.0, 7)
	perSlot := make([]exactCounts, 0)
	for step := range 30 {
		exact := exactCounts{}
		batch := make([]traffic.Event, 0, 5000)
		for range 5000 {
			r := z.next()
			if step >= 15 {
				r = (r + 10_000) % 20_000 // the hot keys change
			}
			k := keyName(r)
			exact[k]++
			batch = append(batch, traffic.Event{Table: "t", PK: k, Class: traffic.Read, Units: 1})
		}
		if err := s.Put(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		perSlot = append(perSlot, exact)
		now = now.Add(slot)
	}
	// The window holds the last 11 slots put (the 12th is the empty current one).
	window := exactCounts{}
	for _, e := range perSlot[len(perSlot)-11:] {
		for k, v := range e {
			window[k] += v
		}
	}
	r := findTable(t, s.Snapshot(), "t", "").Classes[traffic.Read]
	if r.Events != 11*5000 {
		t.Fatalf("events = %d, want %d", r.Events, 11*5000)
	}
	for _, k := range r.Top {
		truth := window[k.Key]
		if k.Units < truth || k.Units-truth > k.Error+1e-9 {
			t.Errorf("%s: estimate %v, true %v, error %v", k.Key, k.Units, truth, k.Error)
		}
	}
	if p := precisionAt(10, keysOf(r.Top), window); p != 1 {
		t.Errorf("precision@10 = %v, want 1", p)
	}
	if r.Top[0].Key != keyName(10_000) {
		t.Errorf("top key %s, want the new hot key %s", r.Top[0].Key, keyName(10_000))
	}
}

// TestUpperBoundEveryKey checks the invariant behind "never undercounts"
// for every key, not only the reported ones, under heavy churn (a sketch
// of 16 candidates, so keys are evicted and written back all the time; a
// narrow sketch, and a wide one whose noise would not hide a lost
// write-back): a candidate's total, or else the count-min estimate of each
// generation, is at least the key's true units.
func TestUpperBoundEveryKey(t *testing.T) {
	for _, tc := range churnCases {
		window := tc.window
		t.Run(fmt.Sprintf("window=%v/width=%d", window, tc.width), func(t *testing.T) {
			now := t0.Add(30 * time.Second) // the window crosses a generation flip at t0+60s
			cfg := Config{Window: window, Width: tc.width, Depth: tc.depth, Tracked: 10, Candidates: 16}
			s := newTestStore(t, cfg, func() time.Time { return now })
			z := newZipf(2000, 1.0, 11)
			// Exact quanta per key, per count-min generation (live windows
			// flip at t0+60s).
			flip := t0.Add(time.Minute)
			exact := [2]map[string]uint64{{}, {}}
			for i := range 20_000 {
				k := keyName(z.next())
				g := 0
				if window > 0 && !now.Before(flip) {
					g = 1
				}
				exact[g][k] += 2 // 0.5 units
				put(t, s, traffic.Event{Table: "t", PK: k, Class: traffic.Read, Units: 0.5})
				if window > 0 && i%3000 == 2999 {
					now = now.Add(8 * time.Second) // 48 s in all: nothing leaves the window
				}
			}
			v, _ := s.tables.Load(tableID{"t", ""})
			tb := v.(*table)
			checkUpperBounds(t, &tb.classes[traffic.Read], window == 0, exact)
		})
	}
}

// churnCases are the windows and sketch sizes the upper-bound tests run
// under heavy churn: whole files and a live window, a narrow sketch and a
// wide one whose noise would not hide a lost write-back.
var churnCases = []struct {
	window       time.Duration
	width, depth int
}{{0, 64, 2}, {time.Minute, 64, 2}, {0, 4096, 4}, {time.Minute, 4096, 4}}

// checkUpperBounds checks every key of exact, its true quanta per count-min
// generation ([0] the earlier, [1] the later; over whole files [0] only),
// against class cs: a candidate's total, or else each generation's
// count-min estimate, is at least its true quanta.
func checkUpperBounds(t *testing.T, cs *classSketch, wholeFiles bool, exact [2]map[string]uint64) {
	t.Helper()
	keys := map[string]bool{}
	for g := range exact {
		for k := range exact[g] {
			keys[k] = true
		}
	}
	for k := range keys {
		h := xxh3.HashString(k)
		if id := cs.cand.find(h, k); id >= 0 {
			if got, want := cs.cand.rec[id].total, exact[0][k]+exact[1][k]; got < want {
				t.Errorf("candidate %s: total %d under true %d quanta", k, got, want)
			}
			continue
		}
		// Not a candidate: each generation bounds its own traffic.
		cur, prev := cs.cms.estimates(h)
		if wholeFiles {
			cur, prev = cur+prev, 0
		}
		wantCur, wantPrev := exact[1][k], exact[0][k]
		if wholeFiles {
			wantCur, wantPrev = exact[0][k], 0
		}
		if uint64(cur) < wantCur || uint64(prev) < wantPrev {
			t.Errorf("%s: estimates %d/%d under true %d/%d quanta", k, cur, prev, wantCur, wantPrev)
		}
	}
}
