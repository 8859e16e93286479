package sketch

import (
	"math"
	"math/bits"
)

// windowCMS is a count-min sketch per slot of the window, all with the same
// hash functions, plus their running cell-wise sum.
//
// Each update goes to the current slot with conservative update: only the
// cells below the new estimate rise, to it. The sum gets the same increments,
// so it always equals the sum of the slot sketches and expiring a slot
// subtracts that slot's cells: O(Depth × Width) per slot, whatever the
// traffic.
//
// The window estimate of a key, min over rows of the summed cells, is at
// least the sum over slots of the per-slot estimates, which are each at
// least the key's true units in the slot. It overcounts by more than
// ε = e/Width of the window's units with probability at most δ = e^-Depth
// (Cormode & Muthukrishnan): the summed cells form a count-min sketch of the
// whole window, and conservative update only lowers cells.
//
// Counters are uint32 quanta (quarter units) per slot, saturating at 2^32-1
// (about 10^9 units of one key in one slot); the sum is uint64.
type windowCMS struct {
	depth, width int
	shift        uint32 // 32 - log2(width)
	slots        int
	cells        []uint32 // [slot][row][col]
	sum          []uint64 // [row][col]
}

func newWindowCMS(slots, depth, width int) *windowCMS {
	return &windowCMS{
		depth: depth,
		width: width,
		shift: uint32(32 - bits.TrailingZeros(uint(width))),
		slots: slots,
		cells: make([]uint32, slots*depth*width),
		sum:   make([]uint64, depth*width),
	}
}

// rows computes the column of each row from one 64-bit hash by double
// hashing (Kirsch & Mitzenmacher): g_j = h1 + j·h2 mod 2^32 with h1, h2
// the two halves of the hash, and the column is the top log2(Width) bits of
// g_j. Taking the top bits matters: the low bits of g_j depend only on the
// low bits of h1 and h2, so two keys equal there (1 in 2^20 at width 1024,
// so every heavy key has a twin among a million keys) would collide in
// every row. The top bits depend on all 64.
func (m *windowCMS) rows(h uint64, idx *[8]uint32) {
	h1 := uint32(h)
	h2 := uint32(h>>32) | 1
	for j := 0; j < m.depth; j++ {
		idx[j] = (h1 + uint32(j)*h2) >> m.shift
	}
}

// add adds q quanta for the key hashed to h in slot s and returns the key's
// estimate in that slot and in the whole window, both after the update.
func (m *windowCMS) add(s int, h uint64, q uint32) (slotEst uint32, winEst uint64) {
	var idx [8]uint32
	m.rows(h, &idx)
	w := m.width
	base := s * m.depth * w
	cells := m.cells[base : base+m.depth*w]
	sum := m.sum[:m.depth*w]
	cur := uint32(math.MaxUint32)
	for j := 0; j < m.depth; j++ {
		cur = min(cur, cells[j*w+int(idx[j])])
	}
	next := cur + q
	if next < cur {
		next = math.MaxUint32
	}
	winEst = math.MaxUint64
	for j := 0; j < m.depth; j++ {
		k := j*w + int(idx[j])
		c := cells[k]
		n := max(c, next)
		cells[k] = n
		v := sum[k] + uint64(n-c)
		sum[k] = v
		winEst = min(winEst, v)
	}
	return next, winEst
}

// slotEstimate returns the key's estimate in slot s.
func (m *windowCMS) slotEstimate(s int, h uint64) uint32 {
	var idx [8]uint32
	m.rows(h, &idx)
	base := s * m.depth * m.width
	est := uint32(math.MaxUint32)
	for j := 0; j < m.depth; j++ {
		est = min(est, m.cells[base+j*m.width+int(idx[j])])
	}
	return est
}

// windowEstimate returns the key's estimate over the window.
func (m *windowCMS) windowEstimate(h uint64) uint64 {
	var idx [8]uint32
	m.rows(h, &idx)
	est := uint64(math.MaxUint64)
	for j := 0; j < m.depth; j++ {
		est = min(est, m.sum[j*m.width+int(idx[j])])
	}
	return est
}

// clear expires slot s.
func (m *windowCMS) clear(s int) {
	n := m.depth * m.width
	cells := m.cells[s*n : s*n+n]
	sum := m.sum[:n]
	for k, c := range cells {
		sum[k] -= uint64(c)
		cells[k] = 0
	}
}
