package sketch

import (
	"math"
	"math/bits"
	"slices"
)

// genCMS is a count-min sketch with conservative update over two tumbling
// generations of one window each: cur counts the current generation,
// prev the one before. A key's traffic in the sliding window is at most
// est(cur) + est(prev), since the window lies within the two generations;
// traffic older than two windows is never counted. Expiry is one flip per
// window (prev := cur, cur := 0), whatever the traffic.
//
// The sketch only decides which keys become candidates and seeds their
// counts (see candidates); the candidates' own counts follow the window slot
// by slot. Two generations of a wide sketch beat a ring of one narrow
// sketch per slot at the same memory: what limits the heavy hitters is the
// count-min noise that new candidates bring in, and it falls with the
// width.
//
// Each generation is a count-min sketch: a key's estimate never undercounts
// and overcounts by more than ε = e/Width of the generation's units with
// probability at most δ = e^-Depth (Cormode & Muthukrishnan); conservative
// update (raise only the cells below the new estimate, to it) only lowers
// the cells. Counters are uint32 quanta (quarter units), saturating at
// 2^32-1: about 10^9 units in one cell in one window.
type genCMS struct {
	depth, width int
	shift        uint32 // 32 - log2(width)
	gen          int64
	// cells holds both generations interleaved, so that a key's current
	// and previous counter share a cache line: cell k of the current
	// generation is cells[2k+cur], of the previous one cells[2k+1-cur].
	cells []uint32
	cur   int
}

func newGenCMS(depth, width int, gen int64) *genCMS {
	return &genCMS{
		depth: depth,
		width: width,
		shift: uint32(32 - bits.TrailingZeros(uint(width))),
		gen:   gen,
		cells: make([]uint32, 2*depth*width),
	}
}

// rows computes the cell of each row from one 64-bit hash by double
// hashing (Kirsch & Mitzenmacher): g_j = h1 + j·h2 mod 2^32 with h1, h2
// the two halves of the hash, and the column is the top log2(Width) bits of
// g_j. Taking the top bits matters: the low bits of g_j depend only on the
// low bits of h1 and h2, so two keys equal there (1 in 2^20 at width 1024,
// so every heavy key has a twin among a million keys) would collide in
// every row. The top bits depend on all 64.
func (m *genCMS) rows(h uint64, idx *[8]uint32) {
	h1 := uint32(h)
	h2 := uint32(h>>32) | 1
	for j := 0; j < m.depth; j++ {
		idx[j] = 2 * (uint32(j*m.width) + (h1+uint32(j)*h2)>>m.shift)
	}
}

// add adds q quanta for the key hashed to h to the current generation and
// returns the key's estimates in the current generation, after the update,
// and in the previous one.
func (m *genCMS) add(h uint64, q uint32) (cur, prev uint32) {
	var idx [8]uint32
	m.rows(h, &idx)
	cells := m.cells
	c, p := m.cur, 1-m.cur
	cur, prev = math.MaxUint32, math.MaxUint32
	for j := 0; j < m.depth; j++ {
		k := int(idx[j])
		cur = min(cur, cells[k+c])
		prev = min(prev, cells[k+p])
	}
	next := cur + q
	if next < cur {
		next = math.MaxUint32
	}
	for j := 0; j < m.depth; j++ {
		k := int(idx[j]) + c
		cells[k] = max(cells[k], next)
	}
	return next, prev
}

// lookup returns the key's cells and its estimates in the current and the
// previous generation, before any update; raise then adds q to the current
// generation with conservative update. Split so that a key that becomes a
// candidate on this access is not added at all (the candidate counts it).
func (m *genCMS) lookup(h uint64) (idx [8]uint32, cur, prev uint32) {
	m.rows(h, &idx)
	c, p := m.cur, 1-m.cur
	cur, prev = math.MaxUint32, math.MaxUint32
	for j := 0; j < m.depth; j++ {
		k := int(idx[j])
		cur = min(cur, m.cells[k+c])
		prev = min(prev, m.cells[k+p])
	}
	return idx, cur, prev
}

// raise adds q quanta to the key at idx, whose current estimate is cur.
func (m *genCMS) raise(idx *[8]uint32, cur, q uint32) {
	next := cur + q
	if next < cur {
		next = math.MaxUint32
	}
	c := m.cur
	for j := 0; j < m.depth; j++ {
		k := int(idx[j]) + c
		m.cells[k] = max(m.cells[k], next)
	}
}

// addPrev adds q quanta for the key hashed to h to the previous generation,
// with conservative update.
func (m *genCMS) addPrev(h uint64, q uint32) {
	var idx [8]uint32
	m.rows(h, &idx)
	p := 1 - m.cur
	est := uint32(math.MaxUint32)
	for j := 0; j < m.depth; j++ {
		est = min(est, m.cells[int(idx[j])+p])
	}
	next := est + q
	if next < est {
		next = math.MaxUint32
	}
	for j := 0; j < m.depth; j++ {
		k := int(idx[j]) + p
		m.cells[k] = max(m.cells[k], next)
	}
}

// estimates returns the key's estimates in the current and the previous
// generation.
func (m *genCMS) estimates(h uint64) (cur, prev uint32) {
	var idx [8]uint32
	m.rows(h, &idx)
	cur, prev = math.MaxUint32, math.MaxUint32
	for j := 0; j < m.depth; j++ {
		k := int(idx[j])
		cur = min(cur, m.cells[k+m.cur])
		prev = min(prev, m.cells[k+1-m.cur])
	}
	return cur, prev
}

// noiseProbes is the number of never-seen keys probed for the noise floor.
const noiseProbes = 31

// noise returns the median estimates of keys never seen, in the current
// and the previous generation: the count-min noise a new key's estimate
// carries. Probes are fixed pseudo-random hashes (splitmix64).
func (m *genCMS) noise() (cur, prev uint32) {
	var c, p [noiseProbes]uint32
	x := uint64(0x2545f4914f6cdd1d)
	for i := range c {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		c[i], p[i] = m.estimates(z ^ (z >> 31))
	}
	slices.Sort(c[:])
	slices.Sort(p[:])
	return c[noiseProbes/2], p[noiseProbes/2]
}

// advance moves to generation gen: the current generation becomes the
// previous one, or both are cleared after a gap.
func (m *genCMS) advance(gen int64) {
	switch {
	case gen <= m.gen:
		return
	case gen == m.gen+1:
		m.cur = 1 - m.cur
		for k := m.cur; k < len(m.cells); k += 2 {
			m.cells[k] = 0
		}
	default:
		clear(m.cells)
	}
	m.gen = gen
}
