package export

import (
	"math"
	"strings"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// Announcer renders the live detector's changes as log lines, one per
// diagnosis raised, changed or cleared:
//
//	level=warn msg="hot key" table=orders class=write key=USER#42 severity=warning share=0.25 peak_units_per_second=618 fix=calculated_suffix suffix_count=2 example="USER#42#0 .. USER#42#1" advice="..." after="..."
//	level=error msg="key near the partition limit changed" table=telemetry class=write key=DEVICE#7 severity=critical ... was_cause=hot_key was_severity=warning
//	level=info msg="hot key cleared" table=orders class=write key=USER#42
//	level=error msg="short of capacity" table=ledger class=write severity=critical limit=provisioned resource=table throttled_share=0.33 throttled=16920 peak_units_per_second=282 fix=capacity advice="..."
//
// A diagnosis at warning or above is logged at warn, a critical one at
// error, an info one at info. The changes come from detect.Tracker, so what
// it logs already has hysteresis. Keys are masked as everywhere else. An
// Announcer keeps no state and is safe for concurrent use.
type Announcer struct {
	log    *zap.Logger
	masker *KeyMasker
}

// NewAnnouncer returns an Announcer logging to log; masker masks the keys
// (nil shows them as they are).
func NewAnnouncer(log *zap.Logger, masker *KeyMasker) *Announcer {
	return &Announcer{log: log, masker: masker}
}

// findingMessages are the log messages of the causes (finding kinds).
var findingMessages = map[report.Kind]string{
	report.KindHotKey:         "hot key",
	report.KindPartitionLimit: "key near the partition limit",
	report.KindLowCardinality: "low partition key cardinality",
	report.KindTimeOrderedKey: "time-ordered partition key",
	report.KindHotPartition:   "hot partition",
	report.KindCapacity:       "short of capacity",
	report.KindForecast:       "key growing towards the partition limit",
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
		d := c.Diagnosis
		if c.Cleared {
			a.log.Info(findingMessage(d.Cause)+" cleared", where(c.Table, c.Index, d.Class, a.masker.DiagnosisKey(d), a.keyText(d), d.Cause)...)
			continue
		}
		m := a.masker.MaskDiagnosis(d)
		fields := where(c.Table, c.Index, m.Class, a.masker.DiagnosisKey(d), a.keyText(d), m.Cause)
		if len(m.Keys) > 1 {
			fields = append(fields, zap.String("keys", strings.Join(m.Keys, ",")))
		}
		fields = append(fields, zap.String("severity", string(m.Severity)))
		if cp := m.Capacity; cp != nil {
			fields = append(fields, zap.String("limit", string(cp.Limit)), zap.String("resource", cp.Resource),
				zap.Float64("throttled_share", round(cp.ThrottledShare, 4)), zap.Uint64("throttled", cp.Throttled))
		} else if m.Share > 0 {
			fields = append(fields, zap.Float64("share", round(m.Share, 4)))
		}
		if m.PeakUnitsPerSecond > 0 {
			fields = append(fields, zap.Float64("peak_units_per_second", round(m.PeakUnitsPerSecond, 2)))
		}
		fields = append(fields, zap.String("fix", string(m.Fix.Kind)))
		if m.Fix.SuffixCount > 0 {
			fields = append(fields, zap.Int("suffix_count", m.Fix.SuffixCount))
		}
		if m.Fix.Example != "" {
			fields = append(fields, zap.String("example", m.Fix.Example))
		}
		fields = append(fields, zap.String("advice", m.Fix.Text))
		if m.After != nil {
			fields = append(fields, zap.String("after", m.After.Summary))
		}
		msg := findingMessage(d.Cause)
		if w := c.Was; w != nil {
			msg += " changed"
			if w.Cause != d.Cause {
				fields = append(fields, zap.String("was_cause", string(w.Cause)))
			}
			if w.Severity != d.Severity {
				fields = append(fields, zap.String("was_severity", string(w.Severity)))
			}
			if w.Fix.Kind != d.Fix.Kind {
				fields = append(fields, zap.String("was_fix", string(w.Fix.Kind)))
			}
		}
		switch d.Severity {
		case report.SeverityCritical:
			a.log.Error(msg, fields...)
		case report.SeverityWarning:
			a.log.Warn(msg, fields...)
		default:
			a.log.Info(msg, fields...)
		}
	}
}

// keyText is the text a diagnosis's binary key holds (report.KeyText),
// for the log line beside the key: none where keys are masked, whose text
// form would show the key, nor for a key that names a stream shard.
func (a *Announcer) keyText(d report.Diagnosis) string {
	if a.masker.Mode() != KeysPlain || d.KeyType() != report.PartitionKey {
		return ""
	}
	return report.KeyText(d.Key())
}

// where returns the fields that say what a diagnosis is about, in the
// order the log lines show them; the cause is left out where the message
// says it.
func where(table, index, class, key, keyText string, kind report.Kind) []zap.Field {
	fields := []zap.Field{zap.String("table", table)}
	if index != "" {
		fields = append(fields, zap.String("index", index))
	}
	if class != "" {
		fields = append(fields, zap.String("class", class))
	}
	if key != "" {
		fields = append(fields, zap.String("key", key))
		if keyText != "" {
			fields = append(fields, zap.String("key_text", keyText))
		}
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
