package export

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hotkeyd/hotkeyd/traffic"
)

type lateEvents map[string]uint64

func (l lateEvents) LateEvents() map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range l {
		out[k] = v
	}
	return out
}

func TestProgressCollector(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p := traffic.NewProgress(func() time.Time { return t0 })
	p.Declare("http", 0)
	p.Declare("cloudtrail", traffic.CloudTrailDelay)
	p.Lane("kinesis").Advance(t0.Add(-90 * time.Second))
	c := NewProgressCollector(p, lateEvents{"kinesis": 7, "jsonl": 2})
	want := `
# HELP hotkeyd_late_events_total Events that arrived older than their table's window: counted in hotkeyd_events_total but in no window and no peak.
# TYPE hotkeyd_late_events_total counter
hotkeyd_late_events_total{source="cloudtrail"} 0
hotkeyd_late_events_total{source="http"} 0
hotkeyd_late_events_total{source="jsonl"} 2
hotkeyd_late_events_total{source="kinesis"} 7
# HELP hotkeyd_source_lag_seconds How far the source's reading is behind the clock in event time: now less the newest event time of its slowest lane (shard, file) that still has records to read; 0 when caught up.
# TYPE hotkeyd_source_lag_seconds gauge
hotkeyd_source_lag_seconds{source="cloudtrail"} 0
hotkeyd_source_lag_seconds{source="http"} 0
hotkeyd_source_lag_seconds{source="kinesis"} 90
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
	srcs := SourcesReport(p.States())
	if len(srcs) != 3 || srcs[2].Source != "kinesis" || !srcs[2].CatchingUp || srcs[2].LagSeconds != 90 || !srcs[2].Watermark.Equal(t0.Add(-90*time.Second)) {
		t.Errorf("SourcesReport = %+v; want kinesis catching up 90 s behind", srcs)
	}
	if srcs[0].Source != "cloudtrail" || srcs[0].CatchingUp || srcs[0].DelaySeconds != 900 || !srcs[0].Watermark.Equal(t0.Add(-15*time.Minute)) {
		t.Errorf("cloudtrail in SourcesReport = %+v; want caught up at now - 15 min", srcs[0])
	}
}
