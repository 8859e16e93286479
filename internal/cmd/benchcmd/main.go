// Command benchcmd runs one JSON-lines ingest implementation over one file
// and prints what it did and its peak memory, one JSON object per run. Peak
// memory is the process's maximum resident set size, so each run needs its
// own process: scripts/bench-jsonl.sh starts one per implementation and run.
//
//	benchcmd -generate FILE [-events N]   write the benchmark file
//	benchcmd -impl exact|fast|parallel|analyze|analyze-noinc [-tsv] FILE  count it, print the figures
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/benchgen"
)

func main() { os.Exit(run()) }

// figures is the output of one run.
type figures struct {
	Impl         string  `json:"impl"`
	Events       int64   `json:"events"`
	Rejected     int64   `json:"rejected"`
	Bytes        int64   `json:"bytes"`
	Seconds      float64 `json:"seconds"`
	MBPerSecond  float64 `json:"mb_per_second"`
	EventsPerSec float64 `json:"events_per_second"`
	MaxRSSBytes  int64   `json:"max_rss_bytes"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	DistinctKeys uint64  `json:"distinct_keys"`
	TopKey       string  `json:"top_key"`
	TopKeyUnits  float64 `json:"top_key_units"`
	GoMaxProcs   int     `json:"gomaxprocs"`
}

func run() int {
	gen := flag.String("generate", "", "write the benchmark file to this path and exit")
	events := flag.Int("events", benchgen.DefaultEvents, "events to generate")
	impl := flag.String("impl", "fast", "implementation to run: exact, fast, parallel, analyze (the whole of hotkeyd analyze) or analyze-noinc (analyze --no-incidents)")
	tsv := flag.Bool("tsv", false, "print one tab-separated line (impl, events, bytes, seconds, max RSS bytes, CPU seconds) instead of JSON")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	memprofile := flag.String("memprofile", "", "write an allocation profile of the run to this file")
	flag.Parse()
	if *memprofile != "" {
		runtime.MemProfileRate = 4096
	}
	if *gen != "" {
		return generate(*gen, *events)
	}
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: benchcmd -impl exact|fast|parallel|analyze|analyze-noinc FILE")
		return 2
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcmd:", err)
		return 1
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcmd:", err)
		return 1
	}
	var r io.Reader = f
	if *cpuprofile != "" {
		stop, err := startCPUProfile(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchcmd:", err)
			return 1
		}
		defer stop()
	}
	start := time.Now()
	res, err := runImpl(*impl, r, flag.Arg(0))
	elapsed := time.Since(start).Seconds()
	if errors.Is(err, errUnknownImpl) {
		fmt.Fprintf(os.Stderr, "benchcmd: unknown -impl %q\n", *impl)
		return 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcmd:", err)
		return 1
	}
	if *memprofile != "" {
		if err := writeHeapProfile(*memprofile); err != nil {
			fmt.Fprintln(os.Stderr, "benchcmd:", err)
			return 1
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Fprintln(os.Stderr, "benchcmd: getrusage:", err)
		return 1
	}
	out := figures{
		Impl: *impl, Events: res.Events, Rejected: res.Rejected, Bytes: fi.Size(),
		Seconds: elapsed, MBPerSecond: float64(fi.Size()) / 1e6 / elapsed, EventsPerSec: float64(res.Events) / elapsed,
		MaxRSSBytes:  ru.Maxrss * 1024, // Linux reports kilobytes
		CPUSeconds:   tv(ru.Utime) + tv(ru.Stime),
		DistinctKeys: res.DistinctKeys, TopKey: res.TopKey, TopKeyUnits: res.TopKeyUnits,
		GoMaxProcs: runtime.GOMAXPROCS(0),
	}
	if *tsv {
		fmt.Printf("%s\t%d\t%d\t%.6f\t%d\t%.6f\n", out.Impl, out.Events, out.Bytes, out.Seconds, out.MaxRSSBytes, out.CPUSeconds)
		return 0
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 1
	}
	return 0
}

// generate writes the benchmark file of events events to path.
func generate(path string, events int) int {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcmd:", err)
		return 1
	}
	n, err := benchgen.Generate(f, events, 1)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcmd: generate:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "benchcmd: wrote %d events, %d bytes to %s\n", events, n, path)
	return 0
}

// startCPUProfile profiles the CPU into the file at path until stop.
func startCPUProfile(path string) (stop func(), err error) {
	pf, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); pf.Close() }, nil
}

// errUnknownImpl is runImpl's answer to an implementation it does not know.
var errUnknownImpl = errors.New("unknown implementation")

// runImpl runs implementation impl over r, the file at path.
func runImpl(impl string, r io.Reader, path string) (Result, error) {
	switch impl {
	case "exact":
		return Exact(r)
	case "fast":
		return Fast(context.Background(), r)
	case "parallel":
		return Parallel(context.Background(), path)
	case "analyze":
		return Analyze(context.Background(), path)
	case "analyze-noinc":
		return AnalyzeWithoutIncidents(context.Background(), path)
	}
	return Result{}, errUnknownImpl
}

// writeHeapProfile writes the allocations of the run (pprof's
// alloc_space, alloc_objects) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
