package streamrecord

import (
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Schemas are what the readers of stream records know of each table: its
// key schema and its secondary indexes, from the config's tables section
// (configured) and from DescribeTable (learnt, package
// ingest/internal/describe). A configured key schema, and a configured
// index, win over what DescribeTable tells of the same name. It is safe
// for concurrent use; Table, on every record, reads without locking.
type Schemas struct {
	configured map[string]traffic.KeySchema

	mu     sync.Mutex // serializes Learn and Forget
	learnt map[string]traffic.KeySchema
	// tables is the merged view, replaced whole on every change.
	tables atomic.Pointer[map[string]*Table]
}

// NewSchemas returns Schemas holding the configured tables (the config's
// tables section: an entry named TABLE/INDEX, an index's own key schema,
// is not a table and is left out).
func NewSchemas(configured map[string]traffic.KeySchema) *Schemas {
	s := &Schemas{configured: map[string]traffic.KeySchema{}, learnt: map[string]traffic.KeySchema{}}
	for name, ks := range configured {
		if !isIndexEntry(name) {
			s.configured[name] = ks
		}
	}
	s.rebuild()
	return s
}

func isIndexEntry(name string) bool {
	for i := range len(name) {
		if name[i] == '/' {
			return true
		}
	}
	return false
}

// Table returns what is known of a table, or nil when nothing is.
func (s *Schemas) Table(name string) *Table {
	if s == nil {
		return nil
	}
	return (*s.tables.Load())[name]
}

// Learn records what DescribeTable told of a table (its key schema and
// the indexes whose writes count now) and reports whether that changed
// what is known.
func (s *Schemas) Learn(name string, ks traffic.KeySchema) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.learnt[name]; ok && sameSchema(old, ks) {
		return false
	}
	s.learnt[name] = ks
	s.rebuild()
	return true
}

// sameSchema reports whether two key schemas say the same.
func sameSchema(a, b traffic.KeySchema) bool {
	return a.PartitionKey == b.PartitionKey && a.SortKey == b.SortKey &&
		maps.EqualFunc(a.Indexes, b.Indexes, func(x, y traffic.IndexSchema) bool {
			return x.PartitionKey == y.PartitionKey && x.SortKey == y.SortKey && x.Local == y.Local &&
				x.Projection.Type == y.Projection.Type && slices.Equal(x.Projection.Attributes, y.Projection.Attributes)
		})
}

// rebuild replaces the merged view; s.mu is held (or s is new).
func (s *Schemas) rebuild() {
	all := make(map[string]*Table, len(s.configured)+len(s.learnt))
	for name := range s.learnt {
		all[name] = nil
	}
	for name := range s.configured {
		all[name] = nil
	}
	for name := range all {
		ks := s.learnt[name]
		conf, ok := s.configured[name]
		if ok {
			if conf.PartitionKey != "" {
				ks.PartitionKey, ks.SortKey = conf.PartitionKey, conf.SortKey
			}
			if len(conf.Indexes) > 0 {
				merged := maps.Clone(ks.Indexes)
				if merged == nil {
					merged = map[string]traffic.IndexSchema{}
				}
				maps.Copy(merged, conf.Indexes)
				ks.Indexes = merged
			}
		}
		all[name] = compile(ks)
	}
	s.tables.Store(&all)
}

// Table is what the index rules need of one table, compiled once per
// change: its key schema, its indexes in name order, and which attributes
// of an item image those read.
type Table struct {
	Key     traffic.KeySchema
	Indexes []Index
	// want holds every attribute an index reads (keys of the table and of
	// the indexes, INCLUDE attributes); sizeAll is set when an index
	// projects ALL, whose entries are as large as the item.
	want    map[string]struct{}
	sizeAll bool
}

// Index is one secondary index of a Table.
type Index struct {
	Name string
	traffic.IndexSchema
}

func compile(ks traffic.KeySchema) *Table {
	t := &Table{Key: ks}
	names := slices.Collect(maps.Keys(ks.Indexes))
	sort.Strings(names)
	for _, name := range names {
		ix := ks.Indexes[name]
		if ix.Local && ix.PartitionKey == "" {
			ix.PartitionKey = ks.PartitionKey
		}
		if ix.PartitionKey == "" {
			continue
		}
		t.Indexes = append(t.Indexes, Index{Name: name, IndexSchema: ix})
	}
	if len(t.Indexes) == 0 {
		return t
	}
	t.want = map[string]struct{}{}
	add := func(names ...string) {
		for _, n := range names {
			if n != "" {
				t.want[n] = struct{}{}
			}
		}
	}
	add(ks.PartitionKey, ks.SortKey)
	for _, ix := range t.Indexes {
		add(ix.PartitionKey, ix.SortKey)
		switch ix.Projection.Type {
		case traffic.ProjectAll:
			t.sizeAll = true
		case traffic.ProjectInclude:
			add(ix.Projection.Attributes...)
		}
	}
	return t
}

// HasIndexes reports whether the table has indexes whose writes are
// counted from item images.
func (t *Table) HasIndexes() bool { return t != nil && len(t.Indexes) > 0 }

// wants reports whether the decoder must decode the attribute name of an
// image.
func (t *Table) wants(name []byte) bool {
	_, ok := t.want[string(name)]
	return ok
}
