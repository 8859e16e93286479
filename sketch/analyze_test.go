package sketch

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestExactSecondsAnyOrder: over whole files a class's busiest second,
// recent units and last second are the sums of its seconds whatever the
// order of the events: in time order, shuffled, split by host into stores
// merged afterwards; 600 seconds cross blocks of 256.
func TestExactSecondsAnyOrder(t *testing.T) {
	for _, start := range []time.Time{t0, t0.Add(100 * time.Second)} {
		// Four hosts, each writing its share of every second; second 37 of
		// each 60 bursts to 40 units a host.
		var hosts [4][]traffic.Event
		for sec := range 600 {
			for h := range hosts {
				u := 1.0 + float64(h)*0.5
				if sec%60 == 37 {
					u = 40
				}
				e := ev("orders", fmt.Sprintf("K%d", sec%7), traffic.Write, u)
				e.Time = start.Add(time.Duration(sec)*time.Second + 300*time.Millisecond)
				hosts[h] = append(hosts[h], e)
				r := ev("orders", "R", traffic.Read, 0.5)
				r.Time = e.Time
				hosts[h] = append(hosts[h], r)
			}
		}
		var ordered []traffic.Event
		for sec := range 600 {
			for h := range hosts {
				ordered = append(ordered, hosts[h][2*sec:2*sec+2]...)
			}
		}
		stats := func(s *Store) (ClassStats, ClassStats) {
			ts := findTable(t, s.Snapshot(), "orders", "")
			return ts.Classes[traffic.Read], ts.Classes[traffic.Write]
		}
		one := newTestStore(t, Config{Window: 0}, nil)
		putAll(t, one, ordered)
		r, w := stats(one)
		if w.PeakSecondUnits != 160 || r.PeakSecondUnits != 2 {
			t.Fatalf("in order: peaks %v and %v, want 160 WCU and 2 RCU", w.PeakSecondUnits, r.PeakSecondUnits)
		}
		if w.LastSecondUnits != 1+1.5+2+2.5 || w.RecentUnits != 3*7 || r.RecentUnits != 6 {
			t.Fatalf("in order: last %v recent %v and %v, want 7, 21 and 6", w.LastSecondUnits, w.RecentUnits, r.RecentUnits)
		}
		shuffled := append([]traffic.Event(nil), ordered...)
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		sh := newTestStore(t, Config{Window: 0}, nil)
		putAll(t, sh, shuffled)
		merged := newTestStore(t, Config{Window: 0}, nil)
		for h := range hosts {
			part := newTestStore(t, Config{Window: 0}, nil)
			putAll(t, part, hosts[h])
			if err := merged.Merge(part); err != nil {
				t.Fatal(err)
			}
		}
		cat := newTestStore(t, Config{Window: 0}, nil)
		for h := range hosts {
			putAll(t, cat, hosts[h])
		}
		for name, s := range map[string]*Store{"shuffled": sh, "merged": merged, "cat": cat} {
			gr, gw := stats(s)
			for _, c := range []struct {
				name      string
				got, want ClassStats
			}{{"read", gr, r}, {"write", gw, w}} {
				if c.got.PeakSecondUnits != c.want.PeakSecondUnits || c.got.RecentUnits != c.want.RecentUnits ||
					c.got.LastSecondUnits != c.want.LastSecondUnits || c.got.Units != c.want.Units {
					t.Errorf("%v %s %s: peak %v recent %v last %v units %v; in order %v %v %v %v", start, name, c.name,
						c.got.PeakSecondUnits, c.got.RecentUnits, c.got.LastSecondUnits, c.got.Units,
						c.want.PeakSecondUnits, c.want.RecentUnits, c.want.LastSecondUnits, c.want.Units)
				}
			}
		}
	}
}
