package analyze

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// TestForecasts: two and a half days of writes through analyze, as the
// capacity planner of the forecasts issue tried: a key growing by 150
// WCU/s a day (475 at the end: 3.5 days from the ceiling), one
// compounding by 35 % a day (about 3.4 days from it), and one with a
// strong daily cycle that the input ends at the top of. Each has a daily
// cycle; the growing ones get a time to the ceiling close to the truth
// and a forecast diagnosis, the flat one none; every headroom is within
// 10 % of the truth.
func TestForecasts(t *testing.T) {
	end := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC) // the top of the afternoon
	span := 60 * time.Hour
	r := rand.New(rand.NewPCG(39, 1))
	cyc := func(at time.Time, a float64) float64 {
		h := at.Sub(end).Hours()
		return 1 - a*(0.5-0.5*math.Cos(2*math.Pi*h/24))
	}
	keys := []struct {
		key   string
		level func(days float64) float64
		a     float64
		// reach is the true time to the ceiling after end; 0: none.
		reach time.Duration
	}{
		{"GROW#linear", func(d float64) float64 { return 475 + 150*d }, 0.5, 84 * time.Hour},
		{"GROW#compounding", func(d float64) float64 { return 300 * math.Exp(0.35*d) }, 0.6, time.Duration(math.Log(1000.0/300) / 0.35 * 24 * float64(time.Hour))},
		{"DAILY#flat", func(float64) float64 { return 400 }, 0.8, 0},
	}
	var lines []line
	truePeak := map[string]float64{}
	for at := end.Add(-span); !at.After(end); at = at.Add(time.Minute) {
		for i, k := range keys {
			// A key's minute is one second of four writes.
			sec := at.Add(time.Duration(i) * time.Second)
			units := k.level(sec.Sub(end).Hours()/24) * cyc(sec, k.a) * (1 + 0.02*r.NormFloat64())
			truePeak[k.key] = max(truePeak[k.key], units)
			for range 4 {
				lines = append(lines, line{at: sec, key: k.key, write: true, units: math.Round(units/4*4) / 4})
			}
		}
	}
	rep := analyzeLines(t, lines)
	tr := rep.Tables[0]
	byKey := map[string]report.Forecast{}
	for _, f := range tr.Forecasts {
		byKey[f.Key] = f
	}
	diagnosed := map[string]report.Severity{}
	for _, d := range tr.Diagnoses {
		if d.Cause == report.KindForecast {
			diagnosed[d.Key()] = d.Severity
		}
	}
	for _, k := range keys {
		f, ok := byKey[k.key]
		if !ok {
			t.Errorf("%s: no forecast in %+v", k.key, tr.Forecasts)
			continue
		}
		if want := 1000 / truePeak[k.key]; math.Abs(f.Headroom/want-1) > 0.10 {
			t.Errorf("%s: headroom %.2f, true %.2f", k.key, f.Headroom, want)
		}
		if k.reach == 0 {
			if f.ReachesCeilingAt != nil || diagnosed[k.key] != "" {
				t.Errorf("%s does not grow: reaches the ceiling at %v, forecast diagnosis %q", k.key, f.ReachesCeilingAt, diagnosed[k.key])
			}
			continue
		}
		if f.ReachesCeilingAt == nil {
			t.Errorf("%s: no time to the ceiling (%s), true %s", k.key, f.Note, k.reach)
			continue
		}
		got := f.ReachesCeilingAt.Sub(end)
		if math.Abs(float64(got-k.reach)) > 0.25*float64(k.reach) {
			t.Errorf("%s: reaches the ceiling %s after the end, true %s", k.key, got, k.reach)
		}
		if diagnosed[k.key] != report.SeverityWarning {
			t.Errorf("%s: forecast diagnosis %q, want a warning (%s ahead, within the 7-day horizon; R² %.2f)", k.key, diagnosed[k.key], got, f.Confidence)
		}
		t.Logf("%s: %s after the end (true %s), trend %+.1f/day (%s), R² %.2f", k.key, got.Round(time.Hour), k.reach.Round(time.Hour), *f.TrendPerDay, f.Growth, f.Confidence)
	}
	scaled := map[string]int{}
	for _, s := range tr.Scale {
		scaled[s.Key] = s.Factor
	}
	for _, k := range keys {
		if scaled[k.key] != 10 {
			t.Errorf("%s throttles at 10× today's traffic; the scale view says %v", k.key, scaled)
		}
	}
	if t.Failed() {
		t.Logf("%+v", tr.Forecasts)
	}
}
