package analyze

import (
	"cmp"
	"slices"
	"strings"
	"unsafe"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Which tables are counted when the input has more than max_tables. The
// store counts the busiest it has met (sketch's admission: a table that
// turns out busier takes the place of the least busy one), so which
// tables it holds, and what it counted of a table it let go and took
// again, depend on the order of the lines and on how the input was cut
// into parts. So the read tallies the events of every table and index
// (tableTally), and when the store could not hold them all, the inputs
// are read again into stores that hold the busiest of the tally,
// declared (sketch.Store.Declare): the max_tables tables and indexes of
// the most events, ties by name, whatever the order. Past
// maxTallyTables names the tally stops naming new ones and the choice is
// the store's.

// maxTallyTables bounds the names a tally holds (about 100 bytes each):
// an input of made-up names must not grow it without bound.
const maxTallyTables = 1 << 18

// tableTally counts the events (throttled calls too) each table and index
// of a part of the inputs brought to the store; a traffic.Sink for one
// goroutine at a time.
type tableTally struct {
	counts map[entryKey]*uint64
	// over says that names past maxTallyTables were not counted.
	over bool
	// The decoders intern table names: the last few tables met are
	// found by their names' pointers, without hashing; next is the one
	// to replace.
	recent [8]recentCount
	next   int
}

// recentCount is a table's names, by pointer and length, and its count.
type recentCount struct {
	table, index       *byte
	tableLen, indexLen int
	n                  *uint64
}

func newTableTally() *tableTally { return &tableTally{counts: map[entryKey]*uint64{}} }

// put counts the batch's events by table and index.
func (t *tableTally) put(batch []traffic.Event) {
	for i := range batch {
		*t.count(&batch[i])++
	}
}

// count returns the count of e's table.
func (t *tableTally) count(e *traffic.Event) *uint64 {
	tp, ip := unsafe.StringData(e.Table), unsafe.StringData(e.Index)
	for i := range t.recent {
		r := &t.recent[i]
		if r.table == tp && r.index == ip && r.tableLen == len(e.Table) && r.indexLen == len(e.Index) && r.n != nil {
			return r.n
		}
	}
	n := t.counter(e.Table, e.Index)
	t.recent[t.next] = recentCount{tp, ip, len(e.Table), len(e.Index), n}
	t.next = (t.next + 1) % len(t.recent)
	return n
}

// counter returns the count of a table, made if new; past
// maxTallyTables names, a count of no table.
func (t *tableTally) counter(table, index string) *uint64 {
	if n := t.counts[entryKey{table, index}]; n != nil {
		return n
	}
	n := new(uint64)
	if len(t.counts) >= maxTallyTables {
		t.over = true
		return n
	}
	// The names are the decoders' buffers: keep copies.
	t.counts[entryKey{strings.Clone(table), strings.Clone(index)}] = n
	return n
}

// absorb adds o's counts.
func (t *tableTally) absorb(o *tableTally) {
	t.over = t.over || o.over
	for k, n := range o.counts {
		if c := t.counts[k]; c != nil {
			*c += *n
			continue
		}
		if len(t.counts) >= maxTallyTables {
			t.over = true
			continue
		}
		t.counts[k] = n
	}
}

// busiest returns the n tables and indexes of the most events, ties by
// table then index, as sketch.Store.Declare names them ("TABLE",
// "TABLE/INDEX"); false when the tally did not count every name.
func (t *tableTally) busiest(n int) ([]string, bool) {
	if t.over {
		return nil, false
	}
	keys := make([]entryKey, 0, len(t.counts))
	for k := range t.counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b entryKey) int {
		return cmp.Or(cmp.Compare(*t.counts[b], *t.counts[a]), strings.Compare(a.table, b.table), strings.Compare(a.index, b.index))
	})
	names := make([]string, 0, min(n, len(keys)))
	for _, k := range keys[:min(n, len(keys))] {
		name := k.table
		if k.index != "" {
			name += "/" + k.index
		}
		names = append(names, name)
	}
	return names, true
}
