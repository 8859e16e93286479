package main

import (
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
)

// announcer logs the findings that became flagged or cleared since the last
// tick, one line each:
//
//	level=warn msg="hot key" table=orders class=write key=USER#42 share=0.25 recommendation=write_sharding suffix_count=4
//	level=info msg="hot key cleared" table=orders class=write key=USER#42
//
// It sees the Tracker's report, so what it logs already has hysteresis.
// It is used by the detector tick only, never concurrently.
type announcer struct {
	log     *zap.Logger
	masker  *export.KeyMasker
	flagged map[findingID]bool
}

type findingID struct {
	table, index string
	kind         report.Kind
	class, key   string
}

func newAnnouncer(log *zap.Logger, masker *export.KeyMasker) *announcer {
	return &announcer{log: log, masker: masker, flagged: map[findingID]bool{}}
}

// findingMessages are the log messages of the finding kinds.
var findingMessages = map[report.Kind]string{
	report.KindHotKey:         "hot key",
	report.KindPartitionLimit: "key near the partition limit",
	report.KindLowCardinality: "low partition key cardinality",
	report.KindTimeOrderedKey: "time-ordered partition key",
	report.KindHotPartition:   "hot partition",
}

func findingMessage(kind report.Kind) string {
	if m, ok := findingMessages[kind]; ok {
		return m
	}
	return "finding"
}

// announce compares rep's findings with the previous report's.
func (a *announcer) announce(rep report.Report) {
	now := make(map[findingID]bool, len(a.flagged))
	for _, t := range rep.Tables {
		for _, f := range t.Findings {
			id := findingID{t.Table, t.Index, f.Kind, f.Class, f.Key}
			now[id] = true
			if a.flagged[id] {
				continue
			}
			m := a.masker.MaskFinding(f)
			fields := a.where(t.Table, t.Index, m.Class, m.Key, m.Kind)
			if m.Severity != "" {
				fields = append(fields, zap.String("severity", string(m.Severity)))
			}
			if m.Share > 0 {
				fields = append(fields, zap.Float64("share", round(m.Share, 4)))
			}
			if m.UnitsPerSecond > 0 {
				fields = append(fields, zap.Float64("units_per_second", round(m.UnitsPerSecond, 2)))
			}
			if r := m.Recommendation; r != nil {
				fields = append(fields, zap.String("recommendation", string(r.Kind)))
				if r.SuffixCount > 0 {
					fields = append(fields, zap.Int("suffix_count", r.SuffixCount))
				}
				if r.Example != "" {
					fields = append(fields, zap.String("example", r.Example))
				}
				fields = append(fields, zap.String("advice", r.Text))
			}
			a.log.Warn(findingMessage(f.Kind), fields...)
		}
	}
	for id := range a.flagged {
		if now[id] {
			continue
		}
		key := a.masker.FindingKey(report.Finding{Kind: id.kind, Key: id.key})
		a.log.Info(findingMessage(id.kind)+" cleared", a.where(id.table, id.index, id.class, key, id.kind)...)
	}
	a.flagged = now
}

// where returns the fields that say what a finding is about, in the order
// the log lines show them; the kind is left out where the message says it.
func (a *announcer) where(table, index, class, key string, kind report.Kind) []zap.Field {
	fields := []zap.Field{zap.String("table", table)}
	if index != "" {
		fields = append(fields, zap.String("index", index))
	}
	if class != "" {
		fields = append(fields, zap.String("class", class))
	}
	if key != "" {
		fields = append(fields, zap.String("key", key))
	}
	if _, known := findingMessages[kind]; !known {
		fields = append(fields, zap.String("kind", string(kind)))
	}
	return fields
}

// round keeps n decimals, so the log shows share=0.25, not 0.2500000001.
func round(v float64, n int) float64 {
	p := 1.0
	for range n {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}
