package sketch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// putStream is a pre-built stream of Zipf 1.0 events over 1M keys, in
// batches, reused by the Put benchmarks.
var (
	putStreamOnce sync.Once
	putStream     []traffic.Event
)

func getPutStream() []traffic.Event {
	putStreamOnce.Do(func() {
		const n = 1 << 20
		keys := make([]string, benchKeys)
		for i := range keys {
			keys[i] = keyName(i)
		}
		z := newZipf(benchKeys, 1.0, 99)
		perm := z.rng.Perm(benchKeys)
		// Each event's key is its own copy, laid out in event order as a
		// reader decoding a log would leave them: the key bytes are read
		// sequentially, not from a million scattered strings.
		var arena strings.Builder
		ranks := make([]int, n)
		for i := range ranks {
			ranks[i] = perm[z.next()]
			arena.WriteString(keys[ranks[i]])
		}
		all := arena.String()
		putStream = make([]traffic.Event, n)
		off := 0
		for i := range putStream {
			k := all[off : off+len(keys[ranks[i]])]
			off += len(k)
			putStream[i] = traffic.Event{Table: "bench", PK: k, Class: traffic.Write, Units: 1}
		}
	})
	return putStream
}

const putBatch = 512

// BenchmarkPut measures Store.Put on one table, Zipf 1.0 over 1M keys, in
// batches of 512: ns/update single-threaded. Each batch is copied into a
// reused buffer first, as a reader fills its batch right before handing it
// over (timed: about 2 ns per event); reading a 150 MB stream of cold
// Events would measure memory bandwidth instead.
func BenchmarkPut(b *testing.B) {
	stream := getPutStream()
	s, _ := NewStore(DefaultConfig(), func() time.Time { return t0 })
	ctx := context.Background()
	// Warm: the sketches reach their steady state.
	for i := 0; i < len(stream); i += putBatch {
		_ = s.Put(ctx, stream[i:i+putBatch])
	}
	keys := make([]string, len(stream))
	for i := range stream {
		keys[i] = stream[i].PK
	}
	batch := make([]traffic.Event, putBatch)
	b.ResetTimer()
	var n int
	c0 := cpuTime()
	for i := 0; b.Loop(); i = (i + putBatch) % len(stream) {
		for j := range batch {
			batch[j] = traffic.Event{Table: "bench", PK: keys[i+j], Class: traffic.Write, Units: 1}
		}
		_ = s.Put(ctx, batch)
		n += putBatch
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/update")
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(n), "cpu-ns/update")
}

// BenchmarkPutParallel feeds the Store from GOMAXPROCS goroutines, each with
// its own batches. "shared" sends every goroutine's events to one table,
// "tables" gives each goroutine its own table (readers of different
// tables). Run with -cpu 1,2: the ratio of updates/s is the scaling.
func BenchmarkPutParallel(b *testing.B) {
	stream := getPutStream()
	for _, mode := range []string{"shared", "tables"} {
		b.Run(mode, func(b *testing.B) {
			s, _ := NewStore(DefaultConfig(), func() time.Time { return t0 })
			ctx := context.Background()
			var worker atomic.Int64
			var updates atomic.Int64
			b.ResetTimer()
			c0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				w := worker.Add(1)
				batch := make([]traffic.Event, putBatch)
				table := "bench"
				if mode == "tables" {
					table = fmt.Sprint("bench-", w)
				}
				off := int(w) * 7919 * putBatch % len(stream)
				var n int64
				for pb.Next() {
					copy(batch, stream[off:off+putBatch])
					for i := range batch {
						batch[i].Table = table
					}
					_ = s.Put(ctx, batch)
					n += putBatch
					off = (off + putBatch) % len(stream)
				}
				updates.Add(n)
			})
			b.ReportMetric(float64(updates.Load())/b.Elapsed().Seconds()/1e6, "Mupdates/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(updates.Load()), "ns/update")
			b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(updates.Load()), "cpu-ns/update")
		})
	}
}

// BenchmarkSnapshot measures Snapshot of one busy table (1M Zipf events in
// every slot of the window), with the distinct-key estimate cached
// ("clean") and recomputed because traffic arrived since ("dirty").
func BenchmarkSnapshot(b *testing.B) {
	stream := getPutStream()
	now := t0
	s, _ := NewStore(DefaultConfig(), func() time.Time { return now })
	ctx := context.Background()
	slot := s.Config().Window / time.Duration(s.Config().SubWindows)
	for range s.Config().SubWindows {
		for i := 0; i < len(stream); i += putBatch * 8 {
			_ = s.Put(ctx, stream[i:i+putBatch])
		}
		now = now.Add(slot)
	}
	now = now.Add(-slot)
	for _, mode := range []string{"clean", "dirty"} {
		b.Run(mode, func(b *testing.B) {
			one := make([]traffic.Event, 1)
			i := 0
			c0 := cpuTime()
			for b.Loop() {
				if mode == "dirty" {
					i++
					one[0] = traffic.Event{Table: "bench", PK: keyName(benchKeys + i), Class: traffic.Write, Units: 1}
					_ = s.Put(ctx, one)
				}
				_ = s.Snapshot()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/snapshot")
			b.ReportMetric(float64((cpuTime()-c0).Microseconds())/float64(b.N), "cpu-µs/snapshot")
		})
	}
}

// BenchmarkPutZipf feeds Store.Put the stream of BenchmarkHeavyHitters
// (Zipf 1.0 and 1.2 over 1M keys, the same generator and seed, its batches
// of 1024, one key string per key), 1M updates an op after a warm 1M: the
// counting core alone, light enough to run under cachegrind (-benchtime
// 1x: 2M updates), where instructions per update do not depend on the
// load (docs/bench/sketch.md).
func BenchmarkPutZipf(b *testing.B) {
	for _, s := range []float64{1.0, 1.2} {
		b.Run(fmt.Sprintf("zipf%.1f", s), func(b *testing.B) {
			keys := make([]string, benchKeys)
			for i := range keys {
				keys[i] = keyName(i)
			}
			z := newZipf(benchKeys, s, 20261122)
			perm := z.rng.Perm(benchKeys)
			const n = 1 << 20
			stream := make([]traffic.Event, n)
			for i := range stream {
				stream[i] = traffic.Event{Table: "bench", PK: keys[perm[z.next()]], Class: traffic.Write, Units: 1}
			}
			st, _ := NewStore(DefaultConfig(), func() time.Time { return t0 })
			ctx := context.Background()
			batch := make([]traffic.Event, benchBatch)
			feed := func() {
				for i := 0; i < n; i += benchBatch {
					copy(batch, stream[i:i+benchBatch])
					_ = st.Put(ctx, batch)
				}
			}
			feed()
			b.ResetTimer()
			for b.Loop() {
				feed()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/update")
		})
	}
}
