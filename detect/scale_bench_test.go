package detect

import (
	"encoding/json"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkScaleView measures what the 10× / 100× view adds to the
// daemon's tick and to its report at 300 busy tables: a Tracker's
// Evaluate of benchSnapshot(300) (every table changed, 100 keys a class,
// the busiest 10 of each class past the ceiling at 100×) with the view
// and without it (Tracker.noScale), and the report's JSON encoding (what
// /api/v1/hotkeys writes) with its scale entries and without them. Run
// with -count so that the pairs alternate, and compare medians
// (docs/benchmarks.md):
//
//	go test -run '^$' -bench ScaleView -benchtime 20x -count 7 ./detect/
func BenchmarkScaleView(b *testing.B) {
	const tables = 300
	snap := benchSnapshot(tables)
	tick := func(noScale bool) func(b *testing.B) {
		return func(b *testing.B) {
			tr := NewTracker(DefaultSettings())
			tr.noScale = noScale
			tr.Evaluate(snap) // the first evaluation raises every diagnosis
			runtime.GC()
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				tr.Evaluate(snap)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/tables, "ns/table")
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e6, "cpu-ms/op")
		}
	}
	b.Run("tick", tick(false))
	b.Run("tick-without", tick(true))

	tr := NewTracker(DefaultSettings())
	rep, _ := tr.Evaluate(snap)
	scales := 0
	for _, t := range rep.Tables {
		scales += len(t.Scale)
	}
	if scales == 0 {
		b.Fatal("the snapshot's report has no scale view to measure")
	}
	without := rep
	without.Tables = append(without.Tables[:0:0], rep.Tables...)
	for i := range without.Tables {
		without.Tables[i].Scale = nil
	}
	encode := func(r any) func(b *testing.B) {
		return func(b *testing.B) {
			runtime.GC()
			b.ReportAllocs()
			cpu := cpuTime(b)
			var n int
			for b.Loop() {
				out, err := json.Marshal(r)
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(n), "bytes")
			b.ReportMetric(float64(scales), "scale-keys")
		}
	}
	b.Run("report", encode(rep))
	b.Run("report-without", encode(without))
}

// cpuTime returns the CPU time the process has used (every thread: the
// garbage collector's work on the allocations too), which a machine shared
// with other work disturbs less than the wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
