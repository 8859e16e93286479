package main

// The implementations the JSON-lines benchmarks compare on the same file
// (written by benchgen): Exact, the obvious counter (bufio.Scanner,
// encoding/json into a struct, a map per table and class), and hotkeyd's
// paths: Fast (the jsonl reader into the sketches on one core), Parallel
// and Analyze (as hotkeyd analyze runs it).

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest/formats"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/ingest/parallel"
	"github.com/hotkeyd/hotkeyd/internal/app/analyze"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/internal/exactcounter"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Result is what an implementation found: enough to check that both read
// the same file the same way. It is the exact counter's own result, which
// every implementation fills alike.
type Result = exactcounter.Result

// Exact counts r the obvious way: every line decoded by encoding/json, units
// summed per key in a map per table, index and class
// (internal/exactcounter, which internal/cmd/exactcount runs alone).
func Exact(r io.Reader) (Result, error) {
	return exactcounter.Count(r)
}

// Parallel reads the file path as hotkeyd analyze does: on every core
// (package ingest/parallel, GOMAXPROCS workers), through the formats hotkeyd
// reads with batches recycled, into sketch.Stores merged into one, with
// the garbage collector set as analyze sets it.
func Parallel(ctx context.Context, path string) (Result, error) {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(parallel.GCPercent))
	}
	def := config.Default()
	cfg := analyze.SketchConfig(def.Pipeline())
	rep := &countingReporter{}
	var failed error
	store, _, err := parallel.Read(ctx, parallel.Config[*sketch.Store]{
		Formats: formats.New(formats.Config{Reporter: rep, Recycle: true}),
		New:     func() (*sketch.Store, error) { return sketch.NewStore(cfg, time.Now) },
		Merge:   (*sketch.Store).Merge,
		Reorder: cfg.RecentSeconds,
		Failed:  func(_ string, err error) { failed = err },
	}, path)
	if err == nil {
		err = failed
	}
	if err != nil {
		return Result{}, err
	}
	res := summary(store.Snapshot())
	res.Rejected = rep.n.Load()
	return res, nil
}

// countingReporter counts rejected records.
type countingReporter struct{ n atomic.Int64 }

func (c *countingReporter) Reject(string, string, error) { c.n.Add(1) }
func (c *countingReporter) Error(string, string, error)  {}

// summary is the Result of a snapshot, events and rejections aside.
func summary(snap sketch.Snapshot) Result {
	var res Result
	res.Tables = len(snap.Tables)
	for _, t := range snap.Tables {
		res.DistinctKeys += t.DistinctKeys
		for _, c := range t.Classes {
			res.Events += int64(c.Events)
		}
		if t.Table == "orders" && t.Index == "" && len(t.Classes[traffic.Write].Top) > 0 {
			k := t.Classes[traffic.Write].Top[0]
			res.TopKey, res.TopKeyUnits = k.Key, k.Units
		}
	}
	return res
}

// Fast reads r with the jsonl reader into a sketch.Store configured as
// hotkeyd analyze configures it (one window over the whole input).
func Fast(ctx context.Context, r io.Reader) (Result, error) {
	def := config.Default()
	store, err := sketch.NewStore(analyze.SketchConfig(def.Pipeline()), time.Now)
	if err != nil {
		return Result{}, err
	}
	counts, err := jsonl.ReadAll(ctx, r, "bench", store, jsonl.Options{})
	if err != nil {
		return Result{}, err
	}
	res := summary(store.Snapshot())
	res.Events, res.Rejected = int64(counts.Events), int64(counts.Rejected)
	return res, nil
}

// Analyze reads the file path as hotkeyd analyze does, whole: on every
// core through package parallel into stores merged into one, and, when
// the file does not run in time, a second read that counts the busiest
// seconds of the keys of the report (internal/analyze); the report is
// made as JSON and decoded for the Result.
func Analyze(ctx context.Context, path string) (Result, error) {
	return runAnalyze(ctx, path, false)
}

// AnalyzeWithoutIncidents is Analyze with --incidents=false: the input
// read and judged as one window, no incidents replayed.
func AnalyzeWithoutIncidents(ctx context.Context, path string) (Result, error) {
	return runAnalyze(ctx, path, true)
}

// runAnalyze runs analyze on path, its incidents skipped with
// noIncidents, and decodes its JSON report into a Result.
func runAnalyze(ctx context.Context, path string, noIncidents bool) (Result, error) {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(parallel.GCPercent))
	}
	var out bytes.Buffer
	defaults := config.Default()
	err := analyze.Run(ctx, analyze.Config{Files: []string{path}, Pipeline: defaults.Pipeline(), Format: "json", NoIncidents: noIncidents, Stdout: &out, Stderr: io.Discard})
	if err != nil {
		return Result{}, err
	}
	var rep report.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return Result{}, err
	}
	res := Result{Events: int64(rep.Events), Rejected: int64(rep.Rejected), Tables: len(rep.Tables)}
	for _, t := range rep.Tables {
		res.DistinctKeys += t.DistinctPartitionKeys
		if t.Table != "orders" || t.Index != "" {
			continue
		}
		for _, k := range t.TopKeys {
			if k.Class == "write" && k.Units > res.TopKeyUnits {
				res.TopKey, res.TopKeyUnits = k.Key, k.Units
			}
		}
	}
	return res, nil
}
