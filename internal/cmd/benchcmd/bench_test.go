package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/hotkeyd/hotkeyd/internal/benchgen"
)

var benchEvents = flag.Int("jsonl.events", benchgen.DefaultEvents, "events in the file of BenchmarkIngest")

// BenchmarkIngest compares, on the same generated file in the same run,
// the obvious exact counter (encoding/json + maps) with hotkeyd's paths:
// the jsonl reader into the sketches on one core (fast), and hotkeyd
// analyze's on every core (parallel; -cpu 1,2 to see it scale). Peak
// memory needs a process per implementation: see scripts/bench-jsonl.sh.
//
//	go test -run XXX -bench Ingest -benchtime 1x -count 3 -cpu 1,2 ./internal/cmd/benchcmd
func BenchmarkIngest(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	size, err := benchgen.Generate(f, *benchEvents, 1)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	impls := []struct {
		name string
		run  func(*os.File) (Result, error)
	}{
		{"exact", func(f *os.File) (Result, error) { return Exact(f) }},
		{"fast", func(f *os.File) (Result, error) { return Fast(context.Background(), f) }},
		{"parallel", func(f *os.File) (Result, error) { return Parallel(context.Background(), f.Name()) }},
	}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			var events int64
			for b.Loop() {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				res, err := impl.run(f)
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
				if res.Events != int64(*benchEvents) {
					b.Fatalf("%d events of %d", res.Events, *benchEvents)
				}
				events += res.Events
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
		})
	}
}

// TestExactAndFastAgree checks on a small file that the implementations
// read the same events and find the same heaviest key, and that the
// parallel path finds what the fast one finds.
func TestExactAndFastAgree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := benchgen.Generate(f, 20_000, 5); err != nil {
		t.Fatal(err)
	}
	f.Close()
	read := func(impl func(*os.File) (Result, error)) Result {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := impl(f)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	e := read(func(f *os.File) (Result, error) { return Exact(f) })
	q := read(func(f *os.File) (Result, error) { return Fast(context.Background(), f) })
	if e.Events != 20_000 || q.Events != e.Events || e.Rejected != 0 || q.Rejected != 0 {
		t.Errorf("events exact %d fast %d (rejected %d, %d), want 20000", e.Events, q.Events, e.Rejected, q.Rejected)
	}
	if e.Tables != q.Tables || e.TopKey != q.TopKey {
		t.Errorf("exact %+v, fast %+v: tables or top key differ", e, q)
	}
	if d := float64(q.DistinctKeys)/float64(e.DistinctKeys) - 1; d > 0.03 || d < -0.03 {
		t.Errorf("distinct keys exact %d fast %d: more than 3%% apart", e.DistinctKeys, q.DistinctKeys)
	}
	p, err := Parallel(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if p != q {
		t.Errorf("parallel %+v, fast %+v", p, q)
	}
}
