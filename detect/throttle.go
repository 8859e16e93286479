package detect

import (
	"cmp"
	"math"
	"slices"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// This file says why a class's calls were throttled: in a key range (a
// partition, because of the keys in it: a key cause, fixed in the key
// design) or for the capacity of the whole table or index (fixed with
// capacity), or both.
//
// A reason in the input (DynamoDB's ThrottlingReasons) says which: its
// limit is the key range (KeyRangeThroughputExceeded) or a capacity of the
// table or index (ProvisionedThroughputExceeded, AccountLimitExceeded,
// MaxOnDemandThroughputExceeded). Without one, how the throttled calls
// spread over the keys tells them apart:
//
//   - a key is throttled in its key range when its calls were refused at a
//     higher rate than the other keys' calls, beyond chance and by a
//     margin, and it carries a part of the throttling: with the other
//     keys' rate p0, a one-sided binomial test of its throttled calls
//     among its calls (the Chernoff bound of the tail, exp(-m·KL(r‖p0)),
//     which holds for small counts as for large) below throttleAlpha over
//     the number of keys tested (Bonferroni), a rate r at least twice p0
//     or ten points above it, and at least keyRangeMinShare of the class's
//     throttled calls (light keys that share its partition are refused
//     with it: they are not causes);
//   - the throttled calls left once those keys' are taken out are the
//     table's capacity when they are many enough (minInferredThrottled) and
//     spread in proportion to the traffic: the busiest keys, which any
//     throttling of the whole table reaches, are throttled at the rate of
//     the rest. A busy key that would expect at least minExpected
//     throttled calls at that rate and had significantly fewer (the lower
//     tail, same test, counting it at the most it may have had) is
//     spared; one whose count is known closely and is not below is
//     reached. When two or more busy keys and a quarter or more of those
//     judged are spared, the throttling sits in some partitions and not
//     others, and no capacity cause is inferred. (A hot key's partition
//     refuses the calls of the keys it holds too: busy neighbours counted
//     closely are seen spared elsewhere; many light ones, counted within
//     loose bounds, are not, and their share is taken for capacity.)
//
// Both may hold at once: a hot key throttled in its partition while the
// whole table is short of capacity is two diagnoses.
const (
	// throttleAlpha is the significance of the tests: the chance that
	// capacity throttling, which refuses every key's calls alike, makes a
	// key look throttled in its key range (over all keys tested), or a busy
	// key look spared.
	throttleAlpha = 1e-3
	// keyRangeMargin is the least rate over the other keys' a key must be
	// throttled at, when it is not twice theirs.
	keyRangeMargin = 0.10
	// keyRangeMinShare is the least share of the class's throttled calls a
	// key throttled in its key range carries.
	keyRangeMinShare = 0.05
	// minInferredThrottled is the fewest throttled calls, without a reason,
	// a capacity cause is inferred from.
	minInferredThrottled = 10
	// minExpected is the fewest throttled calls a busy key must expect at
	// the table's rate for its own rate to be tested.
	minExpected = 5
)

// throttling explains one class's throttled calls.
type throttling struct {
	class traffic.Class
	// calls are the class's calls in the window, successful and throttled;
	// throttled those refused.
	calls, throttled uint64
	// keyRange holds the keys throttled in their key range, with the
	// throttled calls they are known to have had, their calls, and the
	// other keys' throttled rate.
	keyRange map[string]keyRangeThrottle
	// capacity is the capacity cause, nil when there is none.
	capacity *report.Capacity
}

// keyRangeThrottle is the evidence of a key throttled in its key range.
type keyRangeThrottle struct {
	// throttled are its refused calls, calls its calls (served and
	// refused), served its served calls: calls and served are upper
	// bounds when bound (a key the class does not rank).
	throttled, calls, served uint64
	bound                    bool
	others                   float64 // the other keys' throttled rate
	reason                   bool    // a reason said key range; no test was needed
}

// throttling returns the explanation of class c's throttled calls, nil
// when there were none. It is computed once per evaluation.
func (t *table) throttling(c traffic.Class) *throttling {
	if !t.throttleDone[c] {
		t.throttleDone[c] = true
		t.throttles[c] = t.explainThrottling(c)
	}
	return t.throttles[c]
}

// keyRangeThrottled is the throttled calls of key in class c that are its
// key range's: what makes its diagnosis critical. A key throttled along
// with every other key, for the table's capacity, has none.
func (t *table) keyRangeThrottled(c traffic.Class, key string) uint64 {
	if th := t.throttling(c); th != nil {
		return th.keyRange[key].throttled
	}
	return 0
}

// explainThrottling explains class c's throttled calls: the causes their
// reasons name, the keys throttled in their key ranges, and the capacity
// cause of what those leave.
func (t *table) explainThrottling(c traffic.Class) *throttling {
	cs := &t.Classes[c]
	st := &cs.Throttled
	if st.Events == 0 {
		return nil
	}
	th := &throttling{class: c, throttled: st.Events, calls: cs.Events + st.Events, keyRange: map[string]keyRangeThrottle{}}
	// An index the input counts no traffic of, whose throttled calls are
	// its table's writes it held back (a reason naming it), is judged
	// against its table's calls and consumption.
	events, units := cs.Events, cs.Units
	if t.base != nil && cs.Events == 0 {
		bc := &t.base.Classes[c]
		th.calls += bc.Events + bc.Throttled.Events
		events, units = bc.Events, bc.Units
	}
	causes := countCauses(st)
	served := t.servedCalls(c)
	if causes.keyRange+causes.unknown > 0 {
		t.findKeyRanges(th, st, causes, served)
	}
	th.capacity = t.capacityCause(th, causes, served, events, units)
	return th
}

// throttleCauses counts a class's throttled calls by what their reasons
// say: in a key range, for a capacity, or unknown (no reason); and by
// limit, on the table ([l][0]) or on an index ([l][1]).
type throttleCauses struct {
	keyRange, capacity, unknown uint64
	byLimit                     [traffic.NumThrottleLimits][2]uint64
}

// countCauses counts st's throttled calls by cause.
func countCauses(st *sketch.ThrottleStats) throttleCauses {
	var tc throttleCauses
	for cause, n := range st.Causes {
		cause := traffic.ThrottleCause(cause)
		switch cause.Limit() {
		case traffic.LimitKeyRange:
			tc.keyRange += n
		case traffic.LimitUnknown:
			tc.unknown += n
		default:
			tc.capacity += n
		}
		idx := 0
		if cause.Index() {
			idx = 1
		}
		tc.byLimit[cause.Limit()][idx] += n
	}
	return tc
}

// servedCalls is what is known of the keys' served calls in class c: the
// ranked keys' calls, and the most calls a key the class does not rank
// may have had (unranked: the least of those it ranks, when it ranks
// fewer keys than there are; 0 when it ranks them all).
type servedCalls struct {
	keys     map[string]uint64
	unranked uint64
}

// of is key's served calls, and whether that is only an upper bound (the
// key is not ranked, and some keys are not).
func (s servedCalls) of(key string) (calls uint64, bound bool) {
	if ev, ok := s.keys[key]; ok {
		return ev, false
	}
	return s.unranked, s.unranked > 0
}

func (t *table) servedCalls(c traffic.Class) servedCalls {
	s := servedCalls{keys: map[string]uint64{}}
	top := t.ranked(c)
	for i := range top {
		s.keys[top[i].Key] = top[i].Events
	}
	if len(top) > 0 && uint64(len(top)) < t.DistinctKeys {
		s.unranked = math.MaxUint64
		for i := range top {
			s.unranked = min(s.unranked, top[i].Events)
		}
	}
	return s
}

// findKeyRanges fills th.keyRange with the keys throttled beyond their
// share of the calls (the binomial test at the top of the file), or, when
// a reason says key range and no key stands out, with the most throttled
// key known above every other.
func (t *table) findKeyRanges(th *throttling, st *sketch.ThrottleStats, causes throttleCauses, served servedCalls) {
	tested := float64(len(st.Keys))
	for _, k := range st.Keys {
		ev, bound := served.of(k.Key)
		m := float64(ev + k.Max)
		tk := float64(k.Count)
		restC := float64(th.calls) - m
		p0 := 0.0
		if restC > 0 {
			p0 = min(max((float64(th.throttled)-tk)/restC, 0), 1)
		}
		r := tk / m
		if !(r > p0) || !(r >= 2*p0 || r-p0 >= keyRangeMargin) || tk < keyRangeMinShare*float64(th.throttled) {
			continue
		}
		if -m*kl(r, p0) <= math.Log(throttleAlpha/tested) {
			th.keyRange[k.Key] = keyRangeThrottle{throttled: k.Count, calls: uint64(m), served: ev, bound: bound, others: p0}
		}
	}
	if causes.keyRange > 0 && len(th.keyRange) == 0 && len(st.Keys) > 0 && st.Keys[0].Count > st.Error {
		k := st.Keys[0]
		ev, bound := served.of(k.Key)
		th.keyRange[k.Key] = keyRangeThrottle{throttled: k.Count, calls: ev + k.Max, served: ev, bound: bound, reason: true}
	}
}

// capacityCause is the capacity cause of the throttled calls the key
// ranges leave: those whose reasons name a capacity, and of those without
// a reason the part that spreads over the keys as a capacity's would
// (proportional). Nil when none is.
func (t *table) capacityCause(th *throttling, causes throttleCauses, served servedCalls, events uint64, units float64) *report.Capacity {
	var onKeys, keyCalls uint64
	for _, kr := range th.keyRange {
		onKeys += kr.throttled
		keyCalls += kr.calls
	}
	restT := th.throttled - min(onKeys, th.throttled)
	restC := th.calls - min(keyCalls, th.calls)
	inferred := 0.0
	if causes.unknown > 0 && restT > 0 {
		inferred = float64(causes.unknown) * float64(restT) / float64(th.throttled)
		if inferred < minInferredThrottled || !t.proportional(th.class, th, restT, restC, served.keys) {
			inferred = 0
		}
	}
	attributed := causes.capacity + uint64(math.Round(inferred))
	if attributed == 0 {
		return nil
	}
	limit, index := t.capacityLimitOf(causes)
	// The share is of the calls outside the keys throttled in their key
	// range: the rate at which the capacity refuses any call.
	cp := &report.Capacity{
		Limit: limit, Resource: "table", Inferred: causes.capacity == 0,
		Calls: restC, Throttled: attributed, ThrottledShare: min(float64(attributed)/float64(max(restC, 1)), 1),
		UnitsPerSecond: t.rate(units),
	}
	if index {
		cp.Resource = "index"
	}
	if events > 0 {
		cp.DemandUnitsPerSecond = cp.UnitsPerSecond * float64(th.calls) / float64(events)
	} else {
		cp.DemandUnitsPerSecond = t.rate(float64(th.calls))
	}
	cp.Reasons = t.capacityReasons(th.class)
	return cp
}

// capacityLimitOf is the capacity limit the reasons name most often
// (unknown without one), and whether it is an index's.
func (t *table) capacityLimitOf(causes throttleCauses) (report.CapacityLimit, bool) {
	index := t.Index != ""
	if causes.capacity == 0 {
		u := causes.byLimit[traffic.LimitUnknown]
		return report.LimitUnknown, index || u[1] > u[0]
	}
	best := traffic.LimitProvisioned
	for l := traffic.LimitProvisioned; l < traffic.NumThrottleLimits; l++ {
		if l.Capacity() && causes.byLimit[l][0]+causes.byLimit[l][1] > causes.byLimit[best][0]+causes.byLimit[best][1] {
			best = l
		}
	}
	return capacityLimit(best), index || causes.byLimit[best][1] > causes.byLimit[best][0]
}

// capacityReasons counts class c's throttled calls by the capacity reason
// they gave, most first.
func (t *table) capacityReasons(c traffic.Class) []report.ReasonCount {
	var rs []report.ReasonCount
	for cause, n := range t.Classes[c].Throttled.Causes {
		tc := traffic.ThrottleCause(cause)
		if n > 0 && tc.Limit().Capacity() {
			r := traffic.MakeThrottleReason(tc.Index(), c, tc.Limit())
			rs = append(rs, report.ReasonCount{Reason: r.String(), Calls: n})
		}
	}
	slices.SortFunc(rs, func(a, b report.ReasonCount) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Reason, b.Reason))
	})
	return rs
}

// proportional reports whether the throttled calls left once the key
// ranges' are taken out (restT of restC calls) reach the busiest keys as
// they would if the table's capacity refused calls whatever their key
// (see the top of the file: spared and reached keys).
func (t *table) proportional(c traffic.Class, th *throttling, restT, restC uint64, events map[string]uint64) bool {
	if restC == 0 {
		return false
	}
	p := float64(restT) / float64(restC)
	st := &t.Classes[c].Throttled
	listed := make(map[string]sketch.KeyCount, len(st.Keys))
	for _, k := range st.Keys {
		listed[k.Key] = k
	}
	below := func(tk, m float64) bool { return tk < m*p && -m*kl(tk/m, p) <= math.Log(throttleAlpha) }
	var spared, reached int
	for key, ev := range events {
		if _, ok := th.keyRange[key]; ok {
			continue
		}
		k, ok := listed[key]
		if !ok {
			k = sketch.KeyCount{Max: st.Error}
		}
		m := float64(ev + k.Max)
		if m*p < minExpected {
			continue
		}
		switch {
		case below(float64(k.Max), m):
			spared++
		case k.Count > 0 && 4*(k.Max-k.Count) <= k.Count && !below(float64(k.Count), m):
			reached++
		}
	}
	return !(spared >= 2 && 4*spared >= spared+reached)
}

// kl is the Kullback-Leibler divergence of a Bernoulli of rate a from one
// of rate p, in nats: exp(-m·kl(a, p)) bounds the chance that m calls each
// refused with probability p see a fraction a or further from p refused
// (Chernoff-Hoeffding).
func kl(a, p float64) float64 {
	term := func(x, y float64) float64 {
		switch {
		case x == 0:
			return 0
		case y == 0:
			return math.Inf(1)
		}
		return x * math.Log(x/y)
	}
	return term(a, p) + term(1-a, 1-p)
}
