package sketch

import (
	"math"
	"slices"
	"unsafe"
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
	gen          int64
	// cells holds both generations interleaved, so that a key's current
	// and previous counter share a cache line: cell k of the current
	// generation is cells[2k+cur], of the previous one cells[2k+1-cur].
	cells []uint32
	cur   int
	// written says which halves of cells (indexed like cur) have had
	// anything added since they were last cleared.
	written [2]bool
}

func newGenCMS(depth, width int, gen int64) *genCMS {
	return &genCMS{
		depth: depth,
		width: width,
		gen:   gen,
		cells: make([]uint32, 2*depth*width),
	}
}

// Each row j's column is the top log2(Width) bits of g_j = h1 + j·h2 mod
// 2^32, h1 and h2 the two halves of the key's 64-bit hash (double hashing,
// Kirsch & Mitzenmacher), computed as (g_j · Width) >> 32 so that no
// variable shift is needed. Taking the top bits matters: the low bits of
// g_j depend only on the low bits of h1 and h2, so two keys equal there (1
// in 2^20 at width 1024, so every heavy key has a twin among a million
// keys) would collide in every row. The top bits depend on all 64.
//
// A row's two generations are one pair of cells, so each row costs one
// bounds check and one cache line.

// estimates returns the key's estimates in the current and the previous
// generation: the smallest of its cells in each.
//
// The cells are read without bounds checks: a row's column is below Width
// by construction ((g · Width) >> 32 with g < 2^32), so every index is
// below 2·Depth·Width, the length of cells.
func (m *genCMS) estimates(h uint64) (cur, prev uint32) {
	g, h2 := uint32(h), uint32(h>>32)|1
	w := uint64(m.width)
	base := unsafe.Pointer(unsafe.SliceData(m.cells))
	rowBytes := 8 * uintptr(m.width) // a row of pairs of uint32
	// a and b are the smallest cells of each half of the pairs.
	a, b := uint32(math.MaxUint32), uint32(math.MaxUint32)
	for j := 0; j < m.depth; j++ {
		p := (*[2]uint32)(unsafe.Add(base, uintptr(j)*rowBytes+8*uintptr(uint64(g)*w>>32)))
		a = min(a, p[0])
		b = min(b, p[1])
		g += h2
	}
	if m.cur == 0 {
		return a, b
	}
	return b, a
}

// raiseTo raises the key's cells of generation half (m.cur or 1-m.cur) to
// at least next: the conservative update, whose next is the key's estimate
// plus what it adds. Indexes as estimates does.
func (m *genCMS) raiseTo(h uint64, half int, next uint32) {
	g, h2 := uint32(h), uint32(h>>32)|1
	w := uint64(m.width)
	half &= 1
	base := unsafe.Add(unsafe.Pointer(unsafe.SliceData(m.cells)), 4*half)
	rowBytes := 8 * uintptr(m.width)
	for j := 0; j < m.depth; j++ {
		p := (*uint32)(unsafe.Add(base, uintptr(j)*rowBytes+8*uintptr(uint64(g)*w>>32)))
		*p = max(*p, next)
		g += h2
	}
	m.written[half] = true
}

// observe is the count-min side of an access of q quanta by a key that is
// not a candidate: it returns the key's estimates before the access and,
// unless its window estimate cur+q (plus prev when withPrev) exceeds limit,
// adds q to the current generation with conservative update, reporting
// whether it did. One pass computes the columns for both steps.
func (m *genCMS) observe(h uint64, q uint32, withPrev bool, limit uint64) (cur, prev uint32, added bool) {
	g, h2 := uint32(h), uint32(h>>32)|1
	w := uint64(m.width)
	base := unsafe.Pointer(unsafe.SliceData(m.cells))
	rowBytes := 8 * uintptr(m.width)
	// The columns' byte offsets: four rows in registers, the rest (depth
	// 5 to 8) in an array.
	var o0, o1, o2, o3 uintptr
	var rest [maxDepth - 4]uintptr
	a, b := uint32(math.MaxUint32), uint32(math.MaxUint32)
	j := 0
	if m.depth >= 4 {
		o0 = 8 * uintptr(uint64(g)*w>>32)
		g += h2
		o1 = rowBytes + 8*uintptr(uint64(g)*w>>32)
		g += h2
		o2 = 2*rowBytes + 8*uintptr(uint64(g)*w>>32)
		g += h2
		o3 = 3*rowBytes + 8*uintptr(uint64(g)*w>>32)
		g += h2
		p0, p1 := (*[2]uint32)(unsafe.Add(base, o0)), (*[2]uint32)(unsafe.Add(base, o1))
		p2, p3 := (*[2]uint32)(unsafe.Add(base, o2)), (*[2]uint32)(unsafe.Add(base, o3))
		a = min(p0[0], p1[0], p2[0], p3[0])
		b = min(p0[1], p1[1], p2[1], p3[1])
		j = 4
	}
	for ; j < m.depth; j++ {
		o := uintptr(j)*rowBytes + 8*uintptr(uint64(g)*w>>32)
		rest[(j-4)&(maxDepth-5)] = o
		p := (*[2]uint32)(unsafe.Add(base, o))
		a = min(a, p[0])
		b = min(b, p[1])
		g += h2
	}
	half := m.cur & 1
	cur, prev = a, b
	if half != 0 {
		cur, prev = b, a
	}
	est := uint64(cur) + uint64(q)
	if withPrev {
		est += uint64(prev)
	}
	if est > limit {
		return cur, prev, false
	}
	next := satAdd(cur, q)
	cb := unsafe.Add(base, 4*half)
	raise := func(o uintptr) {
		p := (*uint32)(unsafe.Add(cb, o))
		*p = max(*p, next)
	}
	if m.depth >= 4 {
		raise(o0)
		raise(o1)
		raise(o2)
		raise(o3)
		for j := 4; j < m.depth; j++ {
			raise(rest[(j-4)&(maxDepth-5)])
		}
	} else {
		// Fewer than four rows: their offsets are the loop's.
		g = uint32(h)
		for j := 0; j < m.depth; j++ {
			raise(uintptr(j)*rowBytes + 8*uintptr(uint64(g)*w>>32))
			g += h2
		}
	}
	m.written[half] = true
	return cur, prev, true
}

// add adds q quanta for the key hashed to h to the current generation, with
// conservative update.
func (m *genCMS) add(h uint64, q uint32) {
	cur, _ := m.estimates(h)
	m.raise(h, cur, q)
}

// raise adds q quanta to the current generation for the key hashed to h,
// whose current estimate is cur. Split from estimates so that a key that
// becomes a candidate on this access is not added at all (the candidate
// counts it).
func (m *genCMS) raise(h uint64, cur, q uint32) {
	m.raiseTo(h, m.cur, satAdd(cur, q))
}

// addPrev adds q quanta for the key hashed to h to the previous generation,
// with conservative update.
func (m *genCMS) addPrev(h uint64, q uint32) {
	_, prev := m.estimates(h)
	m.raiseTo(h, 1-m.cur, satAdd(prev, q))
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
		if m.written[m.cur] {
			for k := m.cur; k < len(m.cells); k += 2 {
				m.cells[k] = 0
			}
		}
		m.written[m.cur] = false
	default:
		clear(m.cells)
		m.written = [2]bool{}
	}
	m.gen = gen
}

// empty reports whether both generations are all zero.
func (m *genCMS) empty() bool { return !m.written[0] && !m.written[1] }

// absorb adds o's cells, generation by generation (both are at the same
// generation).
func (m *genCMS) absorb(o *genCMS) {
	for g := range 2 { // 0: current, 1: previous
		mh, oh := (m.cur+g)&1, (o.cur+g)&1
		if !o.written[oh] {
			continue
		}
		for k := 0; k < len(m.cells); k += 2 {
			m.cells[k+mh] = satAdd(m.cells[k+mh], o.cells[k+oh])
		}
		m.written[mh] = true
	}
}
