package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/hotkeyd/hotkeyd/internal/plural"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// The keys a class lists, the same on one core or on all. A class with
// more keys than the store's candidates (sketch.ClassStats.Overflowed)
// keeps the heaviest as the sketch met them: which light keys it holds,
// and their estimates, depend on the order of the events and on how the
// inputs were cut into parts. So once the inputs are read, the keys such
// a class ranks are counted again exactly (their units, events and sort
// keys, from the spill like their seconds: keyseconds.go), every event of
// the class is added up in a count-min sketch of its own (tailSketch,
// which adds up the same whatever the order), and the class lists only
// the keys whose ranking that proves: the heaviest i keys (by exact
// units, then by key) such that the i-th has more units than any key
// outside them could have, by the tail sketch with their exact units
// taken out, for the largest such i up to the keys ranked. Every figure
// then is a function of the input's events alone: the keys listed are the
// heaviest of the input, exactly counted; a group of keys of equal units
// is listed whole or not at all; and a key whose units are within the
// counting's error of keys not listed is not listed. When that leaves a
// class fewer keys than the report lists (--top), a note says so, with
// the most units a key not listed can have had (unrankedNote).

// tailRows and tailWidth size a tailSketch: 4 rows of 2048 counters, 32
// KiB a class, a key's bound over the noise of about 1/2048 of the
// class's units.
const (
	tailRows  = 4
	tailWidth = 2048
)

// rankedClass names one class of one table.
type rankedClass struct {
	table, index string
	class        traffic.Class
}

// tailSketch is a count-min sketch of every event of a class in quarter
// units: its counters add up (saturating) whatever the order of the
// events, so what it bounds is the same on one core or on all.
type tailSketch struct {
	cells [tailRows * tailWidth]uint32
}

// cell returns the index of row r's counter of a key of hash h.
func tailCell(h uint64, r int) int {
	lo, hi := uint32(h), uint32(h>>32)|1
	return r*tailWidth + int((lo+uint32(r)*hi)&(tailWidth-1))
}

// add adds q quarter units of a key of xxh3 hash h.
func (s *tailSketch) add(h uint64, q uint32) {
	for r := range tailRows {
		p := &s.cells[tailCell(h, r)]
		*p = satAdd(*p, q)
	}
}

// absorb adds o's counters.
func (s *tailSketch) absorb(o *tailSketch) {
	for i, v := range o.cells {
		s.cells[i] = satAdd(s.cells[i], v)
	}
}

// overflowed returns the classes of snap whose keys overflowed the
// store's candidates.
func overflowed(snap sketch.Snapshot) map[rankedClass]struct{} {
	out := map[rankedClass]struct{}{}
	for _, ts := range snap.Tables {
		for c, cs := range ts.Classes {
			if cs.Overflowed {
				out[rankedClass{ts.Table, ts.Index, traffic.Class(c)}] = struct{}{}
			}
		}
	}
	return out
}

// addRanked adds to want every ranked key of the classes of tails.
func addRanked(want map[rankedKey]struct{}, snap sketch.Snapshot, tails map[rankedClass]struct{}) {
	for _, ts := range snap.Tables {
		for c, cs := range ts.Classes {
			if _, ok := tails[rankedClass{ts.Table, ts.Index, traffic.Class(c)}]; !ok {
				continue
			}
			for _, k := range cs.Top {
				want[rankedKey{ts.Table, ts.Index, k.Key, traffic.Class(c)}] = struct{}{}
			}
		}
	}
}

// countedKey is a ranked key and its exact counts.
type countedKey struct {
	key string
	ks  *keySeconds
}

// settle sets the keys of every class of snap the counter has a tail of
// to those whose ranking the exact counts prove (see above), with their
// exact units, events and sort keys. It returns a note for every class
// left with fewer than top keys that has more.
func (k *keyCounter) settle(snap *sketch.Snapshot, top int) []string {
	var notes []string
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		for c := range ts.Classes {
			tail := k.tails[rankedClass{ts.Table, ts.Index, traffic.Class(c)}]
			if tail == nil {
				continue
			}
			cs := &ts.Classes[c]
			var keys []countedKey
			for _, ks := range cs.Top {
				if n := k.keys[rankedKey{ts.Table, ts.Index, ks.Key, traffic.Class(c)}]; n != nil && n.units > 0 {
					keys = append(keys, countedKey{ks.Key, n})
				}
			}
			slices.SortFunc(keys, func(a, b countedKey) int {
				return cmp.Or(cmp.Compare(b.ks.units, a.ks.units), strings.Compare(a.key, b.key))
			})
			n, bound := proven(tail, keys)
			cs.Top = settledTop(cs.Top, keys[:n])
			if n < top {
				notes = append(notes, unrankedNote(ts.Table, ts.Index, traffic.Class(c), n, top, bound))
			}
		}
	}
	return notes
}

// settledTop returns the KeyStats of keys, exact, from their entries of
// top for what the counts do not hold (the seconds, set by apply).
func settledTop(top []sketch.KeyStat, keys []countedKey) []sketch.KeyStat {
	if len(keys) == 0 {
		return nil
	}
	byKey := make(map[string]sketch.KeyStat, len(top))
	for _, ks := range top {
		byKey[ks.Key] = ks
	}
	out := make([]sketch.KeyStat, len(keys))
	for i, ck := range keys {
		ks := byKey[ck.key]
		ks.Units, ks.Error = float64(ck.ks.units)/quantum, 0
		ks.Events, ks.SortKeys = ck.ks.events, sketch.SortKeyEstimate(ck.ks.sortKeys)
		out[i] = ks
	}
	return out
}

// proven returns how many of keys (ranked by exact units, then key) are
// proven the heaviest of the class: the largest n such that the n-th has
// more units than any key outside the first n can have had, the least
// over the tail's rows of the row's largest counter once the first n
// keys' exact units are taken out. It returns that bound too (quarter
// units). A saturated counter stays so.
func proven(tail *tailSketch, keys []countedKey) (int, uint64) {
	cells := tail.cells
	for _, ck := range keys {
		h := xxh3.HashString(ck.key)
		for r := range tailRows {
			p := &cells[tailCell(h, r)]
			if *p != math.MaxUint32 {
				*p -= uint32(min(uint64(*p), ck.ks.units))
			}
		}
	}
	var rowMax [tailRows]uint32
	for r := range tailRows {
		rowMax[r] = slices.Max(cells[r*tailWidth : (r+1)*tailWidth])
	}
	bound := func() uint64 { return uint64(slices.Min(rowMax[:])) }
	for n := len(keys); n > 0; n-- {
		ck := keys[n-1]
		if ck.ks.units > bound() {
			return n, bound()
		}
		// Put the n-th key back among those not proven.
		h := xxh3.HashString(ck.key)
		for r := range tailRows {
			p := &cells[tailCell(h, r)]
			*p = satAdd(*p, uint32(min(ck.ks.units, math.MaxUint32)))
			rowMax[r] = max(rowMax[r], *p)
		}
	}
	return 0, bound()
}

// unrankedNote says that a class lists n keys, fewer than the top the
// report lists, and the most units a key not listed can have had (bound,
// quarter units).
func unrankedNote(table, index string, c traffic.Class, n, top int, bound uint64) string {
	name := table
	if index != "" {
		name += " (index " + index + ")"
	}
	rest := "the other " + c.String() + " keys"
	if n == 0 {
		rest = "its " + c.String() + " keys"
	}
	return fmt.Sprintf("%s: %s listed, not %d: %s cannot be told apart by the counting (each had at most %s units, within its error of the others)",
		name, plural.Count(n, c.String()+" key"), top, rest, formatQuanta(bound))
}

// formatQuanta writes quarter units as units.
func formatQuanta(q uint64) string {
	return fmt.Sprintf("%g", float64(q)/quantum)
}
