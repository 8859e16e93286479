// Command exactcount is the exact baseline of the analyze benchmark
// (scripts/bench-analyze.sh) as its own lean program: the obvious counter
// (internal/exactcounter: bufio.Scanner, encoding/json into a struct, a map
// of units per key for each table, index and class), the work of benchcmd's
// Exact, linking nothing but the standard library and that package. benchcmd links all of analyze (the AWS
// SDK's schemas, SQLite, Prometheus, the web pages): about 19 MB of
// resident memory before its first line, which is not the exact counter's
// (docs/bench/jsonl.md, "The process floor").
//
//	exactcount FILE
//
// prints one tab-separated line as benchcmd -tsv does: impl, events, bytes,
// seconds, peak resident bytes, CPU seconds (and, to check it against
// benchcmd -impl exact, the distinct keys and the top write key of orders
// with its units on standard error).
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/exactcounter"
)

func main() { os.Exit(run()) }

func run() int {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: exactcount FILE")
		return 2
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "exactcount:", err)
		return 1
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		fmt.Fprintln(os.Stderr, "exactcount:", err)
		return 1
	}
	start := time.Now()
	res, err := exactcounter.Count(f)
	elapsed := time.Since(start).Seconds()
	if err != nil {
		fmt.Fprintln(os.Stderr, "exactcount:", err)
		return 1
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Fprintln(os.Stderr, "exactcount: getrusage:", err)
		return 1
	}
	cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	fmt.Printf("exact-lean\t%d\t%d\t%.6f\t%d\t%.6f\n", res.Events, fi.Size(), elapsed, ru.Maxrss*1024, cpu)
	fmt.Fprintf(os.Stderr, "exactcount: %d distinct keys, top write key of orders %s (%g units)\n", res.DistinctKeys, res.TopKey, res.TopKeyUnits)
	return 0
}
