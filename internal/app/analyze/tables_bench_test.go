package analyze

import "testing"

// BenchmarkTableTally measures tallying an event's table (tables.go) in
// a batch of the benchmark file's four tables, interleaved.
func BenchmarkTableTally(b *testing.B) {
	events := spillEvents(512)
	t := newTableTally()
	for b.Loop() {
		t.put(events)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/event")
}
