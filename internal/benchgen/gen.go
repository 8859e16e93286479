// Package benchgen writes the JSON-lines file the ingest benchmarks read.
package benchgen

import (
	"bufio"
	"io"
	"math/rand/v2"
	"strconv"
	"time"
)

// Default size of the generated file: about 2 M events over about 600 k
// distinct partition keys.
const (
	DefaultEvents = 2_000_000
	// uniformKeys is the key space of the non-hot traffic: 80% of 2 M
	// draws over it hit about 470 k distinct keys on the base tables and
	// 140 k on the index entries, about 610 k partition keys counted per
	// entry as the reports count them.
	uniformKeys = 500_000
	hotKeys     = 50
	hotFraction = 0.2
)

var (
	tables = []string{"orders", "sessions", "products", "events"}
	ops    = []string{"GetItem", "Query", "PutItem", "UpdateItem", "BatchGetItem", "DeleteItem"}
	units  = []string{"0.5", "1", "1", "2", "4"}
)

// Generate writes n JSON lines of the contract's shape to w: four tables,
// 20% of the traffic on 50 hot keys, the rest uniform, a secondary index on
// a tenth of the lines, sort keys on most. The same n and seed give the same
// bytes.
func Generate(w io.Writer, n int, seed uint64) (int64, error) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	bw := bufio.NewWriterSize(w, 1<<20)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var line []byte
	var written int64
	for i := range n {
		var k uint64
		if rng.Float64() < hotFraction {
			k = rng.Uint64N(hotKeys)
		} else {
			k = hotKeys + rng.Uint64N(uniformKeys)
		}
		table := tables[k%uint64(len(tables))]
		line = append(line[:0], `{"ts":"`...)
		line = t0.Add(time.Duration(i)*300*time.Microsecond).AppendFormat(line, "2006-01-02T15:04:05.000Z07:00")
		line = append(line, `","table":"`...)
		line = append(line, table...)
		if i%10 == 0 {
			line = append(line, `","index":"GSI1`...)
		}
		line = append(line, `","pk":"KEY#`...)
		line = strconv.AppendUint(line, k, 10)
		if rng.IntN(10) < 7 {
			line = append(line, `","sk":"ITEM#`...)
			line = strconv.AppendUint(line, rng.Uint64N(1000), 10)
		}
		line = append(line, `","op":"`...)
		line = append(line, ops[rng.IntN(len(ops))]...)
		line = append(line, `","units":`...)
		line = append(line, units[rng.IntN(len(units))]...)
		line = append(line, "}\n"...)
		m, err := bw.Write(line)
		written += int64(m)
		if err != nil {
			return written, err
		}
	}
	return written, bw.Flush()
}
