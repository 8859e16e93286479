package sketch

import "github.com/hotkeyd/hotkeyd/traffic"

// Footprint returns the bytes one table (or index) costs at most under c,
// both classes and the whole window, whatever the keys (a table holds
// none longer than MaxKeyBytes). It is fixed by the configuration and does
// not grow with the number of distinct keys. The parts:
//
//   - count-min: 2 classes × 2 generations × Depth × Width × 4 B;
//   - candidates: 2 × Candidates keys, each a 64-byte record, per-slot
//     units, accesses, sort-key bitmaps and per-second peaks (16 B a slot,
//     and a 2-byte position), a per-second ring, the key bytes
//     (MaxKeyBytes) and its hash index slots;
//   - distinct keys: per slot the larger of the exact small set (1000
//     hashes in a 2048-slot table) and a dense HyperLogLog (2^p bytes), plus
//     one merge buffer;
//   - shards and throttled keys: per entry the id, the key bytes and
//     per-slot counts (shards: and a byte a slot for the busiest second,
//     the newest second and its records; throttled keys, per class:
//     counts and what they inherited), and per class and slot the
//     throttled calls by cause;
//   - per-slot and per-second class totals and fixed headers;
//   - 4 % for allocator size classes and map growth.
func (c Config) Footprint() int {
	c = c.withDefaults()
	s := c.SubWindows
	cms := ingest2 * 2 * c.Depth * c.Width * 4
	cand := ingest2 * candidateBytes(c, c.Candidates, c.Candidates, MaxKeyBytes)
	hll := 1 << c.HLLPrecision
	exact := exactTableSize * 8
	distinct := s*max(hll, exact) + hll
	shards := c.MaxShards * (footprintShardBytes + 16 + 8 + s*4 + s + 4 + 2 + 16)
	throttled := traffic.NumClasses * (c.MaxThrottledKeys*(MaxKeyBytes+16+8+2*s*4+16) + s*(4+8*int(traffic.NumThrottleCauses)))
	sum := cms + cand + distinct + shards + throttled + classBytes(c) + headerBytes
	// Allocator size classes and map growth add a few percent: measured at
	// the defaults, a table filled to every bound holds about 3 % more heap
	// than the sum of its arrays (TestFootprint).
	return sum + sum/25
}

// FootprintFor returns the bytes one table (or index) costs under c whose
// window holds keys distinct partition keys in each of its two classes,
// every key in every slot, keyBytes long on average (a key is held as at
// most MaxKeyBytes, however long it is; keyBytes ≤ 0 takes that bound),
// without stream shards or throttled calls (add about 150 bytes for each
// of those). It is what the memory of a table follows as its keys grow:
//
//   - up to Candidates keys a class is counted exactly: its candidate set,
//     which starts at 8 entries and grows by half, costs at most about
//     0.4 KB a key in every slot (record, per-slot counts, per-second ring,
//     index, key bytes; a key pays for the counts of the slots it has
//     traffic in only, 18 B a slot, which this counts in every slot), and the
//     distinct keys are the candidates, at no cost;
//   - past Candidates keys the class grows into the sketch: its count-min
//     sketch (2 generations × Depth × Width × 4 B) and the table's per-slot
//     distinct-key sets (exact sets of 8 B a key, each turning into a 2^p B
//     HyperLogLog past 1000 keys) are made, up to Footprint in all.
//
// Both shrink back as the window empties: a candidate set halves when it
// is a quarter full, the count-min sketch and the distinct-key sets go
// when no traffic in the window is counted only by them.
func (c Config) FootprintFor(keys, keyBytes int) int {
	c = c.withDefaults()
	if keyBytes <= 0 || keyBytes > MaxKeyBytes {
		keyBytes = MaxKeyBytes
	}
	sum := headerBytes + classBytes(c) + c.SubWindows*8
	if keys > 0 {
		sum += ingest2 * candidateBytes(c, grownCapacity(keys, c.Candidates), min(keys, c.Candidates), keyBytes)
	}
	if keys > c.Candidates {
		sum += ingest2 * 2 * c.Depth * c.Width * 4
		// Each slot's set holds both classes' keys; past exactDistinct it is
		// a HyperLogLog, and a snapshot merges the slots into one more.
		perSlot := 1 << c.HLLPrecision
		if all := ingest2 * keys; all <= exactDistinct {
			perSlot = exactSetSize(all) * 8
		} else {
			sum += 1 << c.HLLPrecision
		}
		sum += c.SubWindows * perSlot
	}
	return sum + sum/25
}

// The process around the tables, measured with the daemon
// (internal/cmd/membench, docs/limits.md): what it holds without any table,
// and what each tracked table costs besides its sketch (its metric
// series, its share of a snapshot and of the detector's state).
const (
	// ProcessBaseBytes is the live heap and runtime of a daemon that
	// tracks no table (measured: 27 MiB resident, 5 MiB of heap).
	ProcessBaseBytes = 32 << 20
	// TableOverheadBytes is what a tracked table costs outside its
	// sketch (measured: about 35 KiB a table with 1 000 tables).
	TableOverheadBytes = 48 << 10
)

// TableKeys is what the memory of a table follows: the distinct partition
// keys of its window (in each class) and their mean length in bytes (0:
// unknown, taken as MaxKeyBytes, the most a key is held as).
type TableKeys struct {
	Keys, KeyBytes int
}

// MemoryFor returns the live memory, in bytes, of a daemon whose tables
// hold the given keys (one entry a table or index; past MaxTables only the
// first MaxTables count, as only that many are tracked): ProcessBaseBytes,
// plus per table FootprintFor its keys and TableOverheadBytes. Go's
// collector lets the resident memory grow past the live memory by up to
// GOGC percent (100 %) unless GOMEMLIMIT holds it down; docs/limits.md
// says how to size a limit from it.
func (c Config) MemoryFor(tables []TableKeys) int {
	c = c.withDefaults()
	sum := ProcessBaseBytes
	for _, t := range tables[:min(len(tables), c.MaxTables)] {
		sum += c.FootprintFor(t.Keys, t.KeyBytes) + TableOverheadBytes
	}
	return sum
}

// MemoryBudget returns the most live memory the daemon holds under c:
// ProcessBaseBytes plus MaxTables tables at Footprint and
// TableOverheadBytes each, whatever the input. At DefaultConfig it is
// 356 MB (340 MiB).
func (c Config) MemoryBudget() int {
	c = c.withDefaults()
	return ProcessBaseBytes + c.MaxTables*(c.Footprint()+TableOverheadBytes)
}

// grownCapacity is the capacity a candidate set has grown to for keys keys:
// minCapacity grown by half until it holds them, at most limit.
func grownCapacity(keys, limit int) int {
	capacity := min(minCapacity, limit)
	for capacity < keys && capacity < limit {
		capacity = grow(capacity, limit)
	}
	return capacity
}

// headerBytes is the fixed part of a table: its struct, slice headers and
// the table index's entry.
const headerBytes = 4096

// classBytes is the per-slot and per-second totals of both classes.
func classBytes(c Config) int {
	return ingest2 * (c.SubWindows*(8+8+8) + c.classRing()*8 + c.SubWindows*8)
}

// candidateBytes is the memory of one class's candidate set of the given
// capacity holding keys keys, each in every slot: per entry the record,
// the key's string header, the heap slot and an extension (per-slot
// positions, per-second ring, first second and estimate flags), per key
// its bytes, per slot a column of counts, plus the index. A key seen in
// one slot and one second has no extension, and costs less.
func candidateBytes(c Config, capacity, keys, keyBytes int) int {
	perEntry := candRecBytes + 16 + 4 + c.SubWindows*2 + c.keyRing()*4 + extRecBytes
	counts := c.SubWindows * (columnCapacity(keys, capacity)*slotCountBytes + 24 + 4)
	return capacity*perEntry + keys*keyBytes + counts + indexSize(capacity)*4
}

// columnCapacity is the capacity a slot's column of counts has grown to
// for keys keys: doubled from minCapacity, at most limit.
func columnCapacity(keys, limit int) int {
	n := min(minCapacity, limit)
	for n < keys {
		n = min(2*n, limit)
	}
	return n
}

// Sizes of the candidate set's records, for the size arithmetic
// (TestFootprintSizes checks them against unsafe.Sizeof).
const (
	candRecBytes   = 40
	extRecBytes    = 32
	slotCountBytes = 16
)

// ingest2 is traffic.NumClasses, spelled out for the size arithmetic.
const ingest2 = 2
