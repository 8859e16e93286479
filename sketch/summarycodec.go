package sketch

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// SummaryFormat is the version of the encoding EncodeSummary writes and
// DecodeSummary reads. A replica that reads another version ignores that
// summary (a rolling update between versions judges on its own traffic for
// a moment).
const SummaryFormat = 4

// maxDecoded bounds the decompressed size of a summary DecodeSummary
// accepts: far above what EncodeSummary writes within DynamoDB's item size,
// low enough that no item can make a replica allocate much.
const maxDecoded = 64 << 20

// ErrSummaryTooLarge says a summary does not fit the size asked for even
// with one key per class and no distinct-key registers.
var ErrSummaryTooLarge = errors.New("summary too large")

// The wire form: JSON, gzip-compressed. Field names are short; the form is
// versioned by SummaryFormat.
type wireSummary struct {
	Format    int         `json:"v"`
	Start     int64       `json:"start"` // Unix nanoseconds
	End       int64       `json:"end"`
	SlotNanos int64       `json:"slot_ns"`
	Slot      int64       `json:"slot"`
	Tables    []wireTable `json:"tables"`
}

type wireTable struct {
	Table      string                        `json:"t"`
	Index      string                        `json:"i,omitempty"`
	Events     uint64                        `json:"e"`
	Classes    [traffic.NumClasses]wireClass `json:"c"`
	Distinct   uint64                        `json:"d"`
	Registers  []byte                        `json:"hll,omitempty"`
	Shards     []ShardStat                   `json:"sh,omitempty"`
	ThrEvents  uint64                        `json:"the,omitempty"`
	RecentSpan int64                         `json:"rs"`           // nanoseconds
	LastSecond int64                         `json:"ls"`           // Unix seconds, 0 for none
	Start      int64                         `json:"ts,omitempty"` // Unix nanoseconds: the table's window
	End        int64                         `json:"te,omitempty"`
	Slot       int64                         `json:"sl,omitempty"` // newest slot of the series, 0: the summary's
	SlotUnits  [traffic.NumClasses][]float64 `json:"su"`
	SlotPeaks  [traffic.NumClasses][]float64 `json:"sp"`
	Tail       int                           `json:"tl,omitempty"` // TableSnapshot.Tail
}

type wireClass struct {
	Events     uint64    `json:"e"`
	Units      float64   `json:"u"`
	Peak       float64   `json:"p"`
	PeakSecond float64   `json:"ps"`
	Recent     float64   `json:"r"`
	Last       float64   `json:"l"`
	Top        []wireKey `json:"k,omitempty"`
	Tail       []float64 `json:"tl,omitempty"` // ClassStats.TailUnits
	// Throttled is the class's throttled calls; nil for none.
	Throttled *wireThrottle `json:"th,omitempty"`
}

type wireThrottle struct {
	Events uint64                            `json:"e"`
	Causes [traffic.NumThrottleCauses]uint64 `json:"c"`
	Keys   []KeyCount                        `json:"k,omitempty"`
	Error  uint64                            `json:"x,omitempty"`
}

type wireKey struct {
	Key      string    `json:"k"`
	Units    float64   `json:"u"`
	Error    float64   `json:"x,omitempty"`
	Events   uint64    `json:"e"`
	SortKeys uint64    `json:"s,omitempty"`
	Peak     float64   `json:"p"`
	Recent   float64   `json:"r,omitempty"`
	Last     float64   `json:"l,omitempty"`
	Tail     []float64 `json:"tl,omitempty"` // KeyStat.TailUnits
}

// EncodeSummary encodes s in at most maxBytes bytes, with at most maxKeys
// top keys per table and class: when it does not fit, the distinct-key
// registers are left out first (the receivers then add this replica's count
// of distinct keys, which is nearly the union anyway, since a key lives in
// one shard), then the keys per class are halved until it fits. It returns
// the keys per class it kept and whether the registers are in, or
// ErrSummaryTooLarge when even one key per class does not fit.
func EncodeSummary(s *Summary, maxKeys, maxBytes int) (b []byte, keys int, registers bool, err error) {
	keys, regs := max(maxKeys, 1), true
	for {
		b, err := encodeSummary(s, keys, regs)
		if err != nil {
			return nil, 0, false, err
		}
		if len(b) <= maxBytes {
			return b, keys, regs, nil
		}
		switch {
		case regs:
			regs = false
		case keys > 1:
			keys /= 2
		default:
			return nil, 0, false, fmt.Errorf("%w: %d bytes with one key per class over %d tables, the limit is %d", ErrSummaryTooLarge, len(b), len(s.Tables), maxBytes)
		}
	}
}

func encodeSummary(s *Summary, maxKeys int, regs bool) ([]byte, error) {
	w := wireSummary{Format: SummaryFormat, Start: unixNanos(s.Start), End: unixNanos(s.End), SlotNanos: s.SlotNanos, Slot: s.Slot}
	for i := range s.Tables {
		ts := &s.Tables[i]
		wt := wireTable{Table: ts.Table, Index: ts.Index, Events: ts.Events, Distinct: ts.DistinctKeys,
			Shards: ts.Shards, ThrEvents: ts.ThrottledEvents, RecentSpan: int64(ts.RecentSpan),
			Start: unixNanos(ts.Start), End: unixNanos(ts.End), Tail: ts.Tail}
		if !ts.LastSecond.IsZero() {
			wt.LastSecond = ts.LastSecond.Unix()
		}
		if i < len(s.Parts) {
			wt.SlotUnits, wt.SlotPeaks, wt.Slot = s.Parts[i].SlotUnits, s.Parts[i].SlotPeaks, s.Parts[i].Slot
			if regs {
				wt.Registers = s.Parts[i].Registers
			}
		}
		for c := range ts.Classes {
			cs := &ts.Classes[c]
			wc := wireClass{Events: cs.Events, Units: cs.Units, Peak: cs.PeakUnitsPerSecond, PeakSecond: cs.PeakSecondUnits,
				Recent: cs.RecentUnits, Last: cs.LastSecondUnits, Tail: cs.TailUnits}
			for _, k := range cs.Top[:min(len(cs.Top), maxKeys)] {
				wc.Top = append(wc.Top, wireKey{Key: k.Key, Units: k.Units, Error: k.Error, Events: k.Events, SortKeys: k.SortKeys,
					Peak: k.PeakUnitsPerSecond, Recent: k.RecentUnits, Last: k.LastSecondUnits, Tail: k.TailUnits})
			}
			if th := &cs.Throttled; th.Events > 0 {
				keys, bound := cutKeyCounts(th.Keys, maxKeys, th.Error)
				wc.Throttled = &wireThrottle{Events: th.Events, Causes: th.Causes, Keys: keys, Error: bound}
			}
			wt.Classes[c] = wc
		}
		w.Tables = append(w.Tables, wt)
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(zw).Encode(&w); err != nil {
		return nil, fmt.Errorf("encode summary: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress summary: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeSummary decodes what EncodeSummary wrote. Anything else (not gzip,
// not JSON, another format version, numbers that are not counts, slot
// series of the wrong length) is an error naming what is wrong; it never
// panics and allocates at most a bounded amount.
func DecodeSummary(b []byte) (*Summary, error) {
	w, err := decodeWire(b)
	if err != nil {
		return nil, err
	}
	s := &Summary{SlotNanos: w.SlotNanos, Slot: w.Slot, Snapshot: Snapshot{Start: fromNanos(w.Start), End: fromNanos(w.End)}}
	for i := range w.Tables {
		ts, part, err := w.Tables[i].decode(i, s)
		if err != nil {
			return nil, err
		}
		s.Tables = append(s.Tables, ts)
		s.Parts = append(s.Parts, part)
	}
	return s, nil
}

// decodeWire decompresses and parses a summary's wire form, of this
// format version, within maxDecoded bytes.
func decodeWire(b []byte) (*wireSummary, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("summary is not gzip: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxDecoded+1))
	if err != nil {
		return nil, fmt.Errorf("decompress summary: %w", err)
	}
	if len(raw) > maxDecoded {
		return nil, fmt.Errorf("summary decompresses to more than %d bytes", maxDecoded)
	}
	var w wireSummary
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("summary is not its JSON form: %w", err)
	}
	if w.Format != SummaryFormat {
		return nil, fmt.Errorf("summary format %d, this version reads %d", w.Format, SummaryFormat)
	}
	if w.SlotNanos < 0 {
		return nil, fmt.Errorf("slot length %d", w.SlotNanos)
	}
	return &w, nil
}

// decode checks and converts table i of the summary s: its snapshot and
// its part.
func (wt *wireTable) decode(i int, s *Summary) (TableSnapshot, TablePart, error) {
	if wt.Table == "" {
		return TableSnapshot{}, TablePart{}, fmt.Errorf("tables[%d]: no table name", i)
	}
	ts := TableSnapshot{Table: wt.Table, Index: wt.Index, Events: wt.Events, DistinctKeys: wt.Distinct,
		Shards: wt.Shards, ThrottledEvents: wt.ThrEvents, Start: s.Start, End: s.End}
	if wt.RecentSpan < 0 {
		return TableSnapshot{}, TablePart{}, fmt.Errorf("tables[%d] (%s): recent span %d", i, wt.Table, wt.RecentSpan)
	}
	ts.RecentSpan = time.Duration(wt.RecentSpan)
	if wt.Start != 0 || wt.End != 0 {
		ts.Start, ts.End = fromNanos(wt.Start), fromNanos(wt.End)
	}
	if wt.LastSecond != 0 {
		ts.LastSecond = time.Unix(wt.LastSecond, 0)
	}
	if wt.Tail < 0 || wt.Tail > keyLateSeconds || (wt.Tail > 0 && wt.LastSecond == 0) {
		return TableSnapshot{}, TablePart{}, fmt.Errorf("tables[%d] (%s): %d seconds before the last, at most %d", i, wt.Table, wt.Tail, keyLateSeconds)
	}
	ts.Tail = wt.Tail
	part := TablePart{Registers: wt.Registers, Slot: wt.Slot}
	if part.Slot == 0 {
		part.Slot = s.Slot
	}
	for c := range wt.Classes {
		cs, err := wt.decodeClass(i, traffic.Class(c))
		if err != nil {
			return TableSnapshot{}, TablePart{}, err
		}
		ts.Classes[c] = cs
		part.SlotUnits[c], part.SlotPeaks[c] = wt.SlotUnits[c], wt.SlotPeaks[c]
	}
	return ts, part, nil
}

// decodeClass checks and converts class c of table i: its units, its slot
// series, its top keys and its throttled calls.
func (wt *wireTable) decodeClass(i int, c traffic.Class) (ClassStats, error) {
	wc := &wt.Classes[c]
	if !counts(wc.Units, wc.Peak, wc.PeakSecond, wc.Recent, wc.Last) {
		return ClassStats{}, fmt.Errorf("tables[%d] (%s) class %s: units that are not counts", i, wt.Table, c)
	}
	if len(wt.SlotUnits[c]) != len(wt.SlotPeaks[c]) || !counts(wt.SlotUnits[c]...) || !counts(wt.SlotPeaks[c]...) {
		return ClassStats{}, fmt.Errorf("tables[%d] (%s) class %s: slot series of %d units and %d peaks, or not counts", i, wt.Table, c, len(wt.SlotUnits[c]), len(wt.SlotPeaks[c]))
	}
	if len(wc.Tail) > wt.Tail || !counts(wc.Tail...) {
		return ClassStats{}, fmt.Errorf("tables[%d] (%s) class %s: %d seconds before the last of %d, or not counts", i, wt.Table, c, len(wc.Tail), wt.Tail)
	}
	cs := ClassStats{Events: wc.Events, Units: wc.Units, PeakUnitsPerSecond: wc.Peak, PeakSecondUnits: wc.PeakSecond,
		RecentUnits: wc.Recent, LastSecondUnits: wc.Last, TailUnits: wc.Tail}
	for j, k := range wc.Top {
		if k.Key == "" || !counts(k.Units, k.Error, k.Peak, k.Recent, k.Last) || len(k.Tail) > wt.Tail || !counts(k.Tail...) {
			return ClassStats{}, fmt.Errorf("tables[%d] (%s) class %s key %d: no key, or units that are not counts", i, wt.Table, c, j)
		}
		cs.Top = append(cs.Top, KeyStat{Key: k.Key, Units: k.Units, Error: k.Error, Events: k.Events, SortKeys: k.SortKeys,
			PeakUnitsPerSecond: k.Peak, RecentUnits: k.Recent, LastSecondUnits: k.Last, TailUnits: k.Tail})
	}
	if th := wc.Throttled; th != nil {
		var sum uint64
		for _, n := range th.Causes {
			sum += n
		}
		if sum != th.Events {
			return ClassStats{}, fmt.Errorf("tables[%d] (%s) class %s: %d throttled calls by cause, %d in all", i, wt.Table, c, sum, th.Events)
		}
		for j, k := range th.Keys {
			if k.Key == "" || k.Count > k.Max || k.Max > th.Events {
				return ClassStats{}, fmt.Errorf("tables[%d] (%s) class %s throttled key %d: no key, or bounds %d to %d of %d calls", i, wt.Table, c, j, k.Count, k.Max, th.Events)
			}
		}
		cs.Throttled = ThrottleStats{Events: th.Events, Causes: th.Causes, Keys: th.Keys, Error: th.Error}
	}
	return cs, nil
}

// counts reports whether every value is a finite number of units, not
// negative.
func counts(vs ...float64) bool {
	for _, v := range vs {
		if !(v >= 0 && v <= math.MaxFloat64) {
			return false
		}
	}
	return true
}

func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
