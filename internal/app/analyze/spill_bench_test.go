package analyze

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// spillEvents is n events of four tables, a fifth of them on 50 hot
// keys and the rest over 500 000, over an hour: the shape of the
// benchmark file (internal/benchgen).
func spillEvents(n int) []traffic.Event {
	rng := rand.New(rand.NewPCG(1, 2))
	tables := []string{"orders", "users", "sessions", "carts"}
	start := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	events := make([]traffic.Event, n)
	for i := range events {
		k := rng.IntN(500000)
		if rng.IntN(5) == 0 {
			k = rng.IntN(50)
		}
		events[i] = traffic.Event{Table: tables[rng.IntN(len(tables))], PK: fmt.Sprintf("user-%d", k), Class: traffic.Class(rng.IntN(2)),
			Units: 1, Time: start.Add(time.Duration(rng.IntN(3600)) * time.Second)}
	}
	return events
}

// BenchmarkSpill measures a record's cost: written while the inputs are
// read, and read back counting 800 keys (100 a class of each table).
func BenchmarkSpill(b *testing.B) {
	events := spillEvents(1 << 20)
	want := map[rankedKey]struct{}{}
	for _, t := range []string{"orders", "users", "sessions", "carts"} {
		for c := range traffic.Class(traffic.NumClasses) {
			for k := range 100 {
				want[rankedKey{table: t, key: fmt.Sprintf("user-%d", k*97), class: c}] = struct{}{}
			}
		}
	}
	valid := plausible(time.Now())
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			s, err := newKeySpill(valid)
			if err != nil {
				b.Fatal(err)
			}
			w := newSpillWriter(s)
			for i := 0; i < len(events); i += 512 {
				w.put(events[i:min(i+512, len(events))])
			}
			w.close()
			s.remove()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/event")
	})
	// Every class's tail too (tailkeys.go): the classes of the benchmark
	// file have more keys than the store counts exactly.
	tails := map[rankedClass]struct{}{}
	for k := range want {
		tails[rankedClass{k.table, k.index, k.class}] = struct{}{}
	}
	for _, bc := range []struct {
		name  string
		tails map[rankedClass]struct{}
	}{{"count", nil}, {"count-tails", tails}} {
		b.Run(bc.name, func(b *testing.B) { benchmarkSpillCount(b, events, want, bc.tails, valid) })
	}
}

// benchmarkSpillCount measures reading a spill of events back, counting
// the keys of want and the classes of tails.
func benchmarkSpillCount(b *testing.B, events []traffic.Event, want map[rankedKey]struct{}, tails map[rankedClass]struct{}, valid timeRange) {
	{
		s, err := newKeySpill(valid)
		if err != nil {
			b.Fatal(err)
		}
		defer s.remove()
		w := newSpillWriter(s)
		for i := 0; i < len(events); i += 512 {
			w.put(events[i:min(i+512, len(events))])
		}
		w.close()
		for b.Loop() {
			if _, err := s.count(want, false, tails, valid, 1); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/event")
	}
}
