package sketch

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/axiomhq/hyperloglog"
	"github.com/zeebo/xxh3"
)

// TestDistinctExactBelow1000 checks that the distinct count is exact up to
// 1000 keys, over one slot and over keys spread across slots with repeats
// (the library's sparse mode alone reads 998 for 999 keys).
func TestDistinctExactBelow1000(t *testing.T) {
	for _, slots := range []int{1, 12} {
		d := newDistinct(slots, DefaultHLLPrecision)
		for n := 1; n <= exactDistinct; n++ {
			h := xxh3.HashString(fmt.Sprintf("key-%d", n))
			d.add(n%slots, h)
			d.add((n+1)%slots, h) // the same key in another slot counts once
			if n%37 == 0 || n > 990 {
				if got := d.estimate(); got != uint64(n) {
					t.Fatalf("%d slots: %d keys read %d", slots, n, got)
				}
			}
		}
	}
}

// TestDistinctError checks the HyperLogLog range: within 2 % (about 2.5
// standard errors at precision 14) at 10 000 and 200 000 keys, whether the
// keys sit in one slot or are spread over the window, and that expiring
// slots removes their keys.
func TestDistinctError(t *testing.T) {
	for _, n := range []int{10_000, 200_000} {
		for _, slots := range []int{1, 12} {
			t.Run(fmt.Sprintf("n%d/slots%d", n, slots), func(t *testing.T) {
				d := newDistinct(slots, DefaultHLLPrecision)
				for i := range n {
					d.add(i%slots, xxh3.HashString(fmt.Sprintf("key-%d", i)))
				}
				got := d.estimate()
				if e := math.Abs(float64(got)-float64(n)) / float64(n); e > 0.02 {
					t.Fatalf("%d keys read %d (error %.2f %%)", n, got, 100*e)
				}
				for s := range slots {
					d.clear(s)
				}
				if got := d.estimate(); got != 0 {
					t.Fatalf("after expiry: %d", got)
				}
			})
		}
	}
}

// TestDistinctRegistersAsLibrary checks that the registers a slot keeps
// are the library's: the same hashes inserted into a dense
// axiomhq/hyperloglog sketch give the same encoding and the same
// estimate, at every precision the library takes, for a slot, a merge of
// slots (sketch) and a merge of stores (absorb).
func TestDistinctRegistersAsLibrary(t *testing.T) {
	for p := 4; p <= 18; p++ {
		for _, n := range []int{exactDistinct + 1, 20_000, 300_000} {
			want, _ := hyperloglog.NewSketch(uint8(p), false)
			d := newDistinct(3, p)
			o := newDistinct(3, p)
			for i := range n {
				h := xxh3.HashString(fmt.Sprintf("p%d-key-%d", p, i))
				if i == 7 {
					h = 3 << (64 - p) // the largest rank, of register 3
				}
				want.InsertHash(h)
				if i%5 == 0 {
					o.add(i%3, h)
				} else {
					d.add(i%3, h)
				}
			}
			d.absorb(o)
			got := d.sketch()
			wb, _ := want.MarshalBinary()
			gb, err := got.MarshalBinary()
			if err != nil || !bytes.Equal(gb, wb) {
				t.Fatalf("precision %d, %d keys: encoding differs from the library's (%v)", p, n, err)
			}
			if g, w := got.Estimate(), want.Estimate(); g != w {
				t.Fatalf("precision %d, %d keys: estimate %d, library %d", p, n, g, w)
			}
		}
	}
}
