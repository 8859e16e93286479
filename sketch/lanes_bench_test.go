package sketch

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// BenchmarkLanesHandoff measures the idea behind feeding one table from
// several cores with per-core lanes (docs/bench/sketch.md): the table's
// keys split in two by a hash bit, each half with its own sketches at half
// size (candidates, count-min width), each owned by one goroutine, which
// counts its own half of every batch and hands the other half to the
// other's inbox. "one" is one goroutine with one table counting
// everything, the baseline; "handoff" is two goroutines with two lanes.
// Run with -cpu 2 and compare Mupdates/s: the hand-off scales if it
// approaches twice "one". It is a measurement of the idea, not the Store:
// distinct keys, shards and totals are per lane here.
func BenchmarkLanesHandoff(b *testing.B) {
	stream := getPutStream()
	full := DefaultConfig()
	half := full
	half.Candidates /= 2
	half.Width /= 2
	half = half.withDefaults()
	full = full.withDefaults()
	newLane := func(cfg *Config) *table {
		return newTable(tableID{"bench", ""}, cfg, 0, t0.Unix(), full.Window/time.Duration(full.SubWindows))
	}
	for _, mode := range []string{"one", "handoff"} {
		b.Run(mode, func(b *testing.B) {
			lanes := []*table{newLane(&full)}
			if mode == "handoff" {
				lanes = []*table{newLane(&half), newLane(&half)}
			}
			// A batch's events stay where they are (the stream); a lane gets
			// the indexes of its events and their hashes.
			type work struct {
				events []traffic.Event
				idx    []int32
				hs     []uint64
			}
			inbox := make([]chan work, len(lanes))
			for i := range inbox {
				inbox[i] = make(chan work, 64)
			}
			pool := sync.Pool{New: func() any { return &work{idx: make([]int32, 0, putBatch), hs: make([]uint64, 0, putBatch)} }}
			var worker, updates atomic.Int64
			var mu [2]sync.Mutex
			sec := t0.Unix()
			count := func(lane int, x *work) {
				mu[lane].Lock()
				lanes[lane].addEvents(x.events, x.idx, x.hs, sec)
				mu[lane].Unlock()
			}
			b.ResetTimer()
			c0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				w := int(worker.Add(1)-1) % len(lanes)
				off := w * 7919 * putBatch % len(stream)
				var n int64
				own := &work{idx: make([]int32, 0, putBatch), hs: make([]uint64, 0, putBatch)}
				for pb.Next() {
					batch := stream[off : off+putBatch]
					own.events, own.idx, own.hs = batch, own.idx[:0], own.hs[:0]
					other := pool.Get().(*work)
					other.events, other.idx, other.hs = batch, other.idx[:0], other.hs[:0]
					for k := range batch {
						h := keyHash(batch[k].PK)
						if len(lanes) == 1 || int(h>>63) == w {
							own.idx, own.hs = append(own.idx, int32(k)), append(own.hs, h)
						} else {
							other.idx, other.hs = append(other.idx, int32(k)), append(other.hs, h)
						}
					}
					count(w, own)
					if len(lanes) > 1 {
						inbox[1-w] <- *other
					drain:
						for {
							select {
							case x := <-inbox[w]:
								count(w, &x)
								pool.Put(&x)
							default:
								break drain
							}
						}
					} else {
						pool.Put(other)
					}
					n += putBatch
					off = (off + putBatch) % len(stream)
				}
				updates.Add(n)
			})
			cpu := cpuTime() - c0
			// What is left in the inboxes is counted outside the timing.
			for i := range inbox {
				close(inbox[i])
				for x := range inbox[i] {
					count(i, &x)
				}
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(updates.Load()), "cpu-ns/update")
			b.ReportMetric(float64(updates.Load())/b.Elapsed().Seconds()/1e6, "Mupdates/s")
		})
	}
}
