package sketch

import (
	"fmt"
	"math"
	"testing"

	"github.com/zeebo/xxh3"
)

// TestCountMinBound checks the count-min guarantee on every key of seeded
// Zipf workloads spread over several slots: no estimate is under the true
// count, and at most a δ fraction (plus four binomial standard deviations)
// of the keys overcount by more than ε·N, per slot and over the window.
func TestCountMinBound(t *testing.T) {
	for _, tc := range []struct {
		depth, width int
		skew         float64
	}{
		{4, 1024, 0.8}, {4, 1024, 1.2}, {4, 256, 1.0}, {2, 64, 1.0}, {1, 128, 1.0},
	} {
		t.Run(fmt.Sprintf("d%d/w%d/zipf%.1f", tc.depth, tc.width, tc.skew), func(t *testing.T) {
			const slots, keys, perSlot = 4, 20_000, 20_000
			m := newWindowCMS(slots, tc.depth, tc.width)
			z := newZipf(keys, tc.skew, 42)
			exact := make([][]uint64, slots)
			window := make([]uint64, keys)
			var n uint64
			for s := range slots {
				exact[s] = make([]uint64, keys)
				for i := range perSlot {
					k := z.next()
					q := uint32(1 + i%3) // weighted updates
					m.add(s, xxh3.HashString(keyName(k)), q)
					exact[s][k] += uint64(q)
					window[k] += uint64(q)
					n += uint64(q)
				}
			}
			eps := math.E / float64(tc.width)
			delta := math.Exp(-float64(tc.depth))
			limit := delta*keys + 4*math.Sqrt(keys*delta*(1-delta))
			var beyond int
			for k := range keys {
				h := xxh3.HashString(keyName(k))
				est := m.windowEstimate(h)
				if est < window[k] {
					t.Fatalf("key %d: window estimate %d under true %d", k, est, window[k])
				}
				var sum uint64
				for s := range slots {
					e := uint64(m.slotEstimate(s, h))
					if e < exact[s][k] {
						t.Fatalf("key %d slot %d: estimate %d under true %d", k, s, e, exact[s][k])
					}
					sum += e
				}
				if sum > est {
					t.Fatalf("key %d: slot estimates sum to %d, over the window estimate %d", k, sum, est)
				}
				if float64(est-window[k]) > eps*float64(n) {
					beyond++
				}
			}
			if float64(beyond) > limit {
				t.Errorf("%d of %d keys overcount by more than ε·N; δ allows %.0f", beyond, keys, limit)
			}
			// Expiring every slot empties the running sum.
			for s := range slots {
				m.clear(s)
			}
			for i, v := range m.sum {
				if v != 0 {
					t.Fatalf("sum[%d] = %d after expiring every slot", i, v)
				}
			}
		})
	}
}

// TestCountMinNoTwins guards the column derivation: a key whose hash halves
// agree with a heavy key's in their low bits must not share all its cells.
// (With columns taken from the low bits, such twins exist for 1 in 2^20
// keys at width 1024, and each reads as heavy as the heavy key.)
func TestCountMinNoTwins(t *testing.T) {
	m := newWindowCMS(1, 4, 1024)
	heavy := xxh3.HashString("HEAVY")
	for range 10_000 {
		m.add(0, heavy, 1)
	}
	const low = 1<<10 - 1
	var twins int
	for i := 0; i < 1<<24 && twins < 3; i++ {
		h := xxh3.HashString(fmt.Sprint("key-", i))
		if h&low != heavy&low || (h>>32)&low != (heavy>>32)&low {
			continue
		}
		twins++
		if est := m.windowEstimate(h); est != 0 {
			t.Errorf("twin key-%d reads %d", i, est)
		}
	}
	if twins == 0 {
		t.Fatal("found no twin to test")
	}
}
