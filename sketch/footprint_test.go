package sketch

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
)

// TestFootprint checks the memory bound: the computed footprint of the
// default configuration is at most 1 MiB per table, and a table filled to
// every bound (all slots, both classes, dense HyperLogLogs, full candidate
// sets, the most shards and throttled keys, 64-byte keys) holds no more
// heap than computed.
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
	put(t, s, ev("warm", "k", ingest.Read, 1))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	// 17 000 distinct keys per slot turn each slot's HyperLogLog dense.
	const perSlot = 17_000
	batch := make([]ingest.Event, 0, 1000)
	flush := func() {
		put(t, s, batch...)
		batch = batch[:0]
	}
	const tables = 3 // the heap per table, averaged: less noise
	for sl := range cfg.SubWindows {
		for i := range perSlot * tables {
			e := ev(fmt.Sprint("full", i%tables), key(sl*perSlot+i/tables), ingest.Class(i/tables%2), 1)
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
	t.Logf("filled table: %d bytes of heap, %d shards, %d throttled keys, %d distinct", used, len(ts.Shards), len(ts.Throttled), ts.DistinctKeys)
	if len(ts.Shards) != cfg.MaxShards || len(ts.Classes[ingest.Read].Top) != cfg.Tracked {
		t.Fatalf("table not filled: %d shards, %d keys", len(ts.Shards), len(ts.Classes[ingest.Read].Top))
	}
	if used > int64(fp) {
		t.Fatalf("a full table holds %d bytes, over its computed footprint %d", used, fp)
	}
	runtime.KeepAlive(snap)
	runtime.KeepAlive(s)
}
