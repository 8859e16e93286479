package forecast

import (
	"math"
	"strconv"
	"time"
)

// series is a key's points ready to fit: each point's time in days before
// the end (t ≤ 0), its units, and its like-hour group (the hour of the
// day, or of the week once the series spans WeeklySpan).
type series struct {
	t, y   []float64
	group  []int
	groups int
	// used counts the groups that have points.
	used int
	span float64 // days
	// syy is the variance of y about its groups' means (times n): what a
	// growth can explain. It is 0 when that is only the rounding of a
	// series that repeats its cycle exactly (under exactRepeat of Σy²):
	// no growth then, where the ratio of two rounding errors would read
	// as any R².
	syy float64
}

// exactRepeat is the share of a series' Σy² under which its variance
// about its like-hour means is taken for floating-point rounding: far
// below any measured variation (a hundredth of a unit in a thousand is
// 1e-10 of it), far above the rounding of float64 sums (1e-16 a term).
const exactRepeat = 1e-12

func newSeries(pts []Point, end time.Time, span time.Duration) *series {
	period := int64(24)
	if span >= WeeklySpan {
		period = 7 * 24
	}
	s := &series{groups: int(period), span: span.Hours() / 24}
	s.t = make([]float64, len(pts))
	s.y = make([]float64, len(pts))
	s.group = make([]int, len(pts))
	sum := make([]float64, period)
	n := make([]float64, period)
	for i, p := range pts {
		s.t[i] = p.Time.Sub(end).Hours() / 24
		s.y[i] = p.Units
		h := p.Time.Unix() / 3600 % period
		if h < 0 {
			h += period
		}
		s.group[i] = int(h)
		sum[h] += p.Units
		n[h]++
	}
	for _, c := range n {
		if c > 0 {
			s.used++
		}
	}
	var yy float64
	for i, y := range s.y {
		m := sum[s.group[i]] / n[s.group[i]]
		s.syy += (y - m) * (y - m)
		yy += y * y
	}
	if s.syy <= exactRepeat*yy {
		s.syy = 0
	}
	return s
}

// fit is one growth fitted to a series.
type fit struct {
	model Model
	// beta is the growth: linear, the fraction of the end's level gained a
	// day; compounding, the log of the daily factor.
	beta float64
	// peak is the highest like-hour level at the end.
	peak float64
	ssr  float64
	r2   float64
}

// growth returns a model's factor at t days from the end (1 at the end).
func growth(m Model, beta, t float64) float64 {
	if m == Compounding {
		return math.Exp(beta * t)
	}
	return 1 + beta*t
}

// ssr returns the residual sum of squares of model m at growth beta with
// each group's level at its best (least squares: Σyu / Σu²), and the
// highest level.
func (s *series) ssr(m Model, beta float64) (float64, float64) {
	num := make([]float64, s.groups)
	den := make([]float64, s.groups)
	var yy float64
	for i, y := range s.y {
		u := growth(m, beta, s.t[i])
		num[s.group[i]] += y * u
		den[s.group[i]] += u * u
		yy += y * y
	}
	var peak float64
	for g := range num {
		if den[g] > 0 {
			yy -= num[g] * num[g] / den[g]
			peak = max(peak, num[g]/den[g])
		}
	}
	return max(yy, 0), peak
}

// fitModel finds the growth of model m with the least residual: a grid
// over the plausible growths, then a golden-section search around the
// best of the grid.
func (s *series) fitModel(m Model) fit {
	// A linear level stays positive over the series: beta < 1/span.
	lo, hi := -4/s.span, 0.999/s.span
	if m == Compounding {
		lo, hi = -3, 3 // e^±3: ×20 a day
	}
	const grid = 120
	cost := func(b float64) float64 { r, _ := s.ssr(m, b); return r }
	best, bestCost := lo, math.Inf(1)
	stepW := (hi - lo) / grid
	for i := 0; i <= grid; i++ {
		b := lo + float64(i)*stepW
		if c := cost(b); c < bestCost {
			best, bestCost = b, c
		}
	}
	a, b := max(lo, best-stepW), min(hi, best+stepW)
	const phi = 0.6180339887498949
	x1, x2 := b-phi*(b-a), a+phi*(b-a)
	c1, c2 := cost(x1), cost(x2)
	for range 60 {
		if c1 < c2 {
			b, x2, c2 = x2, x1, c1
			x1 = b - phi*(b-a)
			c1 = cost(x1)
		} else {
			a, x1, c1 = x1, x2, c2
			x2 = a + phi*(b-a)
			c2 = cost(x2)
		}
	}
	if c1 < bestCost {
		best = x1
	}
	if c2 < bestCost && c2 < c1 {
		best = x2
	}
	f := fit{model: m, beta: best}
	f.ssr, f.peak = s.ssr(m, best)
	if s.syy > 0 {
		f.r2 = max(0, 1-f.ssr/s.syy)
	}
	return f
}

// best fits both growths and returns the closer, with the other's weight:
// each is weighed by its likelihood (Gaussian residuals, their variance
// profiled out: SSR^(-n/2)), so that where the series cannot tell a line
// from a compounding curve (little curvature over its span) the time to
// the ceiling is taken between the two rather than from either alone.
func (s *series) best() (fit, fit, float64) {
	lin, comp := s.fitModel(Linear), s.fitModel(Compounding)
	// The residuals' degrees of freedom: the points but one level per
	// like-hour group and the growth.
	n := float64(len(s.y) - s.used - 1)
	// w is comp's weight: 1 / (1 + (SSRc/SSRl)^(n/2)).
	w := 0.5
	if lin.ssr > 0 && comp.ssr > 0 {
		w = 1 / (1 + math.Exp(n/2*(math.Log(comp.ssr)-math.Log(lin.ssr))))
	} else if comp.ssr < lin.ssr {
		w = 1
	} else if lin.ssr < comp.ssr {
		w = 0
	}
	if w > 0.5 {
		return comp, lin, 1 - w
	}
	return lin, comp, w
}

// stepBeatsTrend reports whether one change of level at some time
// explains more of the series (in logs, about the like-hour means) than a
// steady trend: a launch or a migration rather than growth.
func (s *series) stepBeatsTrend() bool {
	n := len(s.y)
	z := make([]float64, n)
	zsum := make([]float64, s.groups)
	tsum := make([]float64, s.groups)
	cnt := make([]float64, s.groups)
	for i, y := range s.y {
		z[i] = math.Log(y)
		zsum[s.group[i]] += z[i]
		tsum[s.group[i]] += s.t[i]
		cnt[s.group[i]]++
	}
	var stz, stt float64
	for i := range z {
		g := s.group[i]
		z[i] -= zsum[g] / cnt[g]
		tc := s.t[i] - tsum[g]/cnt[g]
		stz += tc * z[i]
		stt += tc * tc
	}
	if stt == 0 {
		return false
	}
	trend := stz * stz / stt
	// A step at point k: x = 1 from k on. Within groups, Sxz is the sum of
	// the centred logs from k on and Sxx = Σ m(c-m)/c, m of a group's c
	// points from k on: both kept as k moves back.
	after := make([]float64, s.groups)
	var sxz, sxx, most float64
	for k := n - 1; k > 0; k-- {
		g := s.group[k]
		c, m := cnt[g], after[g]
		sxx += ((m+1)*(c-m-1) - m*(c-m)) / c
		after[g]++
		sxz += z[k]
		if sxx > 1e-12 {
			most = max(most, sxz*sxz/sxx)
		}
	}
	return most > trend
}

// trend returns the units per second the fitted busiest second gains a
// day at the end, and the fraction it grows by a day.
func (f fit) trend() (perDay, growthPerDay float64) {
	if f.model == Compounding {
		return f.peak * f.beta, math.Expm1(f.beta)
	}
	return f.peak * f.beta, f.beta
}

// reaches returns when the fitted busiest second reaches ceiling, or the
// zero time and why not.
func (f fit) reaches(ceiling float64, end time.Time, span time.Duration) (time.Time, string) {
	switch {
	case ceiling <= 0 || f.peak <= 0:
		return time.Time{}, "no ceiling to reach"
	case f.peak >= ceiling:
		return end, "at the ceiling already"
	case f.beta <= 0:
		return time.Time{}, "it does not grow"
	}
	var d float64 // days
	if f.model == Compounding {
		d = math.Log(ceiling/f.peak) / f.beta
	} else {
		d = (ceiling/f.peak - 1) / f.beta
	}
	ahead := time.Duration(d * 24 * float64(time.Hour))
	if d*24*float64(time.Hour) > MaxAhead*float64(span) {
		return time.Time{}, "its trend reaches the ceiling only past " + strconv.Itoa(MaxAhead) + " times the series' span, further than the series can tell"
	}
	return end.Add(ahead), ""
}

// days writes a duration in days.
func days(d time.Duration) string {
	return strconv.FormatFloat(d.Hours()/24, 'g', 3, 64) + " days"
}

// fmt2 writes f with two decimals.
func fmt2(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }
