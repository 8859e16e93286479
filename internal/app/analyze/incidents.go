package analyze

import (
	"context"
	"math"
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
//     part of them keeps its events in 28 bytes each: second, table entry,
//     class, partition key and stream shard (ids of the names, each kept
//     once), units (in the sketch's quarter units), throttling, and the
//     bit of the sort key in the sketch's 32-bit estimate of a key's sort
//     keys. The parts append to one another.
//  2. Then those events are put in an order that depends on nothing but
//     them (by second, then by the hashes of their names and their
//     figures), and replayed in event time, second by second, into
//     a live sliding-window store (the daemon's, package sketch) on a
//     virtual clock, and judged by the daemon's Tracker (detect.Tracker:
//     Evaluate with its hold and hysteresis) once a second of event time,
//     as the daemon's tick does, or once every few seconds when the input
//     spans more than maxEvaluations seconds. Each diagnosis it flags is
//     an incident from the time it was raised to the time it cleared, as
//     the daemon's history records them (history/incidents.go).
//
// Events without a time are in no second and in no incident. The memory
// is 28 bytes an event with a time, and each distinct key once: bounded by
// maxIncidentEvents; past it, no incident is judged and a note says so.

// maxIncidentEvents bounds the events kept for the incidents.
const maxIncidentEvents = 1 << 24

// incEvent is one event as the incidents keep it: ids are the part's
// (incidentLog.names).
type incEvent struct {
	sec       uint32 // Unix seconds: the plausible times (times.go) fit
	entry, pk uint32
	shard     uint32
	quanta    uint32 // its units in quarter units, as the sketch counts them
	sk        uint32 // its sort key's bit (sortKeyBit), 0 without one
	class     traffic.Class
	throttled bool
	reason    traffic.ThrottleReason
}

// incidentLog is one part's events, in front of the part's next sink.
type incidentLog struct {
	next   traffic.Sink
	events []incEvent
	ids    map[string]uint32
	names  []string
	// last is the table entry of the last event, and its id.
	last   entryKey
	lastID uint32
	// over says that the part held more than maxIncidentEvents events: it
	// keeps no more, and no incident is judged.
	over bool
}

func newIncidentLog(next traffic.Sink) *incidentLog {
	return &incidentLog{next: next, ids: map[string]uint32{"": 0}, names: []string{""}, lastID: math.MaxUint32}
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
	if len(l.events) >= maxIncidentEvents {
		l.over, l.events = true, nil
		return
	}
	pk := e.PK
	if len(pk) > sketch.MaxKeyBytes {
		pk = sketch.HeldKey(pk)
	}
	units := e.Units
	if !(units >= 0) || units > math.MaxFloat64 {
		units = 0
	}
	ev := incEvent{sec: uint32(e.Time.Unix()), entry: l.entry(e.Table, e.Index), pk: l.id(pk), quanta: toQuanta(units),
		class: e.Class, throttled: e.Throttled, reason: e.ThrottleReason}
	if e.Shard != "" {
		ev.shard = l.id(e.Shard)
	}
	if e.SK != "" {
		ev.sk = sortKeyBit(e.SK)
	}
	l.events = append(l.events, ev)
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

// entry returns the id of a table entry's name (table NUL index).
func (l *incidentLog) entry(table, index string) uint32 {
	if l.lastID != math.MaxUint32 && table == l.last.table && index == l.last.index {
		return l.lastID
	}
	id := l.id(table + "\x00" + index)
	t, i, _ := strings.Cut(l.names[id], "\x00")
	l.last, l.lastID = entryKey{t, i}, id
	return id
}

// entryOf is the table entry an entry id names.
func (l *incidentLog) entryOf(id uint32) entryKey {
	t, i, _ := strings.Cut(l.names[id], "\x00")
	return entryKey{t, i}
}

// absorb adds o's events (another part's).
func (l *incidentLog) absorb(o *incidentLog) {
	if l.over || o.over || len(l.events)+len(o.events) > maxIncidentEvents {
		l.over, l.events = true, nil
		return
	}
	remap := make([]uint32, len(o.names))
	for id, s := range o.names {
		remap[id] = l.id(s)
	}
	for _, ev := range o.events {
		ev.entry, ev.pk, ev.shard = remap[ev.entry], remap[ev.pk], remap[ev.shard]
		l.events = append(l.events, ev)
	}
	l.lastID = math.MaxUint32
}

// sortKeyBit is the bit of a sort key in the sketch's 32-bit estimate of
// a key's sort keys (sketch/keys.go): the top five bits of its hash.
func sortKeyBit(sk string) uint32 {
	return 1 << (xxh3.HashString(sk) >> 59)
}
