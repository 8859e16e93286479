package traffic

import (
	"fmt"
	"strings"
	"testing"
)

// TestBoundedIndexes gives schemas past each of DynamoDB's bounds on
// secondary indexes: the indexes within them are taken in name order, the
// others are named with the bound they are past.
func TestBoundedIndexes(t *testing.T) {
	include := func(n int) Projection {
		p := Projection{Type: ProjectInclude}
		for i := range n {
			p.Attributes = append(p.Attributes, fmt.Sprintf("a%d", i))
		}
		return p
	}
	for _, c := range []struct {
		name               string
		global, local      int
		attrsEach          int
		wantKept, wantLeft int
		wantWhy            string
	}{
		{"within", 20, 5, 4, 25, 0, ""},
		{"5 000 global", 5000, 0, 0, 20, 4980, "20 global secondary indexes"},
		{"6 local", 0, 6, 0, 5, 1, "5 local secondary indexes"},
		{"20 000 attributes", 1, 0, 20000, 0, 1, "100 projected attributes"},
		{"attributes past 100 in all", 3, 0, 40, 2, 1, "100 projected attributes"},
	} {
		ks := KeySchema{PartitionKey: "pk", Indexes: map[string]IndexSchema{}}
		for i := range c.global {
			ks.Indexes[fmt.Sprintf("g%05d", i)] = IndexSchema{PartitionKey: "x", Projection: include(c.attrsEach)}
		}
		for i := range c.local {
			ks.Indexes[fmt.Sprintf("l%05d", i)] = IndexSchema{PartitionKey: "pk", SortKey: "s", Local: true, Projection: Projection{Type: ProjectAll}}
		}
		got, left := ks.Bounded()
		if len(got.Indexes) != c.wantKept || len(left) != c.wantLeft || got.PartitionKey != "pk" {
			t.Errorf("%s: kept %d, left %d; want %d and %d", c.name, len(got.Indexes), len(left), c.wantKept, c.wantLeft)
		}
		if c.wantLeft > 0 && !strings.Contains(left[0], c.wantWhy) {
			t.Errorf("%s: left %q, want it to say %q", c.name, left[0], c.wantWhy)
		}
		if len(ks.Indexes) != c.global+c.local {
			t.Errorf("%s: Bounded changed its schema", c.name)
		}
	}
}
