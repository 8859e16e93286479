package analyze

import (
	"context"
	"encoding/binary"
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
//     part of them appends its events to a buffer, 16 bytes and the key's
//     each, as the spill does (spill.go): second, units (in the sketch's
//     quarter units), table entry and stream shard (the part's ids),
//     class, throttling and its reason, the bit of the sort key in the
//     sketch's 32-bit estimate of a key's sort keys, and the partition
//     key. The parts append to one another.
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
// is 16 bytes an event with a time and its key's bytes: bounded by
// maxIncidentBytes; past it, no incident is judged and a note says so.

// maxIncidentBytes bounds the events kept for the incidents (their
// offsets are 32 bits: chunk and place in it).
const maxIncidentBytes = 1 << 30

// incChunkBits sizes the chunks the events are appended to: a record never
// spans two, and a full chunk is never copied.
const incChunkBits = 18

// An event's record: second (Unix, 4 bytes little endian), quarter units
// (4), table entry id (2), shard id (2, 0 for none), class and throttled
// (1), throttle reason (1), sort key bit + 1 (1, 0 for none), key length
// (1), then the key's bytes (at most sketch.MaxKeyBytes).
const (
	incHead      = 16
	incThrottled = 1 << 7
	incClass     = 1<<7 - 1
)

// incidentLog is one part's events, in front of the part's next sink.
type incidentLog struct {
	next traffic.Sink
	// chunks hold the records, buf is the last (a slice of the last
	// chunk's array), size their bytes.
	chunks [][]byte
	buf    []byte
	size   int
	// n is the number of records.
	n int
	// entries and shards are the names of the part's ids; shard 0 is
	// none.
	entries  []entryKey
	entryIDs map[entryKey]uint16
	shards   []string
	shardIDs map[string]uint16
	// last is the table entry of the last event, and its id.
	last   entryKey
	lastID int
	// over says that the part held more than maxIncidentBytes, or more
	// table entries or shards than its ids name: it keeps no more, and no
	// incident is judged.
	over bool
}

func newIncidentLog(next traffic.Sink) *incidentLog {
	return &incidentLog{next: next, entryIDs: map[entryKey]uint16{}, shards: []string{""}, shardIDs: map[string]uint16{"": 0}, lastID: -1}
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
	if e.Time.IsZero() || e.Class >= traffic.NumClasses || e.Table == "" || l.over {
		return
	}
	pk := e.PK
	if len(pk) > sketch.MaxKeyBytes {
		pk = sketch.HeldKey(pk)
	}
	entry, ok := l.entry(e.Table, e.Index)
	shard, ok2 := l.shard(e.Shard)
	if !ok || !ok2 || l.size+incHead+len(pk) > maxIncidentBytes {
		l.drop()
		return
	}
	units := e.Units
	if !(units >= 0) || units > math.MaxFloat64 {
		units = 0
	}
	flags := byte(e.Class)
	if e.Throttled {
		flags |= incThrottled
	}
	var skBit byte
	if e.SK != "" {
		skBit = byte(xxh3.HashString(e.SK)>>59) + 1 // sketch/keys.go's sortKeyBit
	}
	r := l.record(incHead + len(pk))
	binary.LittleEndian.PutUint32(r[0:], uint32(e.Time.Unix()))
	binary.LittleEndian.PutUint32(r[4:], toQuanta(units))
	binary.LittleEndian.PutUint16(r[8:], entry)
	binary.LittleEndian.PutUint16(r[10:], shard)
	r[12], r[13], r[14], r[15] = flags, byte(e.ThrottleReason), skBit, byte(len(pk))
	copy(r[incHead:], pk)
}

// record returns room for a record of n bytes at the end of the last
// chunk, or of a new one.
func (l *incidentLog) record(n int) []byte {
	if len(l.buf)+n > cap(l.buf) {
		l.buf = make([]byte, 0, 1<<incChunkBits)
		l.chunks = append(l.chunks, nil)
	}
	at := len(l.buf)
	l.buf = l.buf[:at+n]
	l.chunks[len(l.chunks)-1] = l.buf
	l.size += n
	l.n++
	return l.buf[at:]
}

// drop gives up the part's events: no incident is judged.
func (l *incidentLog) drop() {
	l.over, l.chunks, l.buf = true, nil, nil
}

// entry returns the part's id of a table entry, made if new (the names
// are the decoders' buffers: copies are kept).
func (l *incidentLog) entry(table, index string) (uint16, bool) {
	if l.lastID >= 0 && table == l.last.table && index == l.last.index {
		return uint16(l.lastID), true
	}
	id, ok := l.entryIDs[entryKey{table, index}]
	if !ok {
		if len(l.entries) > math.MaxUint16 {
			return 0, false
		}
		k := entryKey{strings.Clone(table), strings.Clone(index)}
		id = uint16(len(l.entries))
		l.entries = append(l.entries, k)
		l.entryIDs[k] = id
	}
	l.last, l.lastID = l.entries[id], int(id)
	return id, true
}

// shard returns the part's id of a stream shard, made if new.
func (l *incidentLog) shard(s string) (uint16, bool) {
	if s == "" {
		return 0, true
	}
	id, ok := l.shardIDs[s]
	if !ok {
		if len(l.shards) > math.MaxUint16 {
			return 0, false
		}
		s = strings.Clone(s)
		id = uint16(len(l.shards))
		l.shards = append(l.shards, s)
		l.shardIDs[s] = id
	}
	return id, true
}

// absorb appends o's events (another part's), its ids made the part's.
func (l *incidentLog) absorb(o *incidentLog) {
	if l.over || o.over || l.size+o.size+len(o.chunks)<<8 > maxIncidentBytes {
		l.drop()
		return
	}
	entries := make([]uint16, len(o.entries))
	for i, k := range o.entries {
		id, ok := l.entry(k.table, k.index)
		if !ok {
			l.drop()
			return
		}
		entries[i] = id
	}
	shards := make([]uint16, len(o.shards))
	for i, s := range o.shards {
		id, ok := l.shard(s)
		if !ok {
			l.drop()
			return
		}
		shards[i] = id
	}
	for _, c := range o.chunks {
		for r := c; len(r) > 0; r = r[incHead+int(r[15]):] {
			binary.LittleEndian.PutUint16(r[8:], entries[binary.LittleEndian.Uint16(r[8:])])
			binary.LittleEndian.PutUint16(r[10:], shards[binary.LittleEndian.Uint16(r[10:])])
		}
	}
	// o's chunks go before the last of l, which stays the one appended
	// to.
	if n := len(l.chunks); n > 0 {
		l.chunks = append(l.chunks[:n-1], append(o.chunks, l.chunks[n-1])...)
	} else {
		l.chunks = o.chunks
		l.buf = nil
	}
	l.size += o.size
	l.n += o.n
	o.chunks, o.buf = nil, nil
}
