package sketch

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestFootprint checks the memory bound: the computed footprint of the
// default configuration is at most 1 MiB per table (with the longest keys
// a table holds, MaxKeyBytes), and a table
// filled to every bound (all slots, both classes, dense HyperLogLogs, full
// candidate sets, the most shards and throttled keys, 64-byte keys) holds
// no more heap than computed (TestLongKeysFootprint fills one with 2 KiB
// keys).
func TestFootprint(t *testing.T) {
	cfg := DefaultConfig()
	fp := cfg.Footprint()
	t.Logf("footprint at defaults: %d bytes (%.3f MiB)", fp, float64(fp)/(1<<20))
	if fp > 1<<20 {
		t.Fatalf("footprint %d bytes over 1 MiB", fp)
	}
	if testing.Short() || raceEnabled {
		t.Skip("heap measurement needs a full, uninstrumented run")
	}
	now := t0
	s := newTestStore(t, cfg, func() time.Time { return now })
	slot := cfg.Window / time.Duration(cfg.SubWindows)
	key := func(i int) string { return fmt.Sprintf("%s%08d", strings.Repeat("k", 56), i) }
	put(t, s, ev("warm", "k", traffic.Read, 1))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	// 17 000 distinct keys per slot turn each slot's HyperLogLog dense.
	const perSlot = 17_000
	batch := make([]traffic.Event, 0, 1000)
	flush := func() {
		put(t, s, batch...)
		batch = batch[:0]
	}
	const tables = 3 // the heap per table, averaged: less noise
	for sl := range cfg.SubWindows {
		for i := range perSlot * tables {
			e := ev(fmt.Sprint("full", i%tables), key(sl*perSlot+i/tables), traffic.Class(i/tables%2), 1)
			e.SK = key(i / tables % 7)
			if i/tables < cfg.MaxShards {
				e.Shard = fmt.Sprintf("shardId-00000001700000000000-%08d", i)
			}
			batch = append(batch, e)
			if i/tables < 2*cfg.MaxThrottledKeys {
				t := e
				t.Throttled = true
				batch = append(batch, t)
			}
			if len(batch) >= 1000 {
				flush()
			}
		}
		flush()
		now = now.Add(slot)
	}
	now = now.Add(-slot) // stay in the last slot: every slot holds traffic
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	used := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / tables
	snap := s.Snapshot()
	ts := findTable(t, snap, "full0", "")
	t.Logf("filled table: %d bytes of heap, %d shards, %d throttled keys, %d distinct", used, len(ts.Shards), len(ts.Classes[traffic.Read].Throttled.Keys)+len(ts.Classes[traffic.Write].Throttled.Keys), ts.DistinctKeys)
	if len(ts.Shards) != cfg.MaxShards || len(ts.Classes[traffic.Read].Top) != cfg.Tracked {
		t.Fatalf("table not filled: %d shards, %d keys", len(ts.Shards), len(ts.Classes[traffic.Read].Top))
	}
	if used > int64(fp) {
		t.Fatalf("a full table holds %d bytes, over its computed footprint %d", used, fp)
	}
	runtime.KeepAlive(snap)
	runtime.KeepAlive(s)
}

// TestFootprintSizes checks the memory of a table as its keys grow
// (Config.FootprintFor) per size class: computed, never above the full
// bound, and measured on tables filled to the class (every key in both
// classes and every slot, 64-byte keys), no more than computed. A table of
// a few hundred keys costs a tenth of the full sketch, and one whose window
// empties gives its sketch back.
func TestFootprintSizes(t *testing.T) {
	if unsafe.Sizeof(candRec{}) != candRecBytes || unsafe.Sizeof(extRec{}) != extRecBytes || unsafe.Sizeof(slotCount{}) != slotCountBytes {
		t.Fatalf("record sizes %d, %d and %d, Footprint assumes %d, %d and %d", unsafe.Sizeof(candRec{}), unsafe.Sizeof(extRec{}), unsafe.Sizeof(slotCount{}), candRecBytes, extRecBytes, slotCountBytes)
	}
	cfg := DefaultConfig()
	full := cfg.Footprint()
	for _, tc := range []struct {
		keys, tables int
		keyBytes     int
		under        int // FootprintFor must stay under this
	}{
		{1, 50, 64, 16 << 10},
		{10, 50, 64, 24 << 10},
		{100, 20, 64, full / 8},
		{300, 10, 64, full / 3},
		{1000, 3, 64, full},
		{20_000, 3, 64, full + 1},
		// The longest keys DynamoDB allows, held as MaxKeyBytes.
		{300, 10, 2048, full / 3},
		{1000, 3, 2048, full},
	} {
		t.Run(fmt.Sprint(tc.keys, "keys of ", tc.keyBytes, " bytes"), func(t *testing.T) {
			fp := cfg.FootprintFor(tc.keys, tc.keyBytes)
			t.Logf("%d keys per class: %d bytes computed (%.1f %% of the full %d)", tc.keys, fp, 100*float64(fp)/float64(full), full)
			if fp > full || fp >= tc.under {
				t.Fatalf("%d keys: %d bytes computed, want under %d and at most the full bound %d", tc.keys, fp, tc.under, full)
			}
			if testing.Short() || raceEnabled {
				t.Skip("heap measurement needs a full, uninstrumented run")
			}
			used, s := fillTables(t, cfg, tc.tables, tc.keys, tc.keyBytes)
			t.Logf("%d keys per class: %d bytes measured", tc.keys, used)
			if used > int64(fp) {
				t.Fatalf("%d keys: a table holds %d bytes, over its computed %d", tc.keys, used, fp)
			}
			runtime.KeepAlive(s)
		})
	}
}

// TestFootprintShrinks checks that a table whose window has moved past
// its many keys gives the memory back: after a window of 20 000 keys and
// then windows of 10, it costs what a table of 40 keys does (a candidate
// set halves once a quarter full).
func TestFootprintShrinks(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("heap measurement needs a full, uninstrumented run")
	}
	cfg := DefaultConfig()
	now := t0
	s := newTestStore(t, cfg, func() time.Time { return now })
	slot := cfg.Window / time.Duration(cfg.SubWindows)
	const tables = 3
	put(t, s, ev("warm", "k", traffic.Read, 1))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	feedSlot := func(keys int) {
		putKeys(t, s, tables, keys, 64)
		now = now.Add(slot)
	}
	for range cfg.SubWindows {
		feedSlot(20_000)
	}
	big := heapSince(&before) / tables
	for range 3 * cfg.SubWindows {
		feedSlot(10)
	}
	small := heapSince(&before) / tables
	t.Logf("a table: %d bytes with 20 000 keys, %d once its window holds 10", big, small)
	if want := cfg.FootprintFor(40, 64); small > int64(want) {
		t.Fatalf("after the window moved on: %d bytes per table, want at most %d", small, want)
	}
	ts := findTable(t, s.Snapshot(), "t0", "")
	if ts.DistinctKeys != 10 || len(ts.Classes[traffic.Read].Top) != 10 {
		t.Fatalf("distinct %d, top %d: want the 10 keys, exactly", ts.DistinctKeys, len(ts.Classes[traffic.Read].Top))
	}
}

// putKeys puts one event of each of keys 64-byte keys, in both classes,
// into each of the tables t0, t1, ...
func putKeys(t *testing.T, s *Store, tables, keys, keyBytes int) {
	t.Helper()
	batch := make([]traffic.Event, 0, 1024)
	for tb := range tables {
		for i := range keys {
			for c := range traffic.NumClasses {
				batch = append(batch, ev(fmt.Sprint("t", tb), footprintKey(i, keyBytes), traffic.Class(c), 1))
				if len(batch) == cap(batch) {
					put(t, s, batch...)
					batch = batch[:0]
				}
			}
		}
	}
	put(t, s, batch...)
}

// footprintKey is key i, n bytes long (at least 8).
func footprintKey(i, n int) string { return fmt.Sprintf("%s%08d", strings.Repeat("k", max(n-8, 0)), i) }

func heapSince(before *runtime.MemStats) int64 {
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// fillTables fills n tables of a new live Store with keys distinct keys in
// both classes and every slot of the window, and returns the heap each
// holds on average.
func fillTables(t *testing.T, cfg Config, n, keys, keyBytes int) (int64, *Store) {
	t.Helper()
	now := t0
	s := newTestStore(t, cfg, func() time.Time { return now })
	slot := cfg.Window / time.Duration(cfg.SubWindows)
	put(t, s, ev("warm", "k", traffic.Read, 1))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for sl := range cfg.SubWindows {
		putKeys(t, s, n, keys, keyBytes)
		if sl < cfg.SubWindows-1 {
			now = now.Add(slot)
		}
	}
	used := heapSince(&before) / int64(n)
	ts := findTable(t, s.Snapshot(), "t0", "")
	if want := min(keys, cfg.Tracked); len(ts.Classes[traffic.Write].Top) != want {
		t.Fatalf("table not filled: %d keys reported, want %d", len(ts.Classes[traffic.Write].Top), want)
	}
	return used, s
}

// TestMemoryBudget checks the process memory model: it grows with the
// tables and their keys, counts only the tables tracked, and never passes
// MemoryBudget, which DefaultMaxTables keeps within the shipped limits
// (deploy's tests compare it with them).
func TestMemoryBudget(t *testing.T) {
	c := DefaultConfig()
	small := c.MemoryFor([]TableKeys{{200, 20}})
	if small >= c.MemoryFor([]TableKeys{{2500, 20}}) || c.MemoryFor(nil) != ProcessBaseBytes {
		t.Errorf("MemoryFor does not grow with the keys: base %d, 200 keys %d, 2500 keys %d", c.MemoryFor(nil), small, c.MemoryFor([]TableKeys{{2500, 20}}))
	}
	if got, want := small-ProcessBaseBytes, c.FootprintFor(200, 20)+TableOverheadBytes; got != want {
		t.Errorf("one table of 200 keys costs %d, want %d", got, want)
	}
	// Longer keys cost more, up to MaxKeyBytes, the most a key is held as;
	// an unknown length is taken at that bound.
	long, held, unknown := c.MemoryFor([]TableKeys{{200, 2048}}), c.MemoryFor([]TableKeys{{200, MaxKeyBytes}}), c.MemoryFor([]TableKeys{{200, 0}})
	if long <= small || long != held || unknown != held {
		t.Errorf("200 keys of 20 bytes cost %d, of 2 KiB %d, of MaxKeyBytes %d, of unknown length %d: want more for longer keys, the same past MaxKeyBytes and for unknown", small, long, held, unknown)
	}
	many := make([]TableKeys, 3*c.MaxTables)
	for i := range many {
		many[i] = TableKeys{Keys: 1 << 20}
	}
	if got, want := c.MemoryFor(many), c.MemoryFor(many[:c.MaxTables]); got != want {
		t.Errorf("MemoryFor counts tables past MaxTables: %d, want %d", got, want)
	}
	if got, budget := c.MemoryFor(many), c.MemoryBudget(); got > budget {
		t.Errorf("MemoryFor of MaxTables full tables = %d, over MemoryBudget %d", got, budget)
	}
	if got, want := c.MemoryBudget(), ProcessBaseBytes+DefaultMaxTables*(c.Footprint()+TableOverheadBytes); got != want {
		t.Errorf("MemoryBudget = %d, want %d", got, want)
	}
	t.Logf("MemoryBudget at the defaults: %d bytes (%.1f MiB)", c.MemoryBudget(), float64(c.MemoryBudget())/(1<<20))
}

// TestFootprintSmallTable checks what most tables of an account cost: a
// table of 200 keys in each class, each key seen in one slot of the window
// (a burst), holds under 64 KiB, a sixteenth of the full bound. Counts are
// kept only for the slots a key has traffic in, a key seen in one slot and
// one second keeps their place in its record (no extension), and candidate
// sets grow by half, so such a table pays for 200 keys, not for 256 keys
// in 12 slots (196 KB when counts were kept for every slot, 88 KB when
// every key had what the extension now holds).
func TestFootprintSmallTable(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("heap measurement needs a full, uninstrumented run")
	}
	cfg := DefaultConfig()
	now := t0
	s := newTestStore(t, cfg, func() time.Time { return now })
	put(t, s, ev("warm", "k", traffic.Read, 1))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	const tables, keys = 20, 200
	putKeys(t, s, tables, keys, 64)
	used := heapSince(&before) / tables
	const bound = 64 << 10
	t.Logf("a table of %d keys in each class, each in one slot: %d bytes (bound %d, full %d)", keys, used, bound, cfg.Footprint())
	if used > bound {
		t.Fatalf("a table of %d keys holds %d bytes, want at most %d", keys, used, bound)
	}
	ts := findTable(t, s.Snapshot(), "t0", "")
	if ts.DistinctKeys != keys || len(ts.Classes[traffic.Write].Top) != cfg.Tracked {
		t.Fatalf("distinct %d, top %d: want %d keys, %d reported", ts.DistinctKeys, len(ts.Classes[traffic.Write].Top), keys, cfg.Tracked)
	}
	runtime.KeepAlive(s)
}
