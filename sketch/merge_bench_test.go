package sketch

import (
	"testing"
)

// BenchmarkMerge measures Store.Merge of one busy table (each store fed
// half of 1M Zipf 1.0 events over 1M keys, whole-file mode, both in the
// sketch phase), the cost analyze on several cores adds once per worker.
func BenchmarkMerge(b *testing.B) {
	stream := getPutStream()
	fill := func(part int) *Store {
		s, _ := NewStore(Config{}, nil)
		half := len(stream) / 2
		for i := part * half; i < (part+1)*half; i += putBatch {
			_ = s.Put(b.Context(), stream[i:i+putBatch])
		}
		return s
	}
	other := fill(1)
	for b.Loop() {
		b.StopTimer()
		s := fill(0)
		b.StartTimer()
		if err := s.Merge(other); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/merge")
}
