package sketch

import (
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestPeaksLive runs a live window under virtual time: a key's burst is
// its peak second and its class's, the recent seconds are the last three
// complete ones, and the peak leaves with the slot it lies in.
func TestPeaksLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig() // 60 s of 12 × 5 s, 3 recent seconds
		// Start on a slot boundary, so that the seconds below are slot 0's.
		slot := cfg.Window / time.Duration(cfg.SubWindows)
		time.Sleep(slot - time.Duration(time.Now().UnixNano()%int64(slot)))
		s := newTestStore(t, cfg, time.Now)
		start := time.Now()
		perSecond := []float64{10, 30, 5, 0, 7} // units of BURST in seconds 0..4
		for _, u := range perSecond {
			for range int(u) {
				put(t, s, ev("orders", "BURST", traffic.Write, 1), ev("orders", "OTHER", traffic.Write, 0.5))
			}
			time.Sleep(time.Second)
		}
		// Now in second 5: the complete seconds 2, 3, 4 are recent.
		ts := findTable(t, s.Snapshot(), "orders", "")
		w := ts.Classes[traffic.Write]
		burst := reported(t, w, "BURST")
		if burst.PeakUnitsPerSecond != 30 || burst.RecentUnits != 12 || burst.LastSecondUnits != 7 {
			t.Errorf("BURST: peak %v recent %v last %v, want 30, 12 (5+0+7) and 7", burst.PeakUnitsPerSecond, burst.RecentUnits, burst.LastSecondUnits)
		}
		if w.PeakSecondUnits != 45 || w.RecentUnits != 18 || w.LastSecondUnits != 10.5 {
			t.Errorf("class: peak %v recent %v last %v, want 45, 18 and 10.5", w.PeakSecondUnits, w.RecentUnits, w.LastSecondUnits)
		}
		if ts.RecentSpan != 3*time.Second || !ts.LastSecond.Equal(start.Add(4*time.Second)) {
			t.Errorf("recent span %v ending with the second at %v, want 3s and %v", ts.RecentSpan, ts.LastSecond, start.Add(4*time.Second))
		}
		// Then 1 unit a second for a minute: the burst's slot leaves the
		// window, and with it the peak.
		for range 60 {
			put(t, s, ev("orders", "BURST", traffic.Write, 1))
			time.Sleep(time.Second)
		}
		w = findTable(t, s.Snapshot(), "orders", "").Classes[traffic.Write]
		burst = reported(t, w, "BURST")
		if burst.PeakUnitsPerSecond != 1 || w.PeakSecondUnits != 1 || burst.RecentUnits != 3 || burst.LastSecondUnits != 1 {
			t.Errorf("a window later: BURST peak %v recent %v last %v, class peak %v; want 1, 3, 1 and 1", burst.PeakUnitsPerSecond, burst.RecentUnits, burst.LastSecondUnits, w.PeakSecondUnits)
		}
	})
}

// TestPeaksStart checks the recent span of a store that has just started:
// only the complete seconds it watched.
func TestPeaksStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestStore(t, DefaultConfig(), time.Now)
		put(t, s, ev("orders", "K", traffic.Read, 4))
		ts := findTable(t, s.Snapshot(), "orders", "")
		if ts.RecentSpan != 0 || !ts.LastSecond.IsZero() || ts.Classes[traffic.Read].PeakSecondUnits != 4 {
			t.Errorf("in the first second: span %v last %v peak %v, want no complete second and a peak of 4", ts.RecentSpan, ts.LastSecond, ts.Classes[traffic.Read].PeakSecondUnits)
		}
		time.Sleep(time.Second)
		ts = findTable(t, s.Snapshot(), "orders", "")
		if r := ts.Classes[traffic.Read]; ts.RecentSpan != time.Second || r.RecentUnits != 4 || r.LastSecondUnits != 4 {
			t.Errorf("a second later: span %v recent %v last %v, want 1s, 4 and 4", ts.RecentSpan, r.RecentUnits, r.LastSecondUnits)
		}
	})
}

// TestPeaksAnalyze counts seconds by event time over whole files: events
// up to three seconds out of order are counted in their own second, and a
// second file that starts over in time is counted second by second too,
// on its own.
func TestPeaksAnalyze(t *testing.T) {
	s := newTestStore(t, Config{}, nil)
	at := func(sec int, pk string, units float64) traffic.Event {
		e := ev("orders", pk, traffic.Write, units)
		e.Time = t0.Add(time.Duration(sec) * time.Second)
		return e
	}
	// File one: seconds 0..9, K 2 a second and Q 1, then late events.
	var batch []traffic.Event
	for sec := range 10 {
		batch = append(batch, at(sec, "K", 2), at(sec, "Q", 1))
	}
	batch = append(batch, at(8, "K", 10), at(7, "K", 3), at(9, "K", 1))
	put(t, s, batch...)
	w := findTable(t, s.Snapshot(), "orders", "").Classes[traffic.Write]
	if k := reported(t, w, "K"); k.PeakUnitsPerSecond != 12 || w.PeakSecondUnits != 13 {
		t.Errorf("file one: K peak %v, class peak %v; want 12 and 13 (second 8)", k.PeakUnitsPerSecond, w.PeakSecondUnits)
	}
	if k := reported(t, w, "K"); k.RecentUnits != 20 || k.LastSecondUnits != 3 || w.RecentUnits != 23 {
		t.Errorf("file one: K recent %v last %v, class recent %v; want 20 (5+12+3), 3 and 23", k.RecentUnits, k.LastSecondUnits, w.RecentUnits)
	}
	// File two, read after: the same seconds again, K 1 a second but 25 in
	// second 5.
	batch = batch[:0]
	for sec := range 10 {
		u := 1.0
		if sec == 5 {
			u = 25
		}
		batch = append(batch, at(sec, "K", u))
	}
	put(t, s, batch...)
	ts := findTable(t, s.Snapshot(), "orders", "")
	w = ts.Classes[traffic.Write]
	k := reported(t, w, "K")
	// The class adds both files up second by second (second 5: 2+1 of
	// file one and 25); a key's ring starts over at file two, whose second
	// 5 it counts on its own (analyze counts the reported keys' seconds
	// again, exactly, in a second read).
	if k.PeakUnitsPerSecond != 25 || w.PeakSecondUnits != 28 {
		t.Errorf("K peak = %v, class peak %v, want 25 (file two's second 5, counted on its own) and 28 (both files' second 5)", k.PeakUnitsPerSecond, w.PeakSecondUnits)
	}
	// Class seconds 7..9 of both files: 2+1+3 +1, 2+1+10 +1, 2+1+1 +1.
	if w.RecentUnits != 26 || w.LastSecondUnits != 5 {
		t.Errorf("class recent %v last %v, want 26 and 5", w.RecentUnits, w.LastSecondUnits)
	}
	// The recent seconds are 7..9 as file two left them.
	if ts.RecentSpan != 3*time.Second || !ts.LastSecond.Equal(t0.Add(9*time.Second)) || k.RecentUnits != 3 || k.LastSecondUnits != 1 {
		t.Errorf("recent: span %v last second %v, K %v and %v; want 3s, %v, 3 and 1", ts.RecentSpan, ts.LastSecond, k.RecentUnits, k.LastSecondUnits, t0.Add(9*time.Second))
	}
}

// reported returns the reported key pk of a class.
func reported(t *testing.T, cs ClassStats, pk string) KeyStat {
	t.Helper()
	for _, k := range cs.Top {
		if k.Key == pk {
			return k
		}
	}
	t.Fatalf("key %q not reported", pk)
	return KeyStat{}
}

// TestPeaksExact compares every reported key's peak, recent units and
// last second with exact per-second counts, in a live window that slides
// over 100 seconds of random traffic: exact for keys counted exactly
// (Error 0), and for the others never above the truth and below it by at
// most Error. Three configurations: every key a candidate, churn in a
// small candidate set, and 1 s slots.
func TestPeaksExact(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		keys      int
		wantExact bool
	}{
		{"exact", DefaultConfig(), 200, true},
		{"churn", Config{Window: time.Minute, SubWindows: 12, Tracked: 10, Candidates: 16, Width: 64, Depth: 2}, 400, false},
		{"second slots", Config{Window: 20 * time.Second, SubWindows: 20}, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newTestStore(t, tc.cfg, time.Now)
				cfg := s.Config()
				rng := rand.New(rand.NewPCG(uint64(tc.keys), 3))
				z := newZipf(tc.keys, 1.1, 5)
				truth := map[int64]map[string]float64{} // second → key → units
				const seconds = 100
				for range seconds {
					now := time.Now().Unix()
					truth[now] = map[string]float64{}
					// A few Puts at random moments within the second.
					offsets := []time.Duration{0, 250 * time.Millisecond, 600 * time.Millisecond}
					var slept time.Duration
					for _, off := range offsets {
						time.Sleep(off - slept)
						slept = off
						var batch []traffic.Event
						for range rng.IntN(40) {
							k := keyName(z.next())
							u := float64(1 + rng.IntN(4))
							batch = append(batch, ev("t", k, traffic.Read, u))
							truth[now][k] += u
						}
						put(t, s, batch...)
					}
					time.Sleep(time.Second - slept)
				}
				time.Sleep(1500 * time.Millisecond)
				snap := s.Snapshot()
				ts := findTable(t, snap, "t", "")
				from := snap.Start.Unix()
				nowSec := time.Now().Unix()
				r := ts.Classes[traffic.Read]
				var classPeak float64
				for sec, byKey := range truth {
					if sec < from || sec > nowSec {
						continue
					}
					var sum float64
					for _, u := range byKey {
						sum += u
					}
					classPeak = max(classPeak, sum)
				}
				if r.PeakSecondUnits != classPeak {
					t.Errorf("class peak %v, want %v", r.PeakSecondUnits, classPeak)
				}
				if len(r.Top) == 0 {
					t.Fatal("no keys reported")
				}
				exact := 0
				for _, k := range r.Top {
					var peak, recent, last float64
					for sec, byKey := range truth {
						u := byKey[k.Key]
						if sec >= from && sec <= nowSec {
							peak = max(peak, u)
						}
						if sec >= nowSec-int64(cfg.RecentSeconds) && sec < nowSec {
							recent += u
						}
						if sec == nowSec-1 {
							last = u
						}
					}
					for _, c := range []struct {
						what      string
						got, want float64
					}{{"peak", k.PeakUnitsPerSecond, peak}, {"recent", k.RecentUnits, recent}, {"last second", k.LastSecondUnits, last}} {
						if c.got > c.want || c.got < c.want-k.Error || (k.Error == 0 && c.got != c.want) {
							t.Errorf("%s: %s %v, true %v, error %v", k.Key, c.what, c.got, c.want, k.Error)
						}
					}
					if k.Error == 0 {
						exact++
					}
				}
				if tc.wantExact && exact != len(r.Top) {
					t.Errorf("%d of %d keys exact, want all", exact, len(r.Top))
				}
				t.Logf("%d keys reported, %d exact; class peak %v", len(r.Top), exact, classPeak)
			})
		})
	}
}

// TestPeaksPastTwoToThirty sends a key more than 2^30 units in one second
// (a log of many hosts, or made-up input): its busiest second says so
// within 1e-6, as its total does exactly, instead of stopping at
// 1 073 741 823.75, the most 32 bits of quarter units held.
func TestPeaksPastTwoToThirty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestStore(t, DefaultConfig(), time.Now)
		const per, n = traffic.MaxBatchWriteUnits, 300_000 // 300 000 × 16 000 units: 4.8e9
		batch := make([]traffic.Event, 0, 1000)
		for range n / 1000 {
			batch = batch[:0]
			for range 1000 {
				batch = append(batch, ev("orders", "HUGE", traffic.Write, per))
			}
			put(t, s, batch...)
		}
		time.Sleep(time.Second) // the second completes
		w := findTable(t, s.Snapshot(), "orders", "").Classes[traffic.Write]
		huge := reported(t, w, "HUGE")
		want := float64(per) * n
		if huge.Units != want {
			t.Errorf("HUGE: units %v, want %v", huge.Units, want)
		}
		if math.Abs(huge.PeakUnitsPerSecond-want) > want*1e-6 || math.Abs(w.PeakSecondUnits-want) > want*1e-6 {
			t.Errorf("HUGE: busiest second %v, class %v; want %v", huge.PeakUnitsPerSecond, w.PeakSecondUnits, want)
		}
	})
}
