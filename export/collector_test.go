package export

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// handSnapshot is a window of two tables, one index and a throttled key,
// built by hand.
func handSnapshot() sketch.Snapshot {
	return sketch.Snapshot{Start: t0, End: t0.Add(100 * time.Second), Tables: []sketch.TableSnapshot{
		{
			Table: "orders", Start: t0, End: t0.Add(100 * time.Second), Events: 300, DistinctKeys: 1000,
			Classes: [traffic.NumClasses]sketch.ClassStats{
				traffic.Read: {Events: 100, Units: 200, Top: []sketch.KeyStat{
					{Key: "USER#bob", Units: 20}, {Key: "USER#alice", Units: 50}, {Key: "USER#carol", Units: 10},
				}, Throttled: sketch.ThrottleStats{Events: 3, Causes: [traffic.NumThrottleCauses]uint64{3}, Keys: []sketch.KeyCount{{Key: "USER#bob", Count: 3, Max: 3}}}},
				traffic.Write: {Events: 200, Units: 1000, Top: []sketch.KeyStat{
					{Key: "USER#alice", Units: 600}, {Key: "USER#dave", Units: 100}, {Key: "USER#erin", Units: 50},
				}, Throttled: sketch.ThrottleStats{Events: 46, Causes: [traffic.NumThrottleCauses]uint64{46},
					Keys: []sketch.KeyCount{{Key: "USER#alice", Count: 42, Max: 44}, {Key: "USER#frank", Count: 1, Max: 3}}, Error: 2}},
			},
			ThrottledEvents: 49,
		},
		{
			Table: "orders", Index: "status-index", Start: t0, End: t0.Add(100 * time.Second), Events: 50, DistinctKeys: 2,
			Classes: [traffic.NumClasses]sketch.ClassStats{
				traffic.Read: {Events: 50, Units: 25, Top: []sketch.KeyStat{{Key: "OPEN", Units: 20}, {Key: "CLOSED", Units: 5}}},
			},
		},
	}}
}

// handReport is the detector's report of snap with three diagnoses and
// three findings set by hand, one of each key case (a partition key, a
// shard, no key).
func handReport(snap sketch.Snapshot) report.Report {
	rep := detect.Evaluate(snap, detect.DefaultSettings())
	rep.Tables[0].Diagnoses = []report.Diagnosis{
		{Cause: "partition_limit", Class: "write", Keys: []string{"USER#alice"}, Severity: "critical",
			Fix: report.Recommendation{Kind: "write_sharding", SuffixCount: 4, Text: "shard USER#alice"}},
		{Cause: "hot_partition", Class: "write", Keys: []string{"shardId-0001"}, Severity: "warning",
			Fix: report.Recommendation{Kind: "write_sharding", SuffixCount: 2, Text: "shard USER#dave"}},
	}
	rep.Tables[1].Diagnoses = []report.Diagnosis{
		{Cause: "low_cardinality", Class: "read", Keys: []string{"OPEN", "CLOSED"}, Severity: "info",
			Fix: report.Recommendation{Kind: "gsi", Text: "re-key"}},
	}
	rep.Tables[0].Findings = []report.Finding{
		{Kind: "hot_key", Key: "USER#alice", Class: "write", Share: 0.6, UnitsPerSecond: 6,
			Recommendation: &report.Recommendation{Kind: "write_sharding", SuffixCount: 4, Text: "shard USER#alice"}},
		{Kind: "hot_partition", Key: "shardId-0001", Share: 0.7},
	}
	rep.Tables[1].Findings = []report.Finding{
		{Kind: "low_cardinality", Class: "read", Share: 0.8, Recommendation: &report.Recommendation{Kind: "gsi", Text: "re-key"}},
	}
	return rep
}

// handState is handReport of handSnapshot.
func handState() report.Report { return handReport(handSnapshot()) }

func TestCollectorPlain(t *testing.T) {
	live := NewLive(func() time.Time { return t0.Add(101 * time.Second) })
	c := NewCollector(live, CollectorConfig{})
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("%d metrics before the first update, want 0", n)
	}
	// The collector exports as many keys per class as the report's
	// settings say (detector.top), even of a report that lists more.
	st := handState()
	st.Settings.Top = 2
	live.Update(st)
	want := `
# HELP hotkeyd_diagnosis 1 while the detector flags a diagnosis, one per root cause: cause is hot_key, partition_limit, low_cardinality, time_ordered_key, hot_partition, capacity or forecast; key is its first key (the stream shard for hot_partition, empty for capacity); severity is info, warning or critical (from the peak against the partition ceiling, or for capacity the share of calls refused: alert on warning and critical); fix is write_sharding, calculated_suffix, gsi, rekey, cache, sparse_index or capacity.
# TYPE hotkeyd_diagnosis gauge
hotkeyd_diagnosis{cause="hot_partition",class="write",fix="write_sharding",key="shardId-0001",severity="warning",table="orders"} 1
hotkeyd_diagnosis{cause="low_cardinality",class="read",fix="gsi",key="OPEN",severity="info",table="orders/status-index"} 1
hotkeyd_diagnosis{cause="partition_limit",class="write",fix="write_sharding",key="USER#alice",severity="critical",table="orders"} 1
# HELP hotkeyd_hot_key 1 while a finding is flagged as the evidence of a diagnosis: kind is hot_key, partition_limit, low_cardinality, time_ordered_key, hot_partition (key is then the stream shard), capacity or forecast; recommendation is the fix of the diagnosis that explains it. Table-wide findings have an empty key.
# TYPE hotkeyd_hot_key gauge
hotkeyd_hot_key{class="",key="shardId-0001",kind="hot_partition",recommendation="none",table="orders"} 1
hotkeyd_hot_key{class="read",key="",kind="low_cardinality",recommendation="gsi",table="orders/status-index"} 1
hotkeyd_hot_key{class="write",key="USER#alice",kind="hot_key",recommendation="write_sharding",table="orders"} 1
# HELP hotkeyd_key_peak_units_per_second Capacity units a partition key consumed in its busiest second of the sliding window; only the table's top keys of each class are exported. One partition serves 1000 WCU/s and 3000 RCU/s.
# TYPE hotkeyd_key_peak_units_per_second gauge
hotkeyd_key_peak_units_per_second{class="read",key="CLOSED",table="orders/status-index"} 0.05
hotkeyd_key_peak_units_per_second{class="read",key="OPEN",table="orders/status-index"} 0.2
hotkeyd_key_peak_units_per_second{class="read",key="USER#alice",table="orders"} 0.5
hotkeyd_key_peak_units_per_second{class="read",key="USER#bob",table="orders"} 0.2
hotkeyd_key_peak_units_per_second{class="write",key="USER#alice",table="orders"} 6
hotkeyd_key_peak_units_per_second{class="write",key="USER#dave",table="orders"} 1
# HELP hotkeyd_key_share Fraction (0 to 1) of the table's capacity units of the class consumed by a partition key over the sliding window; only the table's top keys of each class are exported.
# TYPE hotkeyd_key_share gauge
hotkeyd_key_share{class="read",key="OPEN",table="orders/status-index"} 0.8
hotkeyd_key_share{class="read",key="CLOSED",table="orders/status-index"} 0.2
hotkeyd_key_share{class="read",key="USER#alice",table="orders"} 0.25
hotkeyd_key_share{class="read",key="USER#bob",table="orders"} 0.1
hotkeyd_key_share{class="write",key="USER#alice",table="orders"} 0.6
hotkeyd_key_share{class="write",key="USER#dave",table="orders"} 0.1
# HELP hotkeyd_key_throttled Calls to a partition key that were throttled in the sliding window, at least (exact unless more keys were throttled than the window counts; then hotkeyd_key_throttled_max is the most); only the table's most throttled keys are exported, those known to have had more than any key not exported.
# TYPE hotkeyd_key_throttled gauge
hotkeyd_key_throttled{key="USER#alice",table="orders"} 42
hotkeyd_key_throttled{key="USER#bob",table="orders"} 3
# HELP hotkeyd_key_throttled_max Calls to a partition key that were throttled in the sliding window, at most: equal to hotkeyd_key_throttled when that is exact; the same keys.
# TYPE hotkeyd_key_throttled_max gauge
hotkeyd_key_throttled_max{key="USER#alice",table="orders"} 44
hotkeyd_key_throttled_max{key="USER#bob",table="orders"} 5
# HELP hotkeyd_key_units_per_second Capacity units per second consumed by a partition key over the sliding window (read units for class=read, write units for class=write); only the table's top keys of each class are exported.
# TYPE hotkeyd_key_units_per_second gauge
hotkeyd_key_units_per_second{class="read",key="OPEN",table="orders/status-index"} 0.2
hotkeyd_key_units_per_second{class="read",key="CLOSED",table="orders/status-index"} 0.05
hotkeyd_key_units_per_second{class="read",key="USER#alice",table="orders"} 0.5
hotkeyd_key_units_per_second{class="read",key="USER#bob",table="orders"} 0.2
hotkeyd_key_units_per_second{class="write",key="USER#alice",table="orders"} 6
hotkeyd_key_units_per_second{class="write",key="USER#dave",table="orders"} 1
# HELP hotkeyd_keys_omitted Distinct partition keys of the sliding window that have no hotkeyd_key_* series because they are outside the exported top keys; it keeps the series count bounded whatever the traffic.
# TYPE hotkeyd_keys_omitted gauge
hotkeyd_keys_omitted{table="orders"} 997
hotkeyd_keys_omitted{table="orders/status-index"} 0
# HELP hotkeyd_last_evaluation_timestamp_seconds Unix time of the last detector evaluation whose results these metrics show.
# TYPE hotkeyd_last_evaluation_timestamp_seconds gauge
hotkeyd_last_evaluation_timestamp_seconds 1.795341701e+09
# HELP hotkeyd_partition_keys_distinct Estimated number of distinct partition keys accessed in the sliding window (HyperLogLog).
# TYPE hotkeyd_partition_keys_distinct gauge
hotkeyd_partition_keys_distinct{table="orders"} 1000
hotkeyd_partition_keys_distinct{table="orders/status-index"} 2
# HELP hotkeyd_partition_limit_units_per_second One partition's ceiling by class, as configured (detector read_limit in RCU/s, write_limit in WCU/s): what the busiest seconds and severities are judged against.
# TYPE hotkeyd_partition_limit_units_per_second gauge
hotkeyd_partition_limit_units_per_second{class="read"} 3000
hotkeyd_partition_limit_units_per_second{class="write"} 1000
# HELP hotkeyd_peak_units_per_second Capacity units a table (or index) consumed in its busiest second of the sliding window, per class.
# TYPE hotkeyd_peak_units_per_second gauge
hotkeyd_peak_units_per_second{class="read",table="orders"} 2
hotkeyd_peak_units_per_second{class="read",table="orders/status-index"} 0.25
hotkeyd_peak_units_per_second{class="write",table="orders"} 10
hotkeyd_peak_units_per_second{class="write",table="orders/status-index"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}

	// A key that left the top-K disappears at the next scrape.
	snap := handSnapshot()
	snap.Tables[0].Classes[traffic.Write].Top = []sketch.KeyStat{{Key: "USER#dave", Units: 700}}
	rep := handReport(snap)
	rep.Tables[0].Findings, rep.Tables[0].Diagnoses = nil, nil
	live.Update(rep)
	got, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, "hotkeyd_key_share", "hotkeyd_hot_key", "hotkeyd_diagnosis")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), `class="write",key="USER#alice"`) {
		t.Errorf("USER#alice left the write top-K but is still exported:\n%s", got)
	}
	if !strings.Contains(string(got), `hotkeyd_key_share{class="write",key="USER#dave",table="orders"} 0.7`) {
		t.Errorf("the new top write key is missing:\n%s", got)
	}
}

func TestCollectorMasksAndKeepsSeriesUnique(t *testing.T) {
	live := NewLive(nil)
	live.Update(handState())
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(live, CollectorConfig{Masker: mustMasker(t, KeysRedact, "")}))
	// Gather fails on two series with the same labels; the redacted keys
	// all read USER#<redacted>, so they must be made unique.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "key" {
					continue
				}
				keys = append(keys, mf.GetName()+" "+l.GetValue())
				if strings.Contains(l.GetValue(), "alice") || strings.Contains(l.GetValue(), "bob") {
					t.Errorf("%s exports a key in the clear: %q", mf.GetName(), l.GetValue())
				}
			}
		}
	}
	for _, want := range []string{
		"hotkeyd_key_share USER#<redacted>", "hotkeyd_key_share USER#<redacted>~2", "hotkeyd_key_share USER#<redacted>~3",
		"hotkeyd_key_throttled USER#<redacted>~2", "hotkeyd_hot_key shardId-0001", "hotkeyd_hot_key USER#<redacted>",
		"hotkeyd_diagnosis shardId-0001", "hotkeyd_diagnosis USER#<redacted>", "hotkeyd_diagnosis <redacted>",
	} {
		found := false
		for _, k := range keys {
			found = found || k == want
		}
		if !found {
			t.Errorf("no series %q among %q", want, keys)
		}
	}

	// Hash mode: the label is the masker's hash, the same as the API shows.
	m := mustMasker(t, KeysHash, "k")
	got, err := testutil.CollectAndFormat(NewCollector(live, CollectorConfig{Masker: m}), expfmt.TypeTextPlain, "hotkeyd_hot_key", "hotkeyd_diagnosis")
	if err != nil {
		t.Fatal(err)
	}
	for _, metric := range []string{"hotkeyd_hot_key", "hotkeyd_diagnosis"} {
		if !regexp.MustCompile(metric + `\{[^}]*key="` + regexp.QuoteMeta(m.Mask("USER#alice")) + `"`).Match(got) {
			t.Errorf("hash-mode %s key label is not %q:\n%s", metric, m.Mask("USER#alice"), got)
		}
	}
}

// TestCardinalityBounded feeds far more distinct keys than are exported
// through a real Store and checks that /metrics keeps the same number of
// series, and that hotkeyd_keys_omitted accounts for the rest.
//
// The bar is 10 million distinct keys: two tables of 5 million each.
// -short feeds 5 000 per table.
func TestCardinalityBounded(t *testing.T) {
	distinct := 5_000_000
	if testing.Short() {
		distinct = 5_000
	}
	// series feeds keys distinct keys per table (half read, half write) and
	// returns the number of series on the registry, and per table the
	// distinct-keys estimate and the omitted count.
	type tableCounts struct{ distinct, omitted float64 }
	series := func(keys int) (int, map[string]tableCounts) {
		store, err := sketch.NewStore(sketch.DefaultConfig(), func() time.Time { return t0 })
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		sink, err := NewCountingSink(store, reg, func() time.Time { return t0 }, nil)
		if err != nil {
			t.Fatal(err)
		}
		live := NewLive(func() time.Time { return t0 })
		// The sink's per-table counters, served beside the registry by
		// the daemon (a Kept gatherer), are counted too.
		reg.MustRegister(NewCollector(live, CollectorConfig{}), sink)
		batch := make([]traffic.Event, 0, 1024)
		for i := range keys {
			for _, table := range []string{"orders", "sessions"} {
				batch = append(batch, traffic.Event{Table: table, PK: "USER#" + strconv.Itoa(i), Class: traffic.Class(i % 2),
					Units: float64(1 + i%7), Time: t0, Source: "demo"})
			}
			if len(batch) == cap(batch) || i == keys-1 {
				if err := sink.Put(context.Background(), batch); err != nil {
					t.Fatal(err)
				}
				batch = make([]traffic.Event, 0, 1024)
			}
		}
		// The key series are what is counted: the report's findings are
		// left out.
		rep := detect.Evaluate(store.Snapshot(), detect.DefaultSettings())
		for i := range rep.Tables {
			rep.Tables[i].Findings, rep.Tables[i].Diagnoses = nil, nil
		}
		live.Update(rep)
		n, err := testutil.GatherAndCount(reg)
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]tableCounts{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				var table string
				for _, l := range m.GetLabel() {
					if l.GetName() == "table" {
						table = l.GetValue()
					}
				}
				c := counts[table]
				switch mf.GetName() {
				case "hotkeyd_keys_omitted":
					c.omitted = m.GetGauge().GetValue()
				case "hotkeyd_partition_keys_distinct":
					c.distinct = m.GetGauge().GetValue()
				default:
					continue
				}
				counts[table] = c
			}
		}
		return n, counts
	}
	small, _ := series(100)
	big, counts := series(distinct)
	if small != big {
		t.Errorf("%d series with 100 distinct keys per table, %d with %d", small, big, distinct)
	}
	if len(counts) != 2 {
		t.Fatalf("omitted and distinct counts for %d tables, want 2: %v", len(counts), counts)
	}
	for table, c := range counts {
		// Both classes export the default top keys, disjoint here; the
		// rest of the (estimated) distinct keys are the omitted ones.
		top := float64(detect.DefaultSettings().Top)
		if want := c.distinct - 2*top; c.omitted != want {
			t.Errorf("%s: hotkeyd_keys_omitted = %v, want %v (distinct %v - %v exported)", table, c.omitted, want, c.distinct, 2*top)
		}
		if math.Abs(c.distinct-float64(distinct)) > 0.03*float64(distinct) {
			t.Errorf("%s: distinct keys %v, want %d within 3%%", table, c.distinct, distinct)
		}
	}
}

// TestLiveConcurrent publishes while the collector and the API read; the
// race detector checks that nothing is shared unsafely.
func TestLiveConcurrent(t *testing.T) {
	live := NewLive(nil)
	c := NewCollector(live, CollectorConfig{Masker: mustMasker(t, KeysHash, "k")})
	h := hotkeysHandler{live: live, masker: mustMasker(t, KeysHash, "k"), log: nopLogger()}
	live.Update(handState())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			live.Update(handState())
		}
	}()
	for range 200 {
		if n := testutil.CollectAndCount(c); n == 0 {
			t.Fatal("no metrics")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/hotkeys", nil))
		if rec.Code != 200 {
			t.Fatalf("API = %d", rec.Code)
		}
	}
	<-done
}

// TestCollectorShards: hotkeyd_stream_shard_records has a table's
// busiest stream shards (detector.top of them) and their rest as
// shard="other", summing to the table's records in the window; with
// replicas, only the replica exporting the table's table-wide series
// exports them.
func TestCollectorShards(t *testing.T) {
	snap := handSnapshot()
	var total uint64
	for i := range 15 { // shard i has 100+i records, the busiest first
		n := uint64(100 + 14 - i)
		snap.Tables[0].Shards = append(snap.Tables[0].Shards, sketch.ShardStat{Shard: fmt.Sprintf("shardId-%04d", 14-i), Records: n})
		total += n
	}
	rep := detect.Evaluate(snap, detect.DefaultSettings())
	for _, c := range []struct {
		replica, raiser string
		want            int
	}{{"", "", 11}, {"w1", "w1", 11}, {"w1", "w2", 0}} {
		rep.Tables[0].Replica = c.raiser
		live := NewLive(func() time.Time { return t0 })
		live.Update(rep)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(NewCollector(live, CollectorConfig{Replica: c.replica}))
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != "hotkeyd_stream_shard_records" {
				continue
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["table"] != "orders" {
					t.Errorf("a shard series of %q", labels["table"])
				}
				got[labels["shard"]] = m.GetGauge().GetValue()
			}
		}
		if len(got) != c.want {
			t.Errorf("replica %q, table raised by %q: %d shard series %v, want %d", c.replica, c.raiser, len(got), got, c.want)
			continue
		}
		if c.want == 0 {
			continue
		}
		var sum float64
		for _, v := range got {
			sum += v
		}
		if sum != float64(total) || got["shardId-0014"] != 114 || got["shardId-0005"] != 105 || got[report.OtherShards] != 100+101+102+103+104 {
			t.Errorf("shard series %v: want the ten busiest, the rest's 510 as other, %d in all", got, total)
		}
	}
}
