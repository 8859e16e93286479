package analyze

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/zeebo/xxh3"

	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// The keys' seconds without a second read. The keys the report ranks are
// known only once the inputs are read, and a store keeps a key's seconds
// for its last few only (keyseconds.go). So while the inputs are read,
// every event the store counts is also written to a spill, a temporary
// file, as a record of 14 bytes and its key: its table, class, second and
// quarter units (throttled calls: their table, class and key). Once the
// inputs are read, the records of the keys to count again are added up
// from the spill, on every core, instead of parsing the inputs again: a
// record costs a few nanoseconds to write and to read back, a line about
// a microsecond to parse. The spill takes about a fifth of the inputs'
// own bytes on disk (the page cache, not the process's memory), and is
// bounded: past maxSpillBytes, or when the disk refuses it, it is dropped
// and the inputs are read a second time as before (countKeys).

// maxSpillBytes bounds the spill; past it the inputs are read again.
const maxSpillBytes = 4 << 30

// maxSpillTables bounds the tables and indexes the spill names (an input
// of made-up table names must not grow its maps without bound); past it
// the inputs are read again.
const maxSpillTables = 1 << 14

// A record's key length is one byte: keys are held at most
// sketch.MaxKeyBytes long (this fails to compile past 255).
const _ = uint8(sketch.MaxKeyBytes)

// spillChunk is the size of a part's buffer of records: records reach
// the file in whole chunks, which the readers of the spill share out.
const spillChunk = 64 << 10

// A record: table id (4 bytes, little endian), flags (class, throttled,
// the sort key's bit), key length, second since keySpill.base (4 bytes),
// quarter units (4 bytes), the key's bytes (at most sketch.MaxKeyBytes).
// The sort key's bit is 1 + the bit the sketch sets for it in a key's
// bitmap of sort keys (sketch.SortKeyEstimate), 0 without a sort key.
const (
	recHead       = 14
	flagThrottled = 1 << 7
	flagClass     = 1
	flagSortShift = 1
	flagSortMask  = 1<<6 - 1
)

// The class fits flagClass.
const _ = uint8(flagClass + 1 - traffic.NumClasses)

// sortKeyBit is the record's bits of a sort key: 1 + the index of the
// bit sketch.SortKeyBit sets, 0 for none.
func sortKeyBit(sk string) byte {
	if b := sketch.SortKeyBit(sk); b != 0 {
		return byte(bits.TrailingZeros32(b)) + 1
	}
	return 0
}

// sortKeyMask is the bit of a key's bitmap of sort keys a record's flags
// set (sortKeyBit).
func sortKeyMask(flags byte) uint32 {
	if b := flags >> flagSortShift & flagSortMask; b > 0 {
		return 1 << (b - 1)
	}
	return 0
}

// keySpill is the spill of one analysis: one temporary file, written by
// every part of the inputs through a spillWriter of its own.
type keySpill struct {
	base int64 // the second records count from: the earliest valid one

	mu sync.Mutex
	scratchFile
	size   int64
	chunks []spillSpan
	// kept says, by writer, whether its part was merged into the result:
	// the records of a part dropped (package parallel drops the parts of
	// an input after one that failed) are not counted.
	kept []bool
	// names are the tables by id; ids by name.
	names []entryKey
	ids   map[entryKey]uint32
	// err is why the spill was dropped (too large, a write failed); the
	// inputs are then read again. dropped says so without the lock.
	err     error
	dropped atomic.Bool
}

// spillSpan is a chunk's bytes in the file, and its writer.
type spillSpan struct {
	off, n int64
	writer int
}

// newKeySpill makes the spill's temporary file; valid is the range of
// the seconds of the events it will get.
func newKeySpill(valid timeRange) (*keySpill, error) {
	if valid.to-valid.from > math.MaxUint32 {
		return nil, fmt.Errorf("spill the keys' seconds: times range over %d seconds", valid.to-valid.from)
	}
	sf, err := newScratchFile("hotkeyd-keys-*")
	if err != nil {
		return nil, fmt.Errorf("spill the keys' seconds: %w", err)
	}
	return &keySpill{base: valid.from, scratchFile: sf, ids: map[entryKey]uint32{}}, nil
}

// remove closes the spill's file, removing it if it is still named.
func (s *keySpill) remove() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scratchFile.close()
}

// scratchFile is a temporary file used through its descriptor: removed
// from its directory at once, so that a process killed leaves nothing
// behind; where an open file cannot be removed, it is removed once closed.
type scratchFile struct {
	f     *os.File // nil once closed
	named bool     // the file is still in its directory
}

// newScratchFile creates a scratch file named by pattern (os.CreateTemp)
// in the temporary directory.
func newScratchFile(pattern string) (scratchFile, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return scratchFile{}, err
	}
	return scratchFile{f: f, named: os.Remove(f.Name()) != nil}, nil
}

// close closes the file, removing it if it is still named; nothing once
// closed.
func (s *scratchFile) close() {
	if s.f == nil {
		return
	}
	s.f.Close()
	if s.named {
		os.Remove(s.f.Name())
	}
	s.f = nil
}

// ok reports whether the spill holds every record written to it.
func (s *keySpill) ok() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err == nil && s.f != nil
}

// id returns the id of table id, made if new; past maxSpillTables the
// spill is dropped.
func (s *keySpill) id(t entryKey) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.ids[t]
	if !ok {
		if len(s.names) >= maxSpillTables {
			if s.err == nil && s.f != nil {
				s.drop(fmt.Errorf("more than %d tables and indexes", maxSpillTables))
			}
			return 0
		}
		n = uint32(len(s.names))
		s.names = append(s.names, t)
		s.ids[t] = n
	}
	return n
}

// writer returns the number of a new writer.
func (s *keySpill) writer() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept = append(s.kept, false)
	return len(s.kept) - 1
}

// keep says that writer n's records count: its part was merged.
func (s *keySpill) keep(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept[n] = true
}

// write appends a chunk of whole records of writer n, unless the spill
// was dropped. The chunk's place is taken under the lock and written
// outside it: the parts' writers do not wait for each other's writes.
func (s *keySpill) write(n int, b []byte) {
	s.mu.Lock()
	if s.err != nil || s.f == nil || len(b) == 0 {
		s.mu.Unlock()
		return
	}
	if s.size+int64(len(b)) > maxSpillBytes {
		s.drop(fmt.Errorf("more than %d bytes", int64(maxSpillBytes)))
		s.mu.Unlock()
		return
	}
	off := s.size
	s.size += int64(len(b))
	f := s.f
	s.mu.Unlock()
	_, err := f.WriteAt(b, off)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		if s.err == nil {
			s.drop(err)
		}
	case s.err == nil:
		s.chunks = append(s.chunks, spillSpan{off, int64(len(b)), n})
	}
}

// drop gives up the spill for err, freeing its disk space at once. s.mu
// is held.
func (s *keySpill) drop(err error) {
	s.err = err
	s.dropped.Store(true)
	s.f.Truncate(0)
	s.chunks = nil
}

// spillWriter writes one part's records to the spill; it is a
// traffic.Sink for one goroutine at a time.
type spillWriter struct {
	spill *keySpill
	n     int // the writer's number
	buf   []byte
	// ids caches the spill's table ids; recent are the last tables met,
	// next the one to replace.
	ids    map[entryKey]uint32
	recent [8]recentTable
	next   int
}

func newSpillWriter(s *keySpill) *spillWriter {
	return &spillWriter{spill: s, n: s.writer(), ids: map[entryKey]uint32{}}
}

// put writes a record of every event of batch that a keyCounter counts:
// a keyed event with a time and units that are a number, or a keyed
// throttled call. The events come checked, as the store gets them.
func (w *spillWriter) put(batch []traffic.Event) {
	if w.spill.dropped.Load() {
		return
	}
	for i := range batch {
		e := &batch[i]
		if e.PK == "" || e.Class >= traffic.NumClasses {
			continue
		}
		var sec int64
		var q uint32
		flags := byte(e.Class)
		if e.Throttled {
			flags |= flagThrottled
		} else {
			flags |= sortKeyBit(e.SK) << flagSortShift
			if e.Time.IsZero() || !(e.Units >= 0 && e.Units <= math.MaxFloat64) {
				continue
			}
			sec, q = e.Time.Unix()-w.spill.base, toQuanta(e.Units)
			if sec < 0 || sec > math.MaxUint32 {
				continue // not a time the checks let through
			}
		}
		pk := e.PK
		if len(pk) > sketch.MaxKeyBytes {
			pk = sketch.HeldKey(pk) // as the report names it
		}
		n := len(w.buf)
		if n+recHead+len(pk) > cap(w.buf) {
			w.flush()
			if w.buf == nil {
				w.buf = make([]byte, 0, spillChunk)
			}
			n = 0
		}
		r := w.buf[n : n+recHead+len(pk)]
		binary.LittleEndian.PutUint32(r[0:], w.table(e.Table, e.Index))
		r[4], r[5] = flags, byte(len(pk))
		binary.LittleEndian.PutUint32(r[6:], uint32(sec))
		binary.LittleEndian.PutUint32(r[10:], q)
		copy(r[recHead:], pk)
		w.buf = w.buf[:n+len(r)]
	}
}

// table returns the spill's id of a table. The decoders intern table
// names, so a table's events mostly share its name's bytes: the last
// few tables are found by their names' pointers, without hashing.
func (w *spillWriter) table(table, index string) uint32 {
	tp, ip := unsafe.StringData(table), unsafe.StringData(index)
	for i := range w.recent {
		r := &w.recent[i]
		if r.table == tp && r.index == ip && r.tableLen == len(table) && r.indexLen == len(index) && r.set {
			return r.id
		}
	}
	t := entryKey{table, index}
	n, ok := w.ids[t]
	if !ok {
		// The names are the decoders' buffers: keep copies.
		t = entryKey{strings.Clone(table), strings.Clone(index)}
		n = w.spill.id(t)
		w.ids[t] = n
	}
	w.recent[w.next] = recentTable{tp, ip, len(table), len(index), n, true}
	w.next = (w.next + 1) % len(w.recent)
	return n
}

// recentTable is a table's names, by pointer and length, and its id.
type recentTable struct {
	table, index       *byte
	tableLen, indexLen int
	id                 uint32
	set                bool
}

// flush writes the buffered records.
func (w *spillWriter) flush() {
	if len(w.buf) > 0 {
		w.spill.write(w.n, w.buf)
		w.buf = w.buf[:0]
	}
}

// close flushes the records, gives the buffer back, and says that the
// records count: the part was merged.
func (w *spillWriter) close() {
	w.flush()
	w.buf, w.recent = nil, [8]recentTable{}
	w.spill.keep(w.n)
}

// count adds up the spill's records of the keys of want (and with
// throttled, every throttled call's key; and every record of the classes
// of tails, into their tailSketch), whose seconds are within keep,
// on workers goroutines: what countKeys counts reading the inputs again.
func (s *keySpill) count(want map[rankedKey]struct{}, throttled bool, tails map[rankedClass]struct{}, keep timeRange, workers int) (*keyCounter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil || s.f == nil {
		return nil, fmt.Errorf("spill dropped: %v", s.err)
	}
	var chunks []spillSpan
	for _, c := range s.chunks {
		if s.kept[c.writer] {
			chunks = append(chunks, c)
		}
	}
	workers = max(1, min(workers, len(chunks)))
	parts := make([]*keyCounter, workers)
	errs := make([]error, workers)
	var next sync.Mutex
	chunk := 0
	var wg sync.WaitGroup
	for p := range parts {
		parts[p] = newKeyCounter(want, tails)
		if throttled {
			parts[p].throttled = newThrottleCounter()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := newSpillCounter(parts[p], s.names, s.base, keep)
			buf := make([]byte, 0, spillChunk)
			for {
				next.Lock()
				i := chunk
				chunk++
				next.Unlock()
				if i >= len(chunks) {
					return
				}
				c := chunks[i]
				buf = buf[:c.n]
				if _, err := s.f.ReadAt(buf, c.off); err != nil && err != io.EOF {
					errs[p] = fmt.Errorf("read the spill: %w", err)
					return
				}
				if err := sc.add(buf); err != nil {
					errs[p] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for p := range parts {
		if errs[p] != nil {
			return nil, errs[p]
		}
		if p > 0 {
			parts[0].absorb(parts[p])
		}
	}
	return parts[0], nil
}

// spillCounter adds records up into a keyCounter: the counter's seconds
// of each wanted key, by table id and class.
type spillCounter struct {
	keys  *keyCounter
	names []entryKey
	byID  [][traffic.NumClasses]map[string]*keySeconds
	// tails are the keys' tailSketch of each class, by table id; nil for
	// the classes whose every record is not added up.
	tails [][traffic.NumClasses]*tailSketch
	// base is the spill's; from and to are keep, in seconds since base.
	base, from, to int64
	// prints has the bit of every wanted key's keyPrint set: most
	// records are of other keys, and are passed over without a lookup.
	prints []uint64
}

// printBits sizes spillCounter.prints: 2^16 bits (8 KiB), under 2 %
// false hits for the at most 2 × Tracked keys a table ranks, whatever
// the tables.
const printBits = 16

// keyPrint is a cheap hash of a key: its last 8 bytes and its length.
func keyPrint(k []byte) uint64 {
	var x uint64
	if len(k) >= 8 {
		x = binary.LittleEndian.Uint64(k[len(k)-8:])
	} else {
		for _, c := range k {
			x = x<<8 | uint64(c)
		}
	}
	return ((x ^ uint64(len(k))) * 0x9e3779b97f4a7c15) >> (64 - printBits)
}

func newSpillCounter(k *keyCounter, names []entryKey, base int64, keep timeRange) *spillCounter {
	sc := &spillCounter{keys: k, names: names, byID: make([][traffic.NumClasses]map[string]*keySeconds, len(names)),
		tails: make([][traffic.NumClasses]*tailSketch, len(names)),
		base:  base, from: keep.from - base, to: keep.to - base, prints: make([]uint64, 1<<printBits/64)}
	ids := make(map[entryKey]uint32, len(names))
	for i, n := range names {
		ids[n] = uint32(i)
	}
	for c, ts := range k.tails {
		if n, ok := ids[entryKey{c.table, c.index}]; ok {
			sc.tails[n][c.class] = ts
		}
	}
	for id, ks := range k.keys {
		n, ok := ids[entryKey{id.table, id.index}]
		if !ok {
			continue
		}
		m := sc.byID[n][id.class]
		if m == nil {
			m = map[string]*keySeconds{}
			sc.byID[n][id.class] = m
		}
		m[id.key] = ks
		p := keyPrint([]byte(id.key))
		sc.prints[p/64] |= 1 << (p % 64)
	}
	return sc
}

// add adds a chunk of whole records.
func (sc *spillCounter) add(b []byte) error {
	for len(b) > 0 {
		if len(b) < recHead || len(b) < recHead+int(b[5]) {
			return fmt.Errorf("read the spill: a record cut short")
		}
		id, flags, n := binary.LittleEndian.Uint32(b), b[4], int(b[5])
		key := b[recHead : recHead+n]
		if int(id) >= len(sc.names) {
			return fmt.Errorf("read the spill: table %d of %d", id, len(sc.names))
		}
		c := traffic.Class(flags & flagClass)
		switch {
		case flags&flagThrottled != 0:
			if tc := sc.keys.throttled; tc != nil {
				t := sc.names[id]
				tc.group(throttleGroup{t.table, t.index, c}).addBytes(key, 1)
			}
		default:
			sc.addRecord(id, c, flags, key, b)
		}
		b = b[recHead+n:]
	}
	return nil
}

// addRecord adds up a record of class c of table id, whose key is key
// and whose head is b's: into the class's tail, and into its key's
// counts when the key is wanted.
func (sc *spillCounter) addRecord(id uint32, c traffic.Class, flags byte, key, b []byte) {
	sec := int64(binary.LittleEndian.Uint32(b[6:]))
	if sec < sc.from || sec >= sc.to {
		return
	}
	q := binary.LittleEndian.Uint32(b[10:])
	if ts := sc.tails[id][c]; ts != nil {
		ts.add(xxh3.Hash(key), q)
	}
	if p := keyPrint(key); sc.prints[p/64]&(1<<(p%64)) == 0 {
		return
	}
	if m := sc.byID[id][c]; m != nil {
		if ks := m[string(key)]; ks != nil {
			ks.count(sec+sc.base, q, sortKeyMask(flags))
		}
	}
}
