package detect

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/forecast"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// This file is the forecast rule (docs/how-it-decides.md, "Forecasts"):
// per judged key (each of a table's top_keys), its headroom, its trend
// and when it reaches its partition's ceiling (package forecast), the
// 10× / 100× view, and a forecast diagnosis for a key whose trend takes
// it to the ceiling. A key already near the ceiling has its
// partition_limit diagnosis, not a forecast: one diagnosis per cause.

// KeySeries returns a judged key's busiest second of each hour of its
// history (nil when there is none): analyze's second read of its inputs,
// or the daemon's history.
type KeySeries func(table, index string, c traffic.Class, key string) []forecast.Point

// ScaleFactors are the growths of today's traffic the scale view judges
// keys at: the key design advice's 10× and 100×.
var scaleFactors = [...]int{10, 100}

// Foresee adds to every table entry of r, which Evaluate (or a Tracker)
// judged from snap with s, its forecasts, its scale view and its forecast
// diagnoses and findings, from each judged key's series. It is pure: r's
// entries are copied, not changed. A nil series gives headroom and the
// scale view alone.
func Foresee(snap sketch.Snapshot, r report.Report, series KeySeries, s Settings) report.Report {
	r.Tables = slices.Clone(r.Tables)
	for i := range r.Tables {
		tr := &r.Tables[i]
		j, ok := slices.BinarySearchFunc(snap.Tables, tr, func(ts sketch.TableSnapshot, tr *report.TableReport) int {
			return cmp.Or(cmp.Compare(ts.Table, tr.Table), cmp.Compare(ts.Index, tr.Index))
		})
		if !ok || snap.Tables[j].Kept {
			continue
		}
		newTable(&snap.Tables[j], baseOf(snap.Tables, j), s, false).foresee(tr, series)
	}
	return r
}

// foresee adds the entry's forecasts, scale view and forecast diagnoses.
func (t *table) foresee(tr *report.TableReport, series KeySeries) {
	tr.Forecasts, tr.Scale = nil, nil
	diagnoses, findings := slices.Clip(tr.Diagnoses), slices.Clip(tr.Findings)
	for _, tk := range tr.TopKeys {
		c, ok := traffic.ParseClass(tk.Class)
		k := t.keyStat(c, tk.Key)
		if !ok || k == nil || tk.PeakUnitsPerSecond <= 0 {
			continue
		}
		var pts []forecast.Point
		if series != nil {
			pts = series(t.Table, t.Index, c, tk.Key)
		}
		f := forecast.Foresee(forecast.Input{Points: pts, End: t.End, Peak: tk.PeakUnitsPerSecond, Ceiling: t.limit(c)})
		tr.Forecasts = append(tr.Forecasts, t.forecastOf(tk, f))
		if !t.noScale {
			if sk, ok := t.scaleKey(c, k, tk); ok {
				tr.Scale = append(tr.Scale, sk)
			}
		}
		if d, fd, ok := t.forecastDiagnosis(c, k, tk, f, findings); ok {
			diagnoses, findings = append(diagnoses, d), append(findings, fd)
		}
	}
	sortDiagnoses(diagnoses)
	sortFindings(findings)
	tr.Diagnoses, tr.Findings = diagnoses, findings
	slices.SortStableFunc(tr.Scale, func(a, b report.ScaleKey) int {
		return cmp.Or(cmp.Compare(a.Factor, b.Factor), cmp.Compare(b.PeakUnitsPerSecond/b.Limit, a.PeakUnitsPerSecond/a.Limit))
	})
}

// forecastOf is a key's forecast as the report carries it.
func (t *table) forecastOf(tk report.TopKey, f forecast.Forecast) report.Forecast {
	c, _ := traffic.ParseClass(tk.Class)
	out := report.Forecast{
		Key: tk.Key, Class: tk.Class, PeakUnitsPerSecond: tk.PeakUnitsPerSecond, Limit: t.limit(c),
		Headroom: f.Headroom, Confidence: round3(f.Confidence), Days: round3(f.Span.Hours() / 24), Note: f.Note,
	}
	if f.Predictable {
		trend, growth := round3(f.TrendPerDay), round3(f.GrowthPerDay)
		out.TrendPerDay, out.GrowthPerDay, out.Growth = &trend, &growth, string(f.Model)
		fitted, at := round3(f.FittedPeak), t.End.UTC()
		out.FittedPeakUnitsPerSecond, out.FittedAt = &fitted, &at
	}
	if !f.ReachesCeiling.IsZero() {
		at := f.ReachesCeiling.UTC().Truncate(time.Second)
		eta := max(0, at.Sub(t.End).Seconds())
		out.ReachesCeilingAt, out.SecondsToCeiling = &at, &eta
	}
	return out
}

// scaleKey is the scale view of a key: the smallest of the scale factors
// at which its busiest second passes its partition's ceiling, with the
// fix it would then need.
func (t *table) scaleKey(c traffic.Class, k *sketch.KeyStat, tk report.TopKey) (report.ScaleKey, bool) {
	for _, f := range scaleFactors {
		peak := tk.PeakUnitsPerSecond * float64(f)
		if peak > t.limit(c) {
			return report.ScaleKey{Factor: f, Key: tk.Key, Class: tk.Class, PeakUnitsPerSecond: peak, Limit: t.limit(c),
				Fix: t.adviseKey(c, k, tk.Share, peak)}, true
		}
	}
	return report.ScaleKey{}, false
}

// forecastDiagnosis is the forecast diagnosis of a key whose trend
// reaches its partition's ceiling, and its finding: a warning when that is
// within the horizon at good confidence, info otherwise. None for a key
// that does not grow, nor for one at the ceiling already (its
// partition_limit diagnosis says so).
func (t *table) forecastDiagnosis(c traffic.Class, k *sketch.KeyStat, tk report.TopKey, f forecast.Forecast, fs []report.Finding) (report.Diagnosis, report.Finding, bool) {
	limit := t.limit(c)
	if f.ReachesCeiling.IsZero() || !f.ReachesCeiling.After(t.End) || f.TrendPerDay <= 0 || tk.PeakUnitsPerSecond >= t.s.LimitFraction*limit {
		return report.Diagnosis{}, report.Finding{}, false
	}
	for _, o := range fs {
		if o.Kind == report.KindPartitionLimit && o.Key == tk.Key && o.Class == tk.Class {
			return report.Diagnosis{}, report.Finding{}, false
		}
	}
	ahead := f.ReachesCeiling.Sub(t.End)
	sev := report.SeverityInfo
	if ahead <= t.s.ForecastHorizon && f.Confidence >= forecast.GoodConfidence {
		sev = report.SeverityWarning
	}
	// The fix is sized ahead of time: for the busiest second the trend
	// projects at the horizon, at least the ceiling.
	fix := t.adviseKey(c, k, tk.Share, max(limit, f.PeakAt(max(ahead, t.s.ForecastHorizon))))
	summary := fmt.Sprintf("%s grows by %s %s/s a day (%s, R² %.2f over %s days) and reaches one partition's %s %s/s around %s, in %s",
		capitalize(t.subject(tk.Key)), num(f.TrendPerDay), unitName(c), f.Model, f.Confidence, num(f.Span.Hours()/24),
		num(limit), unitName(c), f.ReachesCeiling.UTC().Format("2006-01-02 15:04 MST"), inDays(ahead))
	if sev == report.SeverityWarning {
		summary += ", within the " + inDays(t.s.ForecastHorizon) + " horizon: fix it before then."
	} else {
		summary += "."
	}
	fd := report.Finding{
		Kind: report.KindForecast, Key: tk.Key, Class: tk.Class, Severity: sev, Share: tk.Share,
		UnitsPerSecond: tk.UnitsPerSecond, PeakUnitsPerSecond: tk.PeakUnitsPerSecond, Recommendation: &fix,
		Evidence: &report.Evidence{Summary: summary, WindowSeconds: t.seconds, Units: k.Units, ClassUnits: t.Classes[c].Units, Limit: limit},
	}
	d := report.Diagnosis{
		Cause: report.KindForecast, Class: tk.Class, Keys: []string{tk.Key}, Severity: sev, Share: tk.Share,
		PeakUnitsPerSecond: tk.PeakUnitsPerSecond, Limit: limit, Summary: summary, Fix: fix,
		After: t.afterKey(c, tk.Key, fix), Explains: []report.Explained{{Kind: report.KindForecast, Key: tk.Key, Class: tk.Class}},
	}
	return d, fd, true
}

// inDays writes a duration in days ("3.5 days"), or hours under a day.
func inDays(d time.Duration) string {
	if d < 24*time.Hour {
		return fmt.Sprintf("%.0f hours", math.Ceil(d.Hours()))
	}
	return num(d.Hours()/24) + " days"
}

// round3 rounds to three significant decimals for the report.
func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// SetForecastSeries makes the next evaluations forecast each judged key
// from s (a forecast.Cache's points, refreshed away from the tick: s is
// called for every judged key of every table evaluated, and must answer
// from memory). Nil forecasts headroom and the scale view alone. It may be
// called from any goroutine.
func (tr *Tracker) SetForecastSeries(s KeySeries) {
	if s == nil {
		tr.series.Store(nil)
		return
	}
	tr.series.Store(&s)
}

// forecastSeries is what SetForecastSeries set; nil when nothing was.
func (tr *Tracker) forecastSeries() KeySeries {
	if s := tr.series.Load(); s != nil {
		return *s
	}
	return nil
}

// CachedSeries reads a forecast.Cache as the series of the forecasts.
func CachedSeries(c *forecast.Cache) KeySeries {
	return func(table, index string, cl traffic.Class, key string) []forecast.Point {
		return c.Points(table, index, cl.String(), key)
	}
}
