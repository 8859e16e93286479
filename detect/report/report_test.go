package report

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// contractReport is the analyze report of DESIGN.md, verbatim.
const contractReport = `{
  "start": "2026-11-22T10:00:00Z",
  "end": "2026-11-22T10:05:00Z",
  "events": 123456,
  "rejected": 3,
  "tables": [
    {
      "table": "orders",
      "events": 123456,
      "read_units": 1000.5,
      "write_units": 2000,
      "distinct_partition_keys": 10234,
      "top_keys": [
        {"key": "USER#1", "class": "write", "units": 460.0, "share": 0.23}
      ],
      "findings": [
        {
          "kind": "hot_key",
          "key": "USER#1",
          "class": "write",
          "share": 0.23,
          "units_per_second": 1.53,
          "recommendation": {
            "kind": "write_sharding",
            "suffix_count": 4,
            "example": "USER#1#0 .. USER#1#3",
            "text": "one sentence a person can act on"
          }
        }
      ]
    }
  ]
}`

// TestReportMatchesContract marshals the contract's example from the Go
// types and compares it, as JSON values, with the contract's text: field
// names, nesting and omitted fields must match exactly.
func TestReportMatchesContract(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := Report{
		Start: start, End: start.Add(5 * time.Minute), Events: 123456, Rejected: 3,
		Tables: []TableReport{{
			Table: "orders", Events: 123456, ReadUnits: 1000.5, WriteUnits: 2000, DistinctPartitionKeys: 10234,
			TopKeys: []TopKey{{Key: "USER#1", Class: "write", Units: 460, Share: 0.23}},
			Findings: []Finding{{
				Kind: KindHotKey, Key: "USER#1", Class: "write", Share: 0.23, UnitsPerSecond: 1.53,
				Recommendation: &Recommendation{Kind: AdviceWriteSharding, SuffixCount: 4, Example: "USER#1#0 .. USER#1#3", Text: "one sentence a person can act on"},
			}},
		}},
	}
	got, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(contractReport), &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("report JSON differs from the contract:\n got %s\nwant %s", got, contractReport)
	}
	// And it reads back into the same value.
	var back Report
	if err := json.Unmarshal([]byte(contractReport), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("contract JSON reads back as %+v", back)
	}
}
