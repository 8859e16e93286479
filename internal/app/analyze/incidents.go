package analyze

import (
	"context"
	"math"
	"math/bits"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Incidents (TableReport.Incidents) are what the live daemon would have
// recorded watching the input's traffic: its detector, with its window,
// threshold and hold, in event time. analyze gets them in two steps.
//
//  1. While the inputs are read (the one reading every report needs), each
//     part of them keeps its events added up by second, table entry,
//     class, partition key, stream shard and throttling: the units (in the
//     sketch's quarter units), the calls and the sort keys' bits (the
//     sketch's 32-bit estimate of a key's sort keys). Sums and bitwise ors
//     do not depend on the order of the lines, nor on how the inputs were
//     cut into parts: the parts merge into the same figures.
//  2. Then those seconds are replayed in event time, second by second, into
//     a live sliding-window store (the daemon's, package sketch) on a
//     virtual clock, and judged by the daemon's Tracker (detect.Tracker:
//     Evaluate with its hold and hysteresis) once a second of event time,
//     as the daemon's tick does, or once every few seconds when the input
//     spans more than maxEvaluations seconds. Each diagnosis it flags is
//     an incident from the time it was raised to the time it cleared, as
//     the daemon's history records them (history/incidents.go).
//
// Events without a time are in no second and in no incident. The memory
// is that of the distinct (second, key) pairs of the input: bounded by
// maxIncidentRecords; past it, no incident is judged and a note says so.

// maxIncidentRecords bounds the distinct (second, table entry, class, key,
// shard, throttling) records kept for the incidents: about 48 bytes each.
const maxIncidentRecords = 4 << 20

// incRec is one record's identity: ids are the part's (incidentLog.names).
type incRec struct {
	sec       int64
	entry, pk uint32
	shard     uint32
	class     traffic.Class
	throttled bool
	reason    traffic.ThrottleReason
}

// incAgg is one record's figures.
type incAgg struct {
	quanta uint64
	calls  uint32
	sk     uint32 // the sort keys' bits (sketch's sortKeyBit)
}

// incidentLog is one part's records, in front of the part's next sink.
type incidentLog struct {
	next    traffic.Sink
	recs    map[incRec]incAgg
	ids     map[string]uint32
	names   []string
	entries map[entryKey]uint32
	// over says that the part held more than maxIncidentRecords records:
	// it keeps no more, and no incident is judged.
	over bool
}

func newIncidentLog(next traffic.Sink) *incidentLog {
	return &incidentLog{next: next, recs: map[incRec]incAgg{}, ids: map[string]uint32{"": 0}, names: []string{""}, entries: map[entryKey]uint32{}}
}

// Put records the batch's events that have a time and passes it on. The
// events come checked, as the store gets them.
func (l *incidentLog) Put(ctx context.Context, batch []traffic.Event) error {
	if !l.over {
		for i := range batch {
			l.add(&batch[i])
		}
	}
	return l.next.Put(ctx, batch)
}

// add records one event as the store counts it: a known class, units that
// are a number (else 0), a key cut as the store holds it.
func (l *incidentLog) add(e *traffic.Event) {
	if e.Time.IsZero() || e.Class >= traffic.NumClasses || e.Table == "" {
		return
	}
	pk := e.PK
	if len(pk) > sketch.MaxKeyBytes {
		pk = sketch.HeldKey(pk)
	}
	r := incRec{sec: e.Time.Unix(), entry: l.entry(e.Table, e.Index), pk: l.id(pk), shard: l.id(e.Shard), class: e.Class,
		throttled: e.Throttled, reason: e.ThrottleReason}
	a, ok := l.recs[r]
	if !ok && len(l.recs) >= maxIncidentRecords {
		l.over, l.recs = true, nil
		return
	}
	units := e.Units
	if !(units >= 0) || units > math.MaxFloat64 {
		units = 0
	}
	a.quanta += uint64(toQuanta(units))
	if a.calls < math.MaxUint32 {
		a.calls++
	}
	if e.SK != "" {
		a.sk |= sortKeyBit(e.SK)
	}
	l.recs[r] = a
}

// id returns the part's id of s, a copy of s kept when new (an event's
// strings are its decoder's buffer).
func (l *incidentLog) id(s string) uint32 {
	if id, ok := l.ids[s]; ok {
		return id
	}
	s = strings.Clone(s)
	id := uint32(len(l.names))
	l.ids[s] = id
	l.names = append(l.names, s)
	return id
}

func (l *incidentLog) entry(table, index string) uint32 {
	if id, ok := l.entries[entryKey{table, index}]; ok {
		return id
	}
	k := entryKey{l.names[l.id(table)], l.names[l.id(index)]}
	id := l.id(k.table + "\x00" + k.index)
	l.entries[k] = id
	return id
}

// entryOf is the table entry an entry id names.
func (l *incidentLog) entryOf(id uint32) entryKey {
	t, i, _ := strings.Cut(l.names[id], "\x00")
	return entryKey{t, i}
}

// absorb adds o's records (another part's).
func (l *incidentLog) absorb(o *incidentLog) {
	if l.over || o.over {
		l.over, l.recs = true, nil
		return
	}
	remap := make([]uint32, len(o.names))
	for id, s := range o.names {
		remap[id] = l.id(s)
	}
	for ok, oe := range o.entries {
		l.entries[entryKey{l.names[l.id(ok.table)], l.names[l.id(ok.index)]}] = remap[oe]
	}
	for r, oa := range o.recs {
		r.entry, r.pk, r.shard = remap[r.entry], remap[r.pk], remap[r.shard]
		a, ok := l.recs[r]
		if !ok && len(l.recs) >= maxIncidentRecords {
			l.over, l.recs = true, nil
			return
		}
		a.quanta += oa.quanta
		a.calls = uint32(min(uint64(a.calls)+uint64(oa.calls), math.MaxUint32))
		a.sk |= oa.sk
		l.recs[r] = a
	}
}

// sortKeyBit is the bit of a sort key in the sketch's 32-bit estimate of
// a key's sort keys (sketch/keys.go): the top five bits of its hash.
func sortKeyBit(sk string) uint32 {
	return 1 << (xxh3.HashString(sk) >> 59)
}

// sortKeysOf returns one sort key for each bit of b, in the order of the
// bits: replayed, they set the same bits.
func sortKeysOf(b uint32, all *[32]string) []string {
	out := make([]string, 0, bits.OnesCount32(b))
	for b != 0 {
		i := bits.TrailingZeros32(b)
		out = append(out, all[i])
		b &^= 1 << i
	}
	return out
}
