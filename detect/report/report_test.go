package report

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// contractReport is the analyze report of README.md ("The analyze
// report"): the diagnoses and peaks, with the fields this implementation
// adds to a diagnosis (share, peak_units_per_second, limit, summary) and
// to its after-state, and the settings the report was judged by.
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
      "classes": [
        {"class": "read", "events": 2000, "units": 1000.5, "units_per_second": 3.33, "peak_units_per_second": 20, "limit": 3000},
        {"class": "write", "events": 121456, "units": 2000, "units_per_second": 6.67, "peak_units_per_second": 1250, "limit": 1000, "throttled": 60544}
      ],
      "top_keys": [
        {"key": "PRODUCT#77", "class": "write", "units": 460.0, "share": 0.23, "units_per_second": 1.53, "peak_units_per_second": 1200}
      ],
      "diagnoses": [
        {"cause": "partition_limit", "class": "write", "keys": ["PRODUCT#77"],
         "severity": "critical", "share": 0.23, "peak_units_per_second": 1200, "limit": 1000,
         "summary": "one sentence",
         "fix": {"kind": "calculated_suffix", "suffix_count": 3,
                 "example": "PRODUCT#77#0 .. PRODUCT#77#2", "text": "one sentence"},
         "after": {"keys": 3, "max_share": 0.01, "peak_units_per_second": 400, "under_threshold": true, "under_ceiling": true,
                   "severity": "info", "summary": "one sentence"},
         "explains": [{"kind": "hot_key", "key": "PRODUCT#77", "class": "write"}, {"kind": "partition_limit", "key": "PRODUCT#77", "class": "write"}]},
        {"cause": "capacity", "class": "write", "keys": [],
         "severity": "critical", "share": 0.33, "peak_units_per_second": 1250, "limit": 1000, "throttled": 60000,
         "capacity": {"limit": "unknown", "resource": "table", "inferred": true, "calls": 181000, "throttled": 60000, "throttled_share": 0.33,
                      "units_per_second": 6.67, "demand_units_per_second": 9.98},
         "summary": "one sentence",
         "fix": {"kind": "capacity", "text": "one sentence"},
         "explains": [{"kind": "capacity", "class": "write"}]}
      ],
      "findings": [
        {
          "kind": "hot_key",
          "key": "PRODUCT#77",
          "class": "write",
          "severity": "critical",
          "share": 0.23,
          "units_per_second": 1.53,
          "peak_units_per_second": 1200,
          "recommendation": {
            "kind": "calculated_suffix",
            "suffix_count": 3,
            "example": "PRODUCT#77#0 .. PRODUCT#77#2",
            "text": "one sentence"
          }
        }
      ],
      "throttled_keys": [{"key": "TENANT#acme", "count": 1904, "count_max": 2011}, {"key": "PRODUCT#77", "count": 544}],
      "throttled_keys_bound": 107,
      "quiet": {"reason": "info_only", "key": "K", "class": "read", "share": 0.2, "peak_units_per_second": 20, "limit": 3000, "text": "one sentence"}
    }
  ],
  "settings": {"threshold": 0.1, "warn_fraction": 0.5, "limit_fraction": 0.8, "read_limit": 3000, "write_limit": 1000, "top": 10,
               "capacity_warn_share": 0.01, "capacity_critical_share": 0.05, "forecast_horizon_seconds": 604800}
}`

// TestReportMatchesContract marshals the contract's example from the Go
// types and compares it, as JSON values, with the contract's text: field
// names, nesting and omitted fields must match exactly.
func TestReportMatchesContract(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	fix := Recommendation{Kind: AdviceCalculatedSuffix, SuffixCount: 3, Example: "PRODUCT#77#0 .. PRODUCT#77#2", Text: "one sentence"}
	r := Report{
		Start: start, End: start.Add(5 * time.Minute), Events: 123456, Rejected: 3,
		Tables: []TableReport{{
			Table: "orders", Events: 123456, ReadUnits: 1000.5, WriteUnits: 2000, DistinctPartitionKeys: 10234,
			Classes: []ClassReport{
				{Class: "read", Events: 2000, Units: 1000.5, UnitsPerSecond: 3.33, PeakUnitsPerSecond: 20, Limit: 3000},
				{Class: "write", Events: 121456, Units: 2000, UnitsPerSecond: 6.67, PeakUnitsPerSecond: 1250, Limit: 1000, Throttled: 60544},
			},
			TopKeys: []TopKey{{Key: "PRODUCT#77", Class: "write", Units: 460, Share: 0.23, UnitsPerSecond: 1.53, PeakUnitsPerSecond: 1200}},
			Diagnoses: []Diagnosis{{
				Cause: KindPartitionLimit, Class: "write", Keys: []string{"PRODUCT#77"}, Severity: SeverityCritical,
				Share: 0.23, PeakUnitsPerSecond: 1200, Limit: 1000, Summary: "one sentence", Fix: fix,
				After:    &After{Keys: 3, MaxShare: 0.01, PeakUnitsPerSecond: 400, UnderThreshold: true, UnderCeiling: true, Severity: SeverityInfo, Summary: "one sentence"},
				Explains: []Explained{{Kind: KindHotKey, Key: "PRODUCT#77", Class: "write"}, {Kind: KindPartitionLimit, Key: "PRODUCT#77", Class: "write"}},
			}, {
				Cause: KindCapacity, Class: "write", Keys: []string{}, Severity: SeverityCritical,
				Share: 0.33, PeakUnitsPerSecond: 1250, Limit: 1000, Throttled: 60000, Summary: "one sentence",
				Capacity: &Capacity{Limit: LimitUnknown, Resource: "table", Inferred: true, Calls: 181000, Throttled: 60000, ThrottledShare: 0.33,
					UnitsPerSecond: 6.67, DemandUnitsPerSecond: 9.98},
				Fix:      Recommendation{Kind: AdviceCapacity, Text: "one sentence"},
				Explains: []Explained{{Kind: KindCapacity, Class: "write"}},
			}},
			Findings: []Finding{{
				Kind: KindHotKey, Key: "PRODUCT#77", Class: "write", Severity: SeverityCritical, Share: 0.23, UnitsPerSecond: 1.53,
				PeakUnitsPerSecond: 1200, Recommendation: &fix,
			}},
			ThrottledKeys:  []ThrottledKey{{Key: "TENANT#acme", Count: 1904, CountMax: 2011}, {Key: "PRODUCT#77", Count: 544}},
			ThrottledBound: 107,
			Quiet:          &Quiet{Reason: QuietInfoOnly, Key: "K", Class: "read", Share: 0.2, PeakUnitsPerSecond: 20, Limit: 3000, Text: "one sentence"},
		}},
		Settings: Settings{Threshold: 0.1, WarnFraction: 0.5, LimitFraction: 0.8, ReadLimit: 3000, WriteLimit: 1000, Top: 10,
			CapacityWarnShare: 0.01, CapacityCriticalShare: 0.05, ForecastHorizonSeconds: 604800},
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

func TestSeverityOrder(t *testing.T) {
	if !(SeverityCritical.Rank() < SeverityWarning.Rank() && SeverityWarning.Rank() < SeverityInfo.Rank()) {
		t.Error("ranks out of order")
	}
	if SeverityInfo.Pages() || !SeverityWarning.Pages() || !SeverityCritical.Pages() {
		t.Error("only warning and critical page")
	}
	if SeverityInfo.Max(SeverityCritical) != SeverityCritical || SeverityWarning.Max(SeverityInfo) != SeverityWarning {
		t.Error("Max picks the more urgent")
	}
}
