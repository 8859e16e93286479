package sketch

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// longKey is key i of 2 KiB, the longest string partition key DynamoDB
// allows; all share their first 2042 bytes, two-byte characters.
func longKey(i int) string { return strings.Repeat("é", 1021) + fmt.Sprintf("%06d", i) }

// TestLongKeysHeldShort checks that keys longer than MaxKeyBytes are
// held, counted and reported shortened (their first bytes, "…" and their
// hash), kept apart although their first 2042 bytes are the same, and
// counted exactly, as candidates and as throttled keys.
func TestLongKeysHeldShort(t *testing.T) {
	now := t0
	s := newTestStore(t, DefaultConfig(), func() time.Time { return now })
	var batch []traffic.Event
	for i := range 50 {
		for range i + 1 {
			batch = append(batch, ev("long", longKey(i), traffic.Read, 1))
		}
		th := ev("long", longKey(i), traffic.Write, 0)
		th.Throttled = true
		batch = append(batch, th)
	}
	batch = append(batch, ev("long", strings.Repeat("s", MaxKeyBytes), traffic.Read, 1000))
	put(t, s, batch...)
	ts := findTable(t, s.Snapshot(), "long", "")
	top := ts.Classes[traffic.Read].Top
	if len(top) != 51 || ts.DistinctKeys != 51 {
		t.Fatalf("%d keys reported, %d distinct, want 51", len(top), ts.DistinctKeys)
	}
	if top[0].Key != strings.Repeat("s", MaxKeyBytes) {
		t.Errorf("a key of MaxKeyBytes is held shortened: %q", top[0].Key)
	}
	seen := map[string]bool{}
	for i, k := range top[1:] {
		n := 50 - i
		if k.Units != float64(n) || k.Error != 0 {
			t.Errorf("key %d: %v units ± %v, want %d exactly", n-1, k.Units, k.Error, n)
		}
		if len(k.Key) > MaxKeyBytes || !utf8.ValidString(k.Key) || !strings.HasPrefix(longKey(n-1), strings.Split(k.Key, "…")[0]) {
			t.Errorf("key %d held as %q (%d bytes)", n-1, k.Key, len(k.Key))
		}
		if want := heldKey(longKey(n-1), keyHash(longKey(n-1))); k.Key != want {
			t.Errorf("key %d reported as %q, want %q", n-1, k.Key, want)
		}
		seen[k.Key] = true
	}
	if len(seen) != 50 {
		t.Errorf("%d different keys reported for 50", len(seen))
	}
	thr := ts.Classes[traffic.Write].Throttled
	if len(thr.Keys) != 50 || thr.Error != 0 {
		t.Fatalf("%d throttled keys within %d, want 50 exactly", len(thr.Keys), thr.Error)
	}
	for _, k := range thr.Keys {
		if len(k.Key) > MaxKeyBytes || k.Count != 1 || k.Max != 1 {
			t.Errorf("throttled key %q (%d bytes) counted %d, want held short and 1", k.Key, len(k.Key), k.Count)
		}
	}
}

// TestLongKeysFootprint fills tables with 400 keys of 2 KiB in both
// classes and every slot, and checks that a table holds no more than
// Footprint, the bound whatever the keys.
func TestLongKeysFootprint(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("heap measurement needs a full, uninstrumented run")
	}
	cfg := DefaultConfig()
	now := t0
	s := newTestStore(t, cfg, func() time.Time { return now })
	slot := cfg.Window / time.Duration(cfg.SubWindows)
	put(t, s, ev("warm", "k", traffic.Read, 1))
	keys := make([]string, 400)
	for i := range keys {
		keys[i] = strings.Repeat("x", 2040) + fmt.Sprintf("%08d", i)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	const tables = 4
	for sl := range cfg.SubWindows {
		var batch []traffic.Event
		for tb := range tables {
			for _, k := range keys {
				for c := range traffic.NumClasses {
					batch = append(batch, ev(fmt.Sprint("t", tb), k, traffic.Class(c), 1))
				}
			}
		}
		put(t, s, batch...)
		if sl < cfg.SubWindows-1 {
			now = now.Add(slot)
		}
	}
	used := heapSince(&before) / tables
	t.Logf("a table of 400 keys of 2 KiB: %d bytes, Footprint %d", used, cfg.Footprint())
	if used > int64(cfg.Footprint()) {
		t.Fatalf("a table of 400 keys of 2 KiB holds %d bytes, over Footprint %d", used, cfg.Footprint())
	}
	runtime.KeepAlive(keys)
	runtime.KeepAlive(s)
}
