package export

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// ProgressSource is what the ProgressCollector reads: the sources'
// progress in event time (traffic.Progress).
type ProgressSource interface {
	States() []traffic.SourceState
}

// LateCounter counts, by source, the events that arrived older than their
// table's window (sketch.Store).
type LateCounter interface {
	LateEvents() map[string]uint64
}

// ProgressCollector exports, at scrape time, how far behind each source
// reads (hotkeyd_source_lag_seconds) and how many of its events came too
// late for the window (hotkeyd_late_events_total). Every known source has
// both series from the start, at 0.
type ProgressCollector struct {
	progress ProgressSource
	late     LateCounter
}

// NewProgressCollector returns the collector of p's lags and l's late
// events; l may be nil (no late series).
func NewProgressCollector(p ProgressSource, l LateCounter) *ProgressCollector {
	return &ProgressCollector{progress: p, late: l}
}

// Describe implements prometheus.Collector.
func (c *ProgressCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSourceLag
	if c.late != nil {
		ch <- descLateEvents
	}
}

// Collect implements prometheus.Collector.
func (c *ProgressCollector) Collect(ch chan<- prometheus.Metric) {
	states := c.progress.States()
	for _, st := range states {
		ch <- prometheus.MustNewConstMetric(descSourceLag, prometheus.GaugeValue, st.Lag.Seconds(), st.Source)
	}
	if c.late == nil {
		return
	}
	late := c.late.LateEvents()
	for _, st := range states {
		ch <- prometheus.MustNewConstMetric(descLateEvents, prometheus.CounterValue, float64(late[st.Source]), st.Source)
		delete(late, st.Source)
	}
	for source, n := range late {
		ch <- prometheus.MustNewConstMetric(descLateEvents, prometheus.CounterValue, float64(n), source)
	}
}

// SourcesReport returns the sources' progress as /api/v1/hotkeys shows it.
func SourcesReport(states []traffic.SourceState) []report.SourceProgress {
	if len(states) == 0 {
		return nil
	}
	out := make([]report.SourceProgress, 0, len(states))
	for _, st := range states {
		out = append(out, report.SourceProgress{
			Source: st.Source, Watermark: st.Watermark.UTC(), LagSeconds: st.Lag.Seconds(),
			DelaySeconds: st.Delay.Seconds(), CatchingUp: st.CatchingUp,
		})
	}
	return out
}
