package demo

import (
	"math"
	"testing"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestRatesMatchTheWorkload: every rate Rates gives (units, events and
// refused calls per second, and each key's units) is the workload's own
// over the test window within 3 % (or the noise of a
// random draw), and every table, index and class the
// workload writes has its rate.
func TestRatesMatchTheWorkload(t *testing.T) {
	type id struct {
		table, index string
		class        traffic.Class
	}
	type counted struct{ units, events, throttled float64 }
	got := map[id]*counted{}
	keys := map[id]map[string]float64{}
	for _, e := range window() {
		k := id{e.Table, e.Index, e.Class}
		if got[k] == nil {
			got[k], keys[k] = &counted{}, map[string]float64{}
		}
		if e.Throttled {
			got[k].throttled++
			continue
		}
		got[k].units += e.Units
		got[k].events++
		keys[k][e.PK] += e.Units
	}
	// near allows 3 %, or four standard deviations of a count of n events
	// drawn at random.
	near := func(what string, want, have, n float64) {
		t.Helper()
		if math.Abs(have-want) > math.Max(0.03, 4/math.Sqrt(math.Max(n, 1)))*math.Max(want, 1) {
			t.Errorf("%s: Rates says %.2f/s, the workload makes %.2f/s", what, want, have)
		}
	}
	rates := Rates(t0)
	for _, r := range rates {
		k := id{r.Table, r.Index, r.Class}
		c := got[k]
		if c == nil {
			t.Errorf("%+v: the workload makes no such traffic", k)
			continue
		}
		name := r.Table + "/" + r.Index + " " + r.Class.String()
		near(name+" units", r.Units, c.units/testSeconds, r.Events*testSeconds)
		near(name+" events", r.Events, c.events/testSeconds, r.Events*testSeconds)
		near(name+" refused", r.Throttled, c.throttled/testSeconds, r.Throttled*testSeconds)
		for _, kr := range r.Keys {
			near(name+" "+kr.Key, kr.Units, keys[k][kr.Key]/testSeconds, kr.Units/r.Units*r.Events*testSeconds)
		}
		delete(got, k)
	}
	for k := range got {
		t.Errorf("%+v: the workload makes it, Rates has no rate for it", k)
	}
}
