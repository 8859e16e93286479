package analyze

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Incidents (TableReport.Incidents) are what the live daemon would have
// recorded watching the input's traffic: its detector, with its window,
// threshold and hold, in event time. analyze gets them in two steps.
//
//  1. While the inputs are read (the one reading every report needs), each
//     part of them writes its events as records, 16 bytes and the key's
//     each, as the spill does (spill.go): second, units (in the sketch's
//     quarter units), table entry and stream shard (the part's ids),
//     class, throttling and its reason, the bit of the sort key in the
//     sketch's 32-bit estimate of a key's sort keys, and the partition
//     key. The records go to a temporary file of their own in chunks
//     (incidentFile: the page cache, not the process's memory), or stay in
//     memory when there is no such file. The parts' logs append to one
//     another as the parts merge.
//  2. Then the records of one table (with its indexes) at a time are read
//     back into one buffer, put in an order that depends on nothing but
//     them (by second, then by the hashes of their names and their
//     figures), and replayed in event time, second by second, into a live
//     sliding-window store (the daemon's, package sketch) on a virtual
//     clock, and judged by the daemon's Tracker (detect.Tracker: Evaluate
//     with its hold and hysteresis) once a second of event time, as the
//     daemon's tick does, or once every few seconds when the input spans
//     more than maxEvaluations seconds. Each diagnosis it flags is an
//     incident from the time it was raised to the time it cleared, as the
//     daemon's history records them (history/incidents.go).
//
// Events without a time are in no second and in no incident. The records
// take 16 bytes an event with a time and its key's bytes, bounded by
// maxIncidentBytes (past it, no incident is judged and a note says so);
// the memory is one part's chunk being filled while the inputs are read,
// and the records of the tables being judged (one a worker) after.

// maxIncidentBytes bounds the events kept for the incidents (a table's
// records are one buffer, with 32-bit offsets).
const maxIncidentBytes = 1 << 30

// incChunkSize is the size of the chunks the records are written in: a
// record never spans two.
const incChunkSize = 256 << 10

// An event's record: second (Unix, 4 bytes little endian), quarter units
// (4), table entry id (2), shard id (2, 0 for none), class and throttled
// (1), throttle reason (1), sort key bit + 1 (1, 0 for none), key length
// (1), then the key's bytes (at most sketch.MaxKeyBytes).
const (
	incHead      = 16
	incThrottled = 1 << 7
	incClass     = 1<<7 - 1
)

// incidentFile is the temporary file the parts' chunks of records are
// written to, removed from its directory as soon as it is made.
type incidentFile struct {
	mu sync.Mutex
	scratchFile
	size int64
	// failed says that a write failed: later chunks stay in memory.
	failed bool
}

// newIncidentFile makes the file; nil when none can be made (the records
// then stay in memory).
func newIncidentFile() *incidentFile {
	sf, err := newScratchFile("hotkeyd-incidents-*")
	if err != nil {
		return nil
	}
	return &incidentFile{scratchFile: sf}
}

// write writes b at the end of the file and returns where; false when it
// could not (the caller keeps b).
func (w *incidentFile) write(b []byte) (int64, bool) {
	w.mu.Lock()
	if w.f == nil || w.failed {
		w.mu.Unlock()
		return 0, false
	}
	off := w.size
	w.size += int64(len(b))
	f := w.f
	w.mu.Unlock()
	if _, err := f.WriteAt(b, off); err != nil {
		w.mu.Lock()
		w.failed = true
		w.mu.Unlock()
		return 0, false
	}
	return off, true
}

// readAt reads len(b) bytes at off.
func (w *incidentFile) readAt(b []byte, off int64) error {
	if _, err := w.f.ReadAt(b, off); err != nil && err != io.EOF {
		return fmt.Errorf("incidents: read the records: %w", err)
	}
	return nil
}

// close closes the file, removing it if it is still named; nothing on a
// nil file.
func (w *incidentFile) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scratchFile.close()
}

// incChunk is a chunk of whole records: in memory (data), or n bytes at
// off in the log's file. entries and shards turn the ids of its records
// into the log's (nil: they are the log's already).
type incChunk struct {
	data            []byte
	off             int64
	n               int
	entries, shards []uint16
}

// incidentLog is one part's events, in front of the part's next sink.
type incidentLog struct {
	next traffic.Sink
	// file gets the full chunks; nil keeps them in memory.
	file *incidentFile
	// chunks are the full chunks, buf the one being filled, size their
	// bytes.
	chunks []incChunk
	buf    []byte
	size   int
	// n is the number of records.
	n int
	// entries and shards are the names of the part's ids; shard 0 is
	// none. stats are each entry's records: how many, their bytes, their
	// first and last seconds.
	entries  []entryKey
	entryIDs map[entryKey]uint16
	stats    []entryRecords
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

// newIncidentLog returns a part's log in front of next, writing its
// chunks to file (nil: in memory).
func newIncidentLog(next traffic.Sink, file *incidentFile) *incidentLog {
	return &incidentLog{next: next, file: file, entryIDs: map[entryKey]uint16{}, shards: []string{""}, shardIDs: map[string]uint16{"": 0}, lastID: -1}
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
	skBit := sortKeyBit(e.SK)
	sec := uint32(e.Time.Unix())
	l.stats[entry].add(entryRecords{n: 1, bytes: incHead + len(pk), first: sec, last: sec})
	r := l.record(incHead + len(pk))
	binary.LittleEndian.PutUint32(r[0:], sec)
	binary.LittleEndian.PutUint32(r[4:], toQuanta(units))
	binary.LittleEndian.PutUint16(r[8:], entry)
	binary.LittleEndian.PutUint16(r[10:], shard)
	r[12], r[13], r[14], r[15] = flags, byte(e.ThrottleReason), skBit, byte(len(pk))
	copy(r[incHead:], pk)
}

// record returns room for a record of n bytes at the end of the chunk
// being filled, or of a new one.
func (l *incidentLog) record(n int) []byte {
	if len(l.buf)+n > cap(l.buf) {
		l.flush()
		if l.buf == nil {
			l.buf = make([]byte, 0, incChunkSize)
		}
	}
	at := len(l.buf)
	l.buf = l.buf[:at+n]
	l.size += n
	l.n++
	return l.buf[at:]
}

// flush ends the chunk being filled: written to the file, whose buffer is
// then filled again, or kept in memory.
func (l *incidentLog) flush() {
	if len(l.buf) == 0 {
		return
	}
	if l.file != nil {
		if off, ok := l.file.write(l.buf); ok {
			l.chunks = append(l.chunks, incChunk{off: off, n: len(l.buf)})
			l.buf = l.buf[:0]
			return
		}
	}
	l.chunks = append(l.chunks, incChunk{data: l.buf, n: len(l.buf)})
	l.buf = nil
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
		l.stats = append(l.stats, entryRecords{first: math.MaxUint32})
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

// absorb appends o's events (another part's, which is done), its ids
// made the part's: each of o's chunks says how.
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
		l.stats[id].add(o.stats[i])
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
	o.flush()
	for _, c := range o.chunks {
		c.entries, c.shards = compose(c.entries, entries), compose(c.shards, shards)
		l.chunks = append(l.chunks, c)
	}
	l.size += o.size
	l.n += o.n
	o.chunks, o.buf = nil, nil
}

// entryRecords are the records of a table entry, or of a table and its
// indexes: how many, their bytes, their first and last seconds.
type entryRecords struct {
	n, bytes    int
	first, last uint32
}

// add adds o's records.
func (r *entryRecords) add(o entryRecords) {
	r.n += o.n
	r.bytes += o.bytes
	r.first, r.last = min(r.first, o.first), max(r.last, o.last)
}

// compose returns the ids that first (nil: the ids themselves) and then
// then give.
func compose(first, then []uint16) []uint16 {
	if first == nil {
		return then
	}
	out := make([]uint16, len(first))
	for i, id := range first {
		out[i] = then[id]
	}
	return out
}

// closeFile removes the log's file, if any: nothing reads it after.
func (l *incidentLog) closeFile() {
	if l != nil && l.file != nil {
		l.file.close()
	}
}
