package export

import (
	"math"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// Announcer renders the live detector's changes as log lines, one per
// finding raised or cleared:
//
//	level=warn msg="hot key" table=orders class=write key=USER#42 severity=warning share=0.25 units_per_second=118.53 recommendation=write_sharding suffix_count=4 example="USER#42#0 .. USER#42#3" advice="..."
//	level=info msg="hot key cleared" table=orders class=write key=USER#42
//
// The changes come from detect.Tracker, so what it logs already has
// hysteresis. Keys are masked as everywhere else. An Announcer keeps no
// state and is safe for concurrent use.
type Announcer struct {
	log    *zap.Logger
	masker *KeyMasker
}

// NewAnnouncer returns an Announcer logging to log; masker masks the keys
// (nil shows them as they are).
func NewAnnouncer(log *zap.Logger, masker *KeyMasker) *Announcer {
	return &Announcer{log: log, masker: masker}
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

// Announce logs one line per change, in the order given.
func (a *Announcer) Announce(changes []report.Change) {
	for _, c := range changes {
		f := c.Finding
		if c.Cleared {
			a.log.Info(findingMessage(f.Kind)+" cleared", where(c.Table, c.Index, f.Class, a.masker.FindingKey(f), f.Kind)...)
			continue
		}
		m := a.masker.MaskFinding(f)
		fields := where(c.Table, c.Index, m.Class, m.Key, m.Kind)
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

// where returns the fields that say what a finding is about, in the order
// the log lines show them; the kind is left out where the message says it.
func where(table, index, class, key string, kind report.Kind) []zap.Field {
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
	p := math.Pow10(n)
	return float64(int64(v*p+0.5)) / p
}
