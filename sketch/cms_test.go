package sketch

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/zeebo/xxh3"
)

// TestCountMinBound checks the count-min guarantee on every key of seeded
// Zipf workloads over two generations: no estimate is under the true count,
// and at most a δ fraction (plus four binomial standard deviations) of the
// keys overcount by more than ε·N, in each generation. Then the generations
// flip and expire.
func TestCountMinBound(t *testing.T) {
	for _, tc := range []struct {
		depth, width int
		skew         float64
	}{
		{4, 1024, 0.8}, {4, 1024, 1.2}, {4, 256, 1.0}, {2, 64, 1.0}, {1, 128, 1.0},
	} {
		t.Run(fmt.Sprintf("d%d/w%d/zipf%.1f", tc.depth, tc.width, tc.skew), func(t *testing.T) {
			const keys, perGen = 20_000, 40_000
			m := newGenCMS(tc.depth, tc.width, 0)
			z := newZipf(keys, tc.skew, 42)
			exact := [2][]uint64{make([]uint64, keys), make([]uint64, keys)}
			var n [2]uint64
			for g := range 2 {
				m.advance(int64(g))
				for i := range perGen {
					k := z.next()
					q := uint32(1 + i%3) // weighted updates
					m.add(xxh3.HashString(keyName(k)), q)
					exact[g][k] += uint64(q)
					n[g] += uint64(q)
				}
			}
			eps := math.E / float64(tc.width)
			delta := math.Exp(-float64(tc.depth))
			limit := delta*keys + 4*math.Sqrt(keys*delta*(1-delta))
			var beyond [2]int
			for k := range keys {
				cur, prev := m.estimates(xxh3.HashString(keyName(k)))
				for g, est := range [2]uint32{prev, cur} {
					if uint64(est) < exact[g][k] {
						t.Fatalf("key %d generation %d: estimate %d under true %d", k, g, est, exact[g][k])
					}
					if float64(uint64(est)-exact[g][k]) > eps*float64(n[g]) {
						beyond[g]++
					}
				}
			}
			for g := range beyond {
				if float64(beyond[g]) > limit {
					t.Errorf("generation %d: %d of %d keys overcount by more than ε·N; δ allows %.0f", g, beyond[g], keys, limit)
				}
			}
			// One flip: the current generation becomes the previous one.
			h := xxh3.HashString(keyName(0))
			curBefore, _ := m.estimates(h)
			m.advance(2)
			if cur, prev := m.estimates(h); cur != 0 || prev != curBefore {
				t.Fatalf("after a flip: cur %d prev %d, want 0 and %d", cur, prev, curBefore)
			}
			// A gap of two generations clears both.
			m.advance(4)
			for i, v := range m.cells {
				if v != 0 {
					t.Fatalf("cell %d not cleared after a gap", i)
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
	m := newGenCMS(4, 1024, 0)
	heavy := xxh3.HashString("HEAVY")
	for range 10_000 {
		m.add(heavy, 1)
	}
	m.addPrev(heavy, 10_000)
	const low = 1<<10 - 1
	var twins int
	for i := 0; i < 1<<24 && twins < 3; i++ {
		h := xxh3.HashString(fmt.Sprint("key-", i))
		if h&low != heavy&low || (h>>32)&low != (heavy>>32)&low {
			continue
		}
		twins++
		if cur, prev := m.estimates(h); cur != 0 || prev != 0 {
			t.Errorf("twin key-%d reads %d and %d", i, cur, prev)
		}
	}
	if twins == 0 {
		t.Fatal("found no twin to test")
	}
}

// TestCountMinObserve checks observe, the store's one-pass update, against
// estimates and raise for every depth: the same estimates before the
// update, the same decision against the limit, the same cells after.
func TestCountMinObserve(t *testing.T) {
	for depth := 1; depth <= maxDepth; depth++ {
		t.Run(fmt.Sprint("depth", depth), func(t *testing.T) {
			a, b := newGenCMS(depth, 256, 0), newGenCMS(depth, 256, 0)
			z := newZipf(5000, 1.0, uint64(depth))
			for i := range 50_000 {
				if i == 25_000 {
					a.advance(1)
					b.advance(1)
				}
				h := xxh3.HashString(keyName(z.next()))
				q := uint32(1 + i%4)
				limit := uint64(i % 700)
				cur, prev, added := a.observe(h, q, i%2 == 0, limit)
				wc, wp := b.estimates(h)
				est := uint64(wc) + uint64(q)
				if i%2 == 0 {
					est += uint64(wp)
				}
				if est <= limit {
					b.raise(h, wc, q)
				}
				if cur != wc || prev != wp || added != (est <= limit) {
					t.Fatalf("update %d: observe %d/%d/%v, want %d/%d/%v", i, cur, prev, added, wc, wp, est <= limit)
				}
			}
			if !slices.Equal(a.cells, b.cells) {
				t.Fatal("cells differ")
			}
		})
	}
}
