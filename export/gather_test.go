package export

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// text encodes families as the text exposition.
func text(t *testing.T, mfs []*dto.MetricFamily) string {
	t.Helper()
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestGatherMatchesCollect: the Collector's cached families (what the
// daemon serves) are the series a registry gathers from the Collector,
// in the same order, whatever the keys mode or the replica.
func TestGatherMatchesCollect(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  CollectorConfig
	}{
		{"plain", CollectorConfig{}},
		{"redact", CollectorConfig{Masker: mustMasker(t, KeysRedact, "")}},
		{"hash", CollectorConfig{Masker: mustMasker(t, KeysHash, "k")}},
		{"top 1", CollectorConfig{TopN: 1}},
		{"replica", CollectorConfig{Replica: "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := handState()
			rep.Tables[0].Replica = "a"
			rep.Tables[0].Diagnoses[1].RaisedBy = "b"
			live := NewLive(func() time.Time { return t0 })
			live.Update(rep)
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(NewCollector(live, tc.cfg))
			want, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got, err := Gatherers(prometheus.NewRegistry(), NewCollector(live, tc.cfg)).Gather()
			if err != nil {
				t.Fatal(err)
			}
			if g, w := text(t, got), text(t, want); g != w {
				t.Errorf("gathered:\n%s\nwant, as a registry gathers it:\n%s", g, w)
			}
		})
	}
}

// TestGatherKeepsTables holds the incremental rule of the scrape: a table
// whose report kept its revision keeps its series (the same objects, not
// built again); one whose revision changed, or that has none, is built
// again; one gone is gone.
func TestGatherKeepsTables(t *testing.T) {
	rep := handState()
	live := NewLive(func() time.Time { return t0 })
	c := NewCollector(live, CollectorConfig{})
	seriesOf := func() map[string]*dto.Metric {
		t.Helper()
		mfs, err := c.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*dto.Metric{}
		for _, mf := range mfs {
			for _, m := range mf.Metric {
				id := mf.GetName()
				for _, l := range m.Label {
					id += " " + l.GetValue()
				}
				out[id] = m
			}
		}
		return out
	}
	const orders, index = "hotkeyd_partition_keys_distinct orders", "hotkeyd_partition_keys_distinct orders/status-index"
	live.Publish(rep, []uint64{1, 2})
	first := seriesOf()
	if first[orders] == nil || first[index] == nil {
		t.Fatalf("series %v", first)
	}
	live.Publish(rep, []uint64{1, 2}) // a new State, nothing changed
	second := seriesOf()
	for id, m := range first {
		if id != "hotkeyd_last_evaluation_timestamp_seconds" && second[id] != m {
			t.Errorf("%s built again though its table did not change", id)
		}
	}
	rep2 := rep
	rep2.Tables = append([]report.TableReport(nil), rep.Tables...)
	rep2.Tables[1].DistinctPartitionKeys = 3
	live.Publish(rep2, []uint64{1, 3})
	third := seriesOf()
	if third[orders] != first[orders] || third[index] == first[index] || third[index].GetGauge().GetValue() != 3 {
		t.Errorf("after the index changed: orders kept %v, index built again %v with %v", third[orders] == first[orders], third[index] != first[index], third[index].GetGauge().GetValue())
	}
	live.Update(rep2) // no revisions: everything is built again
	if fourth := seriesOf(); fourth[orders] == third[orders] {
		t.Error("a State without revisions reused a table's series")
	}
	live.Publish(report.Report{Tables: rep2.Tables[:1]}, []uint64{1})
	if fifth := seriesOf(); fifth[index] != nil || fifth[orders] == nil {
		t.Errorf("after the index left the report: %d series, index %v", len(fifth), fifth[index])
	}
}
