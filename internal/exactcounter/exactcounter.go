// Package exactcounter is the exact baseline of the JSON-lines benchmarks:
// the obvious counter (bufio.Scanner, encoding/json into a struct, a map of
// units per key for each table, index and class). It links nothing but the
// standard library, so that internal/cmd/exactcount, the baseline as a
// program of its own, carries no process floor of the daemon's packages;
// internal/cmd/benchcmd counts with it too.
package exactcounter

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"
)

// Result is what Count found.
type Result struct {
	Events   int64
	Rejected int64
	// Tables is the number of table and index entries.
	Tables int
	// DistinctKeys sums the distinct partition keys of every entry (a key
	// of both classes once).
	DistinctKeys uint64
	// TopKey is the heaviest write key of the orders table and its units.
	TopKey      string
	TopKeyUnits float64
}

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

// entryClass is a table, an index of it ("" for the table) and a class.
type entryClass struct {
	table, index string
	write        bool
}

// Count sums the units of every key of r per table, index and class; a
// line encoding/json refuses, without a table or a key, or with a time
// that does not parse is rejected.
func Count(r io.Reader) (Result, error) {
	var res Result
	counts := map[entryClass]map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Table == "" || l.PK == "" {
			res.Rejected++
			continue
		}
		if s, ok := l.TS.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				res.Rejected++
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
		res.Events++
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("scan: %w", err)
	}
	summarize(&res, counts)
	return res, nil
}

// summarize fills res's entries, distinct keys and top write key of
// orders from counts.
func summarize(res *Result, counts map[entryClass]map[string]float64) {
	entries := map[[2]string]bool{}
	for id, m := range counts {
		entries[[2]string{id.table, id.index}] = true
		other := counts[entryClass{id.table, id.index, !id.write}]
		for k := range m {
			// Count a key in both classes once, under write.
			if !id.write && other != nil {
				if _, ok := other[k]; ok {
					continue
				}
			}
			res.DistinctKeys++
		}
		if id.table == "orders" && id.index == "" && id.write {
			res.TopKey, res.TopKeyUnits = top(m)
		}
	}
	res.Tables = len(entries)
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
