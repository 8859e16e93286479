// Command exactcount is the exact baseline of the analyze benchmark
// (scripts/bench-analyze.sh) as its own lean program: the obvious counter
// (bufio.Scanner, encoding/json into a struct, a map of units per key for
// each table, index and class), the work of benchcmd's Exact, linking
// nothing but the standard library. benchcmd links all of analyze (the AWS
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
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"syscall"
	"time"
)

func main() { os.Exit(run()) }

// line is the obvious struct for a line.
type line struct {
	TS    any      `json:"ts"`
	Table string   `json:"table"`
	Index string   `json:"index"`
	PK    string   `json:"pk"`
	SK    string   `json:"sk"`
	Op    string   `json:"op"`
	Units *float64 `json:"units"`
}

// entryClass is a table, an index of it ("" for the table) and a class
// (write or read).
type entryClass struct {
	table, index string
	write        bool
}

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
	counts, events, err := count(f)
	elapsed := time.Since(start).Seconds()
	if err != nil {
		fmt.Fprintln(os.Stderr, "exactcount:", err)
		return 1
	}
	distinct, topKey, topUnits := summary(counts)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Fprintln(os.Stderr, "exactcount: getrusage:", err)
		return 1
	}
	cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	fmt.Printf("exact-lean\t%d\t%d\t%.6f\t%d\t%.6f\n", events, fi.Size(), elapsed, ru.Maxrss*1024, cpu)
	fmt.Fprintf(os.Stderr, "exactcount: %d distinct keys, top write key of orders %s (%g units)\n", distinct, topKey, topUnits)
	return 0
}

// count sums the units of every key of r per table, index and class,
// as benchcmd's Exact does; a line encoding/json refuses, without a
// table or a key, or with a time that does not parse is passed over.
func count(r io.Reader) (map[entryClass]map[string]float64, int64, error) {
	counts := map[entryClass]map[string]float64{}
	var events int64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Table == "" || l.PK == "" {
			continue
		}
		if s, ok := l.TS.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				continue
			}
		}
		write := false
		switch l.Op {
		case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "write":
			write = true
		}
		u := 1.0
		if l.Units != nil {
			u = *l.Units
		}
		id := entryClass{l.Table, l.Index, write}
		m := counts[id]
		if m == nil {
			m = map[string]float64{}
			counts[id] = m
		}
		m[l.PK] += u
		events++
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("scan: %w", err)
	}
	return counts, events, nil
}

// summary is the distinct keys of every table and index (a key of both
// classes once) and the heaviest write key of the orders table.
func summary(counts map[entryClass]map[string]float64) (distinct uint64, topKey string, topUnits float64) {
	for id, m := range counts {
		other := counts[entryClass{id.table, id.index, !id.write}]
		for k := range m {
			if !id.write && other != nil {
				if _, ok := other[k]; ok {
					continue
				}
			}
			distinct++
		}
		if id.table == "orders" && id.index == "" && id.write {
			topKey, topUnits = top(m)
		}
	}
	return distinct, topKey, topUnits
}

// top is the key of m with the most units (the first by name of equals).
func top(m map[string]float64) (string, float64) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var best string
	var most float64
	for _, k := range keys {
		if m[k] > most {
			best, most = k, m[k]
		}
	}
	return best, most
}
