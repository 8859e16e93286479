package detect

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// throttleMix generates a window of one table's traffic of one class in
// which every call is refused at random: with probability capacity for any
// key (the table short of capacity), and, for the hot key, with
// probability hot on top (its partition at its ceiling); co keys share the
// hot key's partition and are refused at its rate too.
type throttleMix struct {
	class      traffic.Class
	keys       int     // keys besides the tenant and the hot key
	callsPerS  float64 // calls a second over the keys
	seconds    int
	tenant     float64 // share of the calls on one tenant key (0: none)
	capacity   float64 // every call's chance to be refused for capacity
	hotShare   float64 // share of the calls on the hot key (0: none)
	hot        float64 // the hot key's extra chance of refusal
	co         int     // keys in the hot key's partition, refused at its rate
	withReason bool    // the calls carry their reason
	// exact counts every throttled key, as analyze does once it counted
	// them again; otherwise the daemon's 64 a class.
	exact bool
}

func (m throttleMix) snapshot(t *testing.T, seed uint64) sketch.Snapshot {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 77))
	cfg := sketch.Config{Window: 0}
	if m.exact {
		cfg.MaxThrottledKeys = 1 << 14
	}
	st, err := sketch.NewStore(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	n := int(m.callsPerS * float64(m.seconds))
	batch := make([]traffic.Event, 0, 4096)
	for i := range n {
		idx := rng.IntN(m.keys)
		key, hot := fmt.Sprintf("USER#%d", idx), false
		switch r := rng.Float64(); {
		case r < m.hotShare:
			key, hot, idx = "HOT#key", true, m.keys
		case r < m.hotShare+m.tenant:
			key, idx = "TENANT#acme", m.keys
		}
		co := idx < m.co // the first co keys share the hot key's partition
		e := traffic.Event{Table: "t", PK: key, Class: m.class, Units: 1, Source: "test",
			Time: start.Add(time.Duration(i) * time.Duration(m.seconds) * time.Second / time.Duration(n))}
		switch {
		case (hot || co) && rng.Float64() < m.hot:
			e.Throttled = true
			if m.withReason {
				e.ThrottleReason = traffic.MakeThrottleReason(false, m.class, traffic.LimitKeyRange)
			}
		case rng.Float64() < m.capacity:
			e.Throttled = true
			if m.withReason {
				e.ThrottleReason = traffic.MakeThrottleReason(false, m.class, traffic.LimitProvisioned)
			}
		}
		batch = append(batch, e)
		if len(batch) == cap(batch) {
			if err := st.Put(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			batch = make([]traffic.Event, 0, 4096)
		}
	}
	if err := st.Put(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	return st.Snapshot()
}

// TestThrottlingCauses judges mixes the scenarios do not hold, over rates,
// key counts, throttled fractions, both classes, with and without reasons:
// a table short of capacity gets one capacity diagnosis and pages no key
// that is far from a ceiling; a key throttled in its key range is critical
// and, alone, brings no capacity diagnosis; both at once are two.
func TestThrottlingCauses(t *testing.T) {
	type want struct {
		capacity report.Severity // "" for none
		hotKey   bool            // HOT#key critical
	}
	cases := []struct {
		name string
		mix  throttleMix
		want want
	}{
		{"capacity, a third refused, 5000 keys and a tenant", throttleMix{class: traffic.Write, keys: 5000, callsPerS: 400, seconds: 120, tenant: 0.12, capacity: 1.0 / 3},
			want{capacity: report.SeverityCritical}},
		{"capacity, 2 % refused, 500 keys", throttleMix{class: traffic.Write, keys: 500, callsPerS: 200, seconds: 60, capacity: 0.02},
			want{capacity: report.SeverityWarning}},
		{"capacity, 60 % refused, 50 keys, reads", throttleMix{class: traffic.Read, keys: 50, callsPerS: 1000, seconds: 30, capacity: 0.6},
			want{capacity: report.SeverityCritical}},
		{"capacity, 8 % refused, 20 000 keys and a big tenant, slow", throttleMix{class: traffic.Write, keys: 20000, callsPerS: 50, seconds: 300, tenant: 0.3, capacity: 0.08},
			want{capacity: report.SeverityCritical}},
		{"capacity with reasons", throttleMix{class: traffic.Read, keys: 3000, callsPerS: 300, seconds: 60, tenant: 0.2, capacity: 0.1, withReason: true},
			want{capacity: report.SeverityCritical}},
		{"key range, half the hot key's calls refused", throttleMix{class: traffic.Write, keys: 2000, callsPerS: 400, seconds: 60, hotShare: 0.15, hot: 0.5},
			want{hotKey: true}},
		{"key range, 2 % of the hot key's calls, reads", throttleMix{class: traffic.Read, keys: 300, callsPerS: 800, seconds: 60, hotShare: 0.3, hot: 0.02},
			want{hotKey: true}},
		{"key range with its partition's keys, counted exactly", throttleMix{class: traffic.Write, keys: 400, callsPerS: 600, seconds: 60, hotShare: 0.2, hot: 0.4, co: 100, exact: true},
			want{hotKey: true}},
		{"both: hot key and capacity over a long tail", throttleMix{class: traffic.Write, keys: 5000, callsPerS: 400, seconds: 120, capacity: 1.0 / 3, hotShare: 0.1, hot: 0.5},
			want{capacity: report.SeverityCritical, hotKey: true}},
		{"key range with reasons", throttleMix{class: traffic.Write, keys: 1000, callsPerS: 300, seconds: 60, hotShare: 0.1, hot: 0.3, withReason: true},
			want{hotKey: true}},
		{"both: hot key and capacity", throttleMix{class: traffic.Write, keys: 3000, callsPerS: 500, seconds: 60, tenant: 0.1, capacity: 0.1, hotShare: 0.2, hot: 0.5},
			want{capacity: report.SeverityCritical, hotKey: true}},
		{"both, reads, with reasons", throttleMix{class: traffic.Read, keys: 800, callsPerS: 500, seconds: 60, capacity: 0.03, hotShare: 0.25, hot: 0.3, withReason: true},
			want{capacity: report.SeverityWarning, hotKey: true}},
		{"nothing throttled", throttleMix{class: traffic.Write, keys: 1000, callsPerS: 300, seconds: 60, tenant: 0.15},
			want{}},
	}
	s := DefaultSettings()
	for _, tc := range cases {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/%d", tc.name, seed), func(t *testing.T) {
				rep := Evaluate(tc.mix.snapshot(t, seed), s)
				tr := rep.Tables[0]
				var capacity report.Severity
				hot := false
				for _, d := range tr.Diagnoses {
					switch {
					case d.Cause == report.KindCapacity:
						if capacity != "" {
							t.Errorf("two capacity diagnoses of one class: %+v", tr.Diagnoses)
						}
						capacity = d.Severity
						if d.Fix.Kind != report.AdviceCapacity || d.Capacity == nil {
							t.Errorf("capacity diagnosis without its capacity fix: %+v", d)
						}
						if want := report.LimitProvisioned; tc.mix.withReason && d.Capacity.Limit != want || !tc.mix.withReason && d.Capacity.Limit != report.LimitUnknown {
							t.Errorf("limit %s (reasons %v)", d.Capacity.Limit, tc.mix.withReason)
						}
					case d.Key() == "HOT#key":
						hot = d.Severity == report.SeverityCritical && d.Fix.Kind != report.AdviceCapacity
					case d.Severity.Pages() && d.PeakUnitsPerSecond < s.WarnFraction*d.Limit:
						t.Errorf("a key far from any ceiling paged: %s %s at %v/s: %s", d.Cause, d.Key(), d.PeakUnitsPerSecond, d.Summary)
					}
				}
				if capacity != tc.want.capacity || hot != tc.want.hotKey {
					var got []string
					for _, d := range tr.Diagnoses {
						got = append(got, fmt.Sprintf("%s %s %v: %s", d.Cause, d.Severity, d.Keys, d.Summary))
					}
					t.Errorf("capacity %q hot key critical %v, want %q and %v; diagnoses:\n%q", capacity, hot, tc.want.capacity, tc.want.hotKey, got)
				}
			})
		}
	}
}
