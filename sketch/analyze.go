package sketch

import (
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Per-second class units over whole files (analyze mode, Config.Window ==
// 0). A live window sees its seconds in about the order they happen; whole
// files do not: four hosts' logs of the same hour read one after the
// other, the same lines shuffled, or parts of one file counted by several
// workers. So in analyze mode every table keeps each class's units of
// every second of its input, in blocks of secBlockLen seconds made as
// traffic reaches them: the busiest second, the recent units and the last
// second's units are then read from the sums, whatever the order the
// events came in, and stores merge by adding the blocks (Store.Merge).
//
// It costs 4 KiB a table for each block of 256 seconds that holds
// traffic: 16 bytes a table per second of input (58 KB an hour, 1.4 MB a
// day). Events without a time count in the totals and in no second.

// secBlockBits sizes a block: 256 seconds.
const (
	secBlockBits = 8
	secBlockLen  = 1 << secBlockBits
	secBlockMask = secBlockLen - 1
)

// secBlock is both classes' units in secBlockLen consecutive seconds.
type secBlock [traffic.NumClasses][secBlockLen]float64

// exactSeconds is a table's per-second units by class, over whole files.
type exactSeconds struct {
	blocks map[int64]*secBlock // by second >> secBlockBits
	// lastN and last cache the block of the previous add: events come in
	// runs of close seconds.
	lastN int64
	last  *secBlock
}

func newExactSeconds() *exactSeconds {
	return &exactSeconds{blocks: map[int64]*secBlock{}}
}

// add adds units of class c in second sec.
func (x *exactSeconds) add(c traffic.Class, sec int64, units float64) {
	n := sec >> secBlockBits
	if x.last == nil || n != x.lastN {
		x.block(n)
	}
	x.last[c][sec&secBlockMask] += units
}

// block makes block n the cached one, creating it.
//
//go:noinline
func (x *exactSeconds) block(n int64) {
	b := x.blocks[n]
	if b == nil {
		b = new(secBlock)
		x.blocks[n] = b
	}
	x.lastN, x.last = n, b
}

// at returns class c's units in second sec.
func (x *exactSeconds) at(c traffic.Class, sec int64) float64 {
	b := x.blocks[sec>>secBlockBits]
	if b == nil {
		return 0
	}
	return b[c][sec&secBlockMask]
}

// fill sets the per-second figures of each class of ts from the sums:
// the busiest second of the input, the units of the recent span of sw and
// of its last second.
func (x *exactSeconds) fill(ts *TableSnapshot, sw *secWindow) {
	for c := range ts.Classes {
		st := &ts.Classes[c]
		var peak float64
		for _, b := range x.blocks {
			for _, v := range b[c] {
				peak = max(peak, v)
			}
		}
		var recent float64
		for s := sw.recentFrom; s < sw.ref; s++ {
			recent += x.at(traffic.Class(c), s)
		}
		st.PeakSecondUnits, st.RecentUnits = peak, recent
		st.LastSecondUnits = x.at(traffic.Class(c), sw.ref-1)
	}
}

// clone copies the blocks.
func (x *exactSeconds) clone() *exactSeconds {
	if x == nil {
		return nil
	}
	c := &exactSeconds{blocks: make(map[int64]*secBlock, len(x.blocks))}
	for n, b := range x.blocks {
		nb := *b
		c.blocks[n] = &nb
	}
	return c
}

// absorb adds o's seconds, taking over its blocks (o is a clone, not used
// afterwards).
func (x *exactSeconds) absorb(o *exactSeconds) {
	if o == nil {
		return
	}
	for n, ob := range o.blocks {
		b := x.blocks[n]
		if b == nil {
			x.blocks[n] = ob
			continue
		}
		for c := range b {
			for i, v := range ob[c] {
				b[c][i] += v
			}
		}
	}
}
