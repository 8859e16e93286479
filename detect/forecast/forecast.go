// Package forecast foresees when a partition key reaches its partition's
// ceiling: from a key's busiest second of each hour over days of event
// time, its headroom (the ceiling over its busiest second: the growth of
// today's traffic it can take), its trend per day, the time the trend
// takes it to the ceiling, and how confident the fit is. It is pure: no
// clock, no I/O; the same series always gives the same forecast.
//
// The method (docs/how-it-decides.md, "Forecasts"): a key's traffic has a
// daily cycle, and often a weekly one, so a line through its series takes
// a file that ends at the top of the afternoon ramp for growth. Instead
// the series is fitted as a level per hour of the day (per hour of the
// week once it spans two weeks) times a growth common to every hour:
// like hours are compared across days, and the cycle is absorbed by the
// levels. Two growths are fitted, by least squares on the units
// themselves, and the closer one is kept: linear (level × (1 + β·t)) and
// compounding (level × e^(β·t)). The fit's confidence is the share of the
// series' variance around its like-hour means that the growth explains
// (an R²); below MinConfidence the trend is not predictable. A change of
// level (a launch, a migration) that a step explains better than a trend
// is not a trend. The series must span MinSpan (two days: every hour of
// the day seen at least twice).
package forecast

import (
	"context"
	"math"
	"slices"
	"time"
)

// Point is a key's busiest second in one step of its series (an hour in
// analyze and in the history's hourly cells), in units per second; Time is
// the step's start, in event time.
type Point struct {
	Time  time.Time
	Units float64
}

// Query asks for one key's series of busiest seconds between From and To.
type Query struct {
	Table, Index string
	// Class is "read" or "write".
	Class string
	Key   string
	// From and To bound the series, in event time.
	From, To time.Time
}

// Series answers a key's busiest second of each step between two times:
// the seam between the forecast and whatever keeps the history (the
// daemon's history store, analyze's second read of its inputs). Points
// come in any order; a step without traffic has no point. It is safe for
// concurrent use.
type Series interface {
	BusiestSeconds(ctx context.Context, q Query) ([]Point, error)
}

// Input is one key to foresee.
type Input struct {
	// Points are the key's busiest second of each step (Step long), in
	// any order.
	Points []Point
	// Step is the span each point covers; 0 means an hour.
	Step time.Duration
	// End is the end of the series (the last event's time, or now): the
	// forecast's "today", from which the time to the ceiling counts.
	End time.Time
	// Peak is the key's busiest second over the judged span (its exact
	// peak); 0 takes the highest point.
	Peak float64
	// Ceiling is one partition's throughput for the key's class: 1000
	// WCU/s of writes, 3000 RCU/s of reads
	// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html#bp-partition-key-throughput-bursting).
	Ceiling float64
}

// Model names the growth a forecast fitted.
type Model string

// Models.
const (
	// Linear: the key's busiest seconds grow by the same units per second
	// each day.
	Linear Model = "linear"
	// Compounding: they grow by the same fraction each day.
	Compounding Model = "compounding"
)

// Forecast is what the series says of one key.
type Forecast struct {
	// Peak is the key's busiest second (Input.Peak), Headroom the ceiling
	// over it: 10 means today's traffic can grow tenfold before the key
	// throttles. 0 when Peak is 0.
	Peak, Headroom float64
	// Predictable says a trend was fitted at MinConfidence or above; then
	// Model, TrendPerDay and, for compounding growth, GrowthPerDay say it.
	Predictable bool
	Model       Model
	// TrendPerDay is how many units per second the key's busiest second
	// gains a day at End (negative when it shrinks).
	TrendPerDay float64
	// GrowthPerDay is the fraction the busiest second grows by a day (0.1
	// is 10 % a day): the compounding rate, or for linear growth the trend
	// over the fitted busiest second at End.
	GrowthPerDay float64
	// FittedPeak is the fitted busiest second at End, which the trend
	// projects from.
	FittedPeak float64
	// ReachesCeiling is when the trend takes the busiest second to the
	// ceiling; zero when no trend does within MaxAhead spans of the
	// series (a key that does not grow never gets one).
	ReachesCeiling time.Time
	// Confidence is the fit's R²: the share of the series' variance about
	// its like-hour levels the growth explains, 0 to 1.
	Confidence float64
	// Span is how long the series is.
	Span time.Duration
	// Note says, when there is no trend or no time to the ceiling, why.
	Note string
}

// The rule's numbers, held by the tests (forecast_test.go) and stated in
// docs/how-it-decides.md.
const (
	// MinSpan is the shortest series fitted: two days, so that every hour
	// of the day is seen at least twice and compared with itself.
	MinSpan = 48 * time.Hour
	// WeeklySpan is the span from which the levels are per hour of the
	// week (a weekly cycle is seen twice) rather than per hour of the day.
	WeeklySpan = 14 * 24 * time.Hour
	// MinConfidence is the R² under which a trend is not predictable (the
	// storage capacity recipes' "unpredictable" below 0.7).
	MinConfidence = 0.7
	// GoodConfidence is the R² from which a forecast may warn.
	GoodConfidence = 0.9
	// MaxAhead bounds how far the trend is projected: at most this many
	// times the series' span past its end.
	MaxAhead = 4
)

// Foresee forecasts one key.
func Foresee(in Input) Forecast {
	step := in.Step
	if step <= 0 {
		step = time.Hour
	}
	pts := clean(in.Points)
	f := Forecast{Peak: in.Peak}
	if f.Peak <= 0 {
		for _, p := range pts {
			f.Peak = max(f.Peak, p.Units)
		}
	}
	if f.Peak > 0 && in.Ceiling > 0 {
		f.Headroom = in.Ceiling / f.Peak
	}
	if len(pts) == 0 {
		f.Note = "no traffic in the series"
		return f
	}
	f.Span = in.End.Sub(pts[0].Time)
	if last := pts[len(pts)-1].Time.Add(step); last.After(in.End) {
		f.Span = last.Sub(pts[0].Time)
	}
	if f.Span < MinSpan {
		f.Note = "the series spans less than " + days(MinSpan) + ": too short to tell a trend from the daily cycle"
		return f
	}
	s := newSeries(pts, in.End, f.Span)
	fit, other, w := s.best()
	f.Confidence = fit.r2
	if fit.r2 < MinConfidence {
		f.Note = "no trend: the growth explains R² " + fmt2(fit.r2) + " of the series, under " + fmt2(MinConfidence)
		return f
	}
	if s.stepBeatsTrend() {
		f.Note = "a change of level (a launch, a migration, a backfill) explains the series better than a trend"
		return f
	}
	f.Predictable, f.Model, f.FittedPeak = true, fit.model, fit.peak
	f.TrendPerDay, f.GrowthPerDay = fit.trend()
	f.ReachesCeiling, f.Note = fit.reaches(in.Ceiling, in.End, f.Span)
	if !f.ReachesCeiling.IsZero() && w > 0.01 {
		// Between the two growths, by their weights: their speeds towards
		// the ceiling are averaged (the harmonic mean of the times), which
		// leans to the sooner, the side a capacity plan errs on.
		if at, _ := other.reaches(in.Ceiling, in.End, f.Span); !at.IsZero() && at.After(in.End) && f.ReachesCeiling.After(in.End) {
			speed := (1-w)/float64(f.ReachesCeiling.Sub(in.End)) + w/float64(at.Sub(in.End))
			f.ReachesCeiling = in.End.Add(time.Duration(1 / speed))
		}
	}
	return f
}

// clean returns the points with a finite, positive number of units,
// oldest first, each time once (with its busiest units).
func clean(in []Point) []Point {
	out := make([]Point, 0, len(in))
	for _, p := range in {
		if p.Units > 0 && !math.IsInf(p.Units, 0) && !p.Time.IsZero() {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Point) int { return a.Time.Compare(b.Time) })
	n := 0
	for _, p := range out {
		if n > 0 && out[n-1].Time.Equal(p.Time) {
			out[n-1].Units = max(out[n-1].Units, p.Units)
			continue
		}
		out[n] = p
		n++
	}
	return out[:n]
}

// PeakAt returns the busiest second the trend projects d after the end:
// the fitted busiest second grown linearly or compounding; the fitted
// busiest second itself when there is no growing trend.
func (f Forecast) PeakAt(d time.Duration) float64 {
	if !f.Predictable || f.GrowthPerDay <= 0 || d <= 0 {
		return f.FittedPeak
	}
	days := d.Hours() / 24
	if f.Model == Compounding {
		return f.FittedPeak * math.Pow(1+f.GrowthPerDay, days)
	}
	return f.FittedPeak * (1 + f.GrowthPerDay*days)
}
