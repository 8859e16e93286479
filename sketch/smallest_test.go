package sketch

import (
	"math/rand/v2"
	"testing"
)

// TestSmallestIsTheScan grows random counts and takes the smallest over
// and over, as Space-Saving does: the heap answers what a scan of every
// count would (the lowest id among equals), through resets.
func TestSmallestIsTheScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 7, 129, 1024} {
		counts := make([]uint64, n)
		var h smallest
		count := func(id int32) uint64 { return counts[id] }
		for step := range 20000 {
			switch r := rng.IntN(100); {
			case r < 60: // events of names in the set
				counts[rng.IntN(n)] += uint64(1 + rng.IntN(3))
			case r < 99: // a new name takes the smallest's place, above it
				got := h.min(n, count)
				want := int32(0)
				for id := range counts {
					if counts[id] < counts[want] {
						want = int32(id)
					}
				}
				if got != want {
					t.Fatalf("n=%d step %d: smallest %d (%d), want %d (%d)", n, step, got, counts[got], want, counts[want])
				}
				counts[got] += uint64(1 + rng.IntN(2))
				h.update(got, counts[got])
			default: // a slot expires: counts fall, the heap starts over
				for id := range counts {
					counts[id] /= 2
				}
				h.reset()
			}
		}
	}
}
