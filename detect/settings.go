package detect

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// Settings are the detector's thresholds. The zero value is not useful; start
// from DefaultSettings and override. YAML names are those of the config file,
// where they sit under detector:, but for Threshold, which the file sets at
// its top level. Each is declared, defaulted (DefaultSettings) and checked
// (Validate) here only; internal/app/config decodes the file into them and
// builds the pipeline's settings from them, and a report carries those its
// renderings need (Report, report.Settings).
type Settings struct {
	// Threshold is the share of a table's units of one class that makes a
	// partition key hot (hot_key), and the share of a stream's records that
	// makes a shard hot (hot_partition).
	Threshold float64 `yaml:"threshold"`
	// ClearThreshold is the share below which a flagged hot key is cleared
	// in live mode (Tracker). Between it and Threshold a flagged key stays
	// flagged and an unflagged one stays unflagged, so a key hovering near
	// the threshold does not flap. Zero means ClearShare × Threshold, so
	// that it follows a threshold set alone.
	ClearThreshold float64 `yaml:"clear_threshold"`
	// Hold is a span of event time (the table's judged seconds, not the
	// clock): the Tracker flags a diagnosis once every evaluation has seen
	// it from the judged second it first appeared in to one at least Hold
	// later, and clears a flagged table-wide diagnosis once it has been
	// absent for Hold. At the default of 1 s a diagnosis is flagged when
	// it holds in two consecutive seconds, so one noisy second never
	// alarms; 0 flags at first sight. (The configuration's former
	// hold_evaluations: N, N evaluations one a second, is a Hold of N-1
	// seconds.)
	Hold time.Duration `yaml:"hold"`
	// MinUnitsPerSecond (a mean rate over the window) and MinEvents are the
	// traffic floor of a table's class: below either, share-based rules
	// stay silent, because a share of almost nothing is noise and throttles
	// nobody.
	MinUnitsPerSecond float64 `yaml:"min_units_per_second"`
	MinEvents         uint64  `yaml:"min_events"`
	// ReadLimit and WriteLimit are one partition's ceilings: 3000 RCU/s and
	// 1000 WCU/s in DynamoDB.
	ReadLimit  float64 `yaml:"read_limit"`
	WriteLimit float64 `yaml:"write_limit"`
	// LimitFraction of the ceiling is where partition_limit fires and where
	// a key's peak makes its findings and diagnosis critical.
	LimitFraction float64 `yaml:"limit_fraction"`
	// WarnFraction of the ceiling is where a key's peak makes its findings
	// and diagnosis a warning; below it they are info: shown, never paged.
	WarnFraction float64 `yaml:"warn_fraction"`
	// ClearWarnFraction of the ceiling is where a flagged warning falls back
	// to info in live mode; a flagged critical falls back to warning below
	// ClearLimitFraction. Between the two fractions a severity holds, so a
	// peak hovering at a boundary does not flap the alert.
	ClearWarnFraction float64 `yaml:"clear_warn_fraction"`
	// ClearLimitFraction of the ceiling is where a flagged partition_limit
	// is cleared in live mode (its hysteresis band), and where a flagged
	// critical diagnosis falls back to warning.
	ClearLimitFraction float64 `yaml:"clear_limit_fraction"`
	// Headroom is the fraction of a partition's ceiling a shard of a
	// sharded key should use at most: N = max(2, ceil(peak / (limit ×
	// Headroom))).
	Headroom float64 `yaml:"headroom"`
	// Top is the number of keys per class listed in a table's top_keys,
	// and so in /metrics, the API and the analyze report (which read it
	// from the report's settings): 0 to MaxTop.
	Top int `yaml:"top"`
	// CardinalityFactor: a table needs at least this many distinct partition
	// keys per partition its peak traffic requires (low_cardinality).
	CardinalityFactor float64 `yaml:"cardinality_factor"`
	// HandfulKeys and HandfulShare describe a status-like key: between 2 and
	// HandfulKeys keys carry at least HandfulShare of a class's units
	// (low_cardinality). One key alone is a hot_key, not a cardinality issue.
	HandfulKeys  int     `yaml:"handful_keys"`
	HandfulShare float64 `yaml:"handful_share"`
	// TimeOrderedShare is the share of a class's units on partition keys
	// shaped like dates or timestamps that makes the key design
	// time-ordered (time_ordered_key).
	TimeOrderedShare float64 `yaml:"time_ordered_share"`
	// EpochMaxSkewDays bounds how far from the window a bare epoch number
	// may lie and still count as a timestamp; further away it is taken for
	// an ordinary numeric id. Zero disables the check.
	EpochMaxSkewDays float64 `yaml:"epoch_max_skew_days"`
	// ShardFactor: a hot shard also carries at least this many times the
	// mean shard's records (hot_partition).
	ShardFactor float64 `yaml:"shard_factor"`
	// CapacityWarnShare and CapacityCriticalShare are the shares of a
	// class's calls refused for the capacity of the table or index
	// (capacity) that make its diagnosis a warning and critical; below
	// CapacityWarnShare it is info. A sustained few percent of calls
	// throttled is already retries and latency for every caller.
	CapacityWarnShare     float64 `yaml:"capacity_warn_share"`
	CapacityCriticalShare float64 `yaml:"capacity_critical_share"`
	// ForecastHorizon is how far ahead a forecast warns: a key whose trend
	// reaches its partition's ceiling within it, at good confidence, is a
	// forecast warning; further out, or at lower confidence, info (Foresee).
	// 0 never warns.
	ForecastHorizon time.Duration `yaml:"forecast_horizon"`
}

// ClearShare is the fraction of Threshold a zero ClearThreshold stands for.
const ClearShare = 0.8

// MaxTop is the largest Top: the keys a table counts exactly per class
// (sketch.DefaultCandidates), which bound the heavy keys it can rank.
const MaxTop = sketch.DefaultCandidates

// DefaultSettings returns the documented defaults. ClearThreshold is zero:
// ClearShare × Threshold, 0.08 at the default threshold.
func DefaultSettings() Settings {
	return Settings{
		Threshold:          0.10,
		Hold:               time.Second,
		MinUnitsPerSecond:  1,
		MinEvents:          100,
		ReadLimit:          3000,
		WriteLimit:         1000,
		LimitFraction:      0.8,
		WarnFraction:       0.5,
		ClearWarnFraction:  0.4,
		ClearLimitFraction: 0.7,
		Headroom:           0.5,
		Top:                report.DefaultTop,
		CardinalityFactor:  2,
		HandfulKeys:        5,
		HandfulShare:       0.9,
		TimeOrderedShare:   0.5,
		EpochMaxSkewDays:   366,
		ShardFactor:        2,
		// Throttling is an error callers see: at 1 % of calls it is
		// worth a ticket, at 5 % a page.
		CapacityWarnShare:     0.01,
		CapacityCriticalShare: 0.05,
		// A week: time to ship a key design change.
		ForecastHorizon: 7 * 24 * time.Hour,
	}
}

// Report returns the settings a report was judged by, as it carries them.
func (s Settings) Report() report.Settings {
	return report.Settings{
		Threshold: s.Threshold, WarnFraction: s.WarnFraction, LimitFraction: s.LimitFraction,
		ReadLimit: s.ReadLimit, WriteLimit: s.WriteLimit, Top: s.Top,
		CapacityWarnShare: s.CapacityWarnShare, CapacityCriticalShare: s.CapacityCriticalShare,
		ForecastHorizonSeconds: s.ForecastHorizon.Seconds(),
	}
}

// clearThreshold is ClearThreshold, or ClearShare × Threshold when zero.
func (s Settings) clearThreshold() float64 {
	if s.ClearThreshold == 0 {
		return ClearShare * s.Threshold
	}
	return s.ClearThreshold
}

// Validate returns an error naming every setting out of range, by its
// YAML name ("threshold: ...", "top: ..."), one per line (errors.Join).
func (s Settings) Validate() error {
	frac := func(name string, v float64, zeroOK bool) error {
		switch {
		case zeroOK && (v < 0 || v > 1 || v != v):
			return fmt.Errorf("%s: %v is outside [0, 1]", name, v)
		case !zeroOK && !(v > 0 && v <= 1):
			return fmt.Errorf("%s: %v is outside (0, 1]", name, v)
		}
		return nil
	}
	pos := func(name string, v float64) error {
		if !(v > 0) {
			return fmt.Errorf("%s: %v must be positive", name, v)
		}
		return nil
	}
	nonneg := func(name string, v float64) error {
		if !(v >= 0) {
			return fmt.Errorf("%s: %v must not be negative", name, v)
		}
		return nil
	}
	var threshold error
	if !(s.Threshold > 0 && s.Threshold < 1) {
		threshold = fmt.Errorf("threshold: must be above 0 and below 1, got %g", s.Threshold)
	}
	errs := []error{
		threshold,
		frac("clear_threshold", s.ClearThreshold, true),
		frac("limit_fraction", s.LimitFraction, false),
		frac("warn_fraction", s.WarnFraction, false),
		frac("clear_warn_fraction", s.ClearWarnFraction, false),
		frac("clear_limit_fraction", s.ClearLimitFraction, false),
		frac("headroom", s.Headroom, false),
		frac("handful_share", s.HandfulShare, false),
		frac("time_ordered_share", s.TimeOrderedShare, false),
		frac("capacity_warn_share", s.CapacityWarnShare, false),
		frac("capacity_critical_share", s.CapacityCriticalShare, false),
		pos("read_limit", s.ReadLimit),
		pos("write_limit", s.WriteLimit),
		nonneg("min_units_per_second", s.MinUnitsPerSecond),
		nonneg("epoch_max_skew_days", s.EpochMaxSkewDays),
	}
	// An order between two settings is checked when both are in range.
	bad := map[string]bool{}
	for _, err := range errs {
		if err != nil {
			name, _, _ := strings.Cut(err.Error(), ":")
			bad[name] = true
		}
	}
	order := func(name string, v float64, other string, w float64) error {
		if v > w && !bad[name] && !bad[other] {
			return fmt.Errorf("%s: %v is above %s %v", name, v, other, w)
		}
		return nil
	}
	errs = append(errs,
		order("clear_threshold", s.ClearThreshold, "threshold", s.Threshold),
		order("clear_limit_fraction", s.ClearLimitFraction, "limit_fraction", s.LimitFraction),
		order("warn_fraction", s.WarnFraction, "limit_fraction", s.LimitFraction),
		order("clear_warn_fraction", s.ClearWarnFraction, "warn_fraction", s.WarnFraction),
		order("capacity_warn_share", s.CapacityWarnShare, "capacity_critical_share", s.CapacityCriticalShare))
	errs = append(errs, s.durationErrors()...)
	if s.Top < 0 || s.Top > MaxTop {
		errs = append(errs, fmt.Errorf("top: must be 0 to %d (the keys a table counts exactly per class), got %d", MaxTop, s.Top))
	}
	if s.CardinalityFactor < 1 || s.CardinalityFactor != s.CardinalityFactor {
		errs = append(errs, fmt.Errorf("cardinality_factor: %v must be at least 1", s.CardinalityFactor))
	}
	if s.HandfulKeys < 2 {
		errs = append(errs, fmt.Errorf("handful_keys: %d must be at least 2", s.HandfulKeys))
	}
	if s.ShardFactor < 1 || s.ShardFactor != s.ShardFactor {
		errs = append(errs, fmt.Errorf("shard_factor: %v must be at least 1", s.ShardFactor))
	}
	return errors.Join(errs...) // every wrong setting, in this order
}

// durationErrors checks the settings that are spans of time.
func (s Settings) durationErrors() []error {
	var errs []error
	if s.Hold < 0 {
		errs = append(errs, fmt.Errorf("hold: %v must not be negative", s.Hold))
	}
	if s.ForecastHorizon < 0 {
		errs = append(errs, fmt.Errorf("forecast_horizon: %v must not be negative", s.ForecastHorizon))
	}
	return errs
}
