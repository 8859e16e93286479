package traffic

import (
	"fmt"
	"sort"
)

// DynamoDB's bounds on a table's secondary indexes, which bound what a
// schema may ask of the counting of index writes (each write of a table
// is checked against each of its indexes and each projected attribute).
// From "Quotas in Amazon DynamoDB", sections "Secondary indexes" and
// "Projected secondary index attributes"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-secondary-indexes),
// and the API reference of Projection
// (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Projection.html).
const (
	// MaxGlobalIndexes: 20 global secondary indexes a table, DynamoDB's
	// default quota.
	MaxGlobalIndexes = 20
	// MaxLocalIndexes: 5 local secondary indexes a table.
	MaxLocalIndexes = maxLocalIndexes
	// MaxProjectedAttributes: the non-key attributes of a table's INCLUDE
	// projections, summed across all its indexes (an attribute projected
	// into two indexes counts twice), are at most 100.
	MaxProjectedAttributes = 100
)

// Bounded returns ks with the indexes DynamoDB's bounds allow, taken in
// the order of their names: at most MaxGlobalIndexes global and
// MaxLocalIndexes local ones, whose INCLUDE projections list at most
// MaxProjectedAttributes attributes in all. left names each index not
// taken, with the bound it is past; ks itself is not changed.
func (ks KeySchema) Bounded() (bounded KeySchema, left []string) {
	names := make([]string, 0, len(ks.Indexes))
	for name := range ks.Indexes {
		names = append(names, name)
	}
	sort.Strings(names)
	bounded = KeySchema{PartitionKey: ks.PartitionKey, SortKey: ks.SortKey}
	var global, local, attrs int
	for _, name := range names {
		ix := ks.Indexes[name]
		n := 0
		if ix.Projection.Type == ProjectInclude {
			n = len(ix.Projection.Attributes)
		}
		switch {
		case !ix.Local && global == MaxGlobalIndexes:
			left = append(left, fmt.Sprintf("%s (past DynamoDB's %d global secondary indexes a table)", name, MaxGlobalIndexes))
			continue
		case ix.Local && local == MaxLocalIndexes:
			left = append(left, fmt.Sprintf("%s (past DynamoDB's %d local secondary indexes a table)", name, MaxLocalIndexes))
			continue
		case attrs+n > MaxProjectedAttributes:
			left = append(left, fmt.Sprintf("%s (past DynamoDB's %d projected attributes across a table's indexes)", name, MaxProjectedAttributes))
			continue
		}
		if ix.Local {
			local++
		} else {
			global++
		}
		attrs += n
		if bounded.Indexes == nil {
			bounded.Indexes = make(map[string]IndexSchema, min(len(names), MaxGlobalIndexes+MaxLocalIndexes))
		}
		bounded.Indexes[name] = ix
	}
	return bounded, left
}
