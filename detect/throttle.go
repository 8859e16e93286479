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
	throttled, calls uint64
	others           float64 // the other keys' throttled rate
	reason           bool    // a reason said key range; no test was needed
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
	var keyRange, unknown, capacity uint64
	var byLimit [traffic.NumThrottleLimits][2]uint64 // [limit][index]
	for cause, n := range st.Causes {
		tc := traffic.ThrottleCause(cause)
		switch l := tc.Limit(); l {
		case traffic.LimitKeyRange:
			keyRange += n
		case traffic.LimitUnknown:
			unknown += n
		default:
			capacity += n
		}
		idx := 0
		if tc.Index() {
			idx = 1
		}
		byLimit[tc.Limit()][idx] += n
	}

	// The keys throttled beyond their share of the calls.
	keyEvents := map[string]uint64{}
	top := t.ranked(c)
	for i := range top {
		keyEvents[top[i].Key] = top[i].Events
	}
	// A key the class does not rank had at most the calls of the least
	// of those it ranks, when it ranks fewer keys than there are.
	var unranked uint64
	if len(top) > 0 && uint64(len(top)) < t.DistinctKeys {
		unranked = math.MaxUint64
		for i := range top {
			unranked = min(unranked, top[i].Events)
		}
	}
	if keyRange+unknown > 0 {
		tested := float64(len(st.Keys))
		for _, k := range st.Keys {
			ev, ok := keyEvents[k.Key]
			if !ok {
				ev = unranked
			}
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
				th.keyRange[k.Key] = keyRangeThrottle{throttled: k.Count, calls: uint64(m), others: p0}
			}
		}
		// A reason says key range, and no key stands out: the most
		// throttled key known above every other carries it.
		if keyRange > 0 && len(th.keyRange) == 0 && len(st.Keys) > 0 && st.Keys[0].Count > st.Error {
			k := st.Keys[0]
			ev, ok := keyEvents[k.Key]
			if !ok {
				ev = unranked
			}
			th.keyRange[k.Key] = keyRangeThrottle{throttled: k.Count, calls: ev + k.Max, reason: true}
		}
	}

	// What the key ranges leave to the capacity.
	var onKeys, keyCalls uint64
	for _, kr := range th.keyRange {
		onKeys += kr.throttled
		keyCalls += kr.calls
	}
	restT := th.throttled - min(onKeys, th.throttled)
	restC := th.calls - min(keyCalls, th.calls)
	inferred := 0.0
	if unknown > 0 && restT > 0 {
		inferred = float64(unknown) * float64(restT) / float64(th.throttled)
		if inferred < minInferredThrottled || !t.proportional(c, th, restT, restC, keyEvents) {
			inferred = 0
		}
	}
	attributed := capacity + uint64(math.Round(inferred))
	if attributed == 0 {
		return th
	}
	limit, index := report.LimitUnknown, t.Index != ""
	if capacity > 0 {
		best := traffic.LimitProvisioned
		for l := traffic.LimitProvisioned; l < traffic.NumThrottleLimits; l++ {
			if l.Capacity() && byLimit[l][0]+byLimit[l][1] > byLimit[best][0]+byLimit[best][1] {
				best = l
			}
		}
		limit = capacityLimit(best)
		index = index || byLimit[best][1] > byLimit[best][0]
	} else {
		index = index || byLimit[traffic.LimitUnknown][1] > byLimit[traffic.LimitUnknown][0]
	}
	// The share is of the calls outside the keys throttled in their key
	// range: the rate at which the capacity refuses any call.
	cp := &report.Capacity{
		Limit: limit, Resource: "table", Inferred: capacity == 0,
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
	for cause, n := range st.Causes {
		tc := traffic.ThrottleCause(cause)
		if n > 0 && tc.Limit().Capacity() {
			r := traffic.MakeThrottleReason(tc.Index(), c, tc.Limit())
			cp.Reasons = append(cp.Reasons, report.ReasonCount{Reason: r.String(), Calls: n})
		}
	}
	slices.SortFunc(cp.Reasons, func(a, b report.ReasonCount) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Reason, b.Reason))
	})
	th.capacity = cp
	return th
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

// capacityLimit names a capacity limit as the report does.
func capacityLimit(l traffic.ThrottleLimit) report.CapacityLimit {
	switch l {
	case traffic.LimitProvisioned:
		return report.LimitProvisioned
	case traffic.LimitAccount:
		return report.LimitAccount
	case traffic.LimitOnDemandMax:
		return report.LimitOnDemandMax
	}
	return report.LimitUnknown
}

// capacitySeverity judges a capacity diagnosis on the share of the class's
// calls it throttles.
func (t *table) capacitySeverity(share float64) report.Severity {
	switch {
	case share >= t.s.CapacityCriticalShare:
		return report.SeverityCritical
	case share >= t.s.CapacityWarnShare:
		return report.SeverityWarning
	}
	return report.SeverityInfo
}

// capacityFinding is the capacity finding of class c, if its throttled
// calls have a capacity cause.
func (t *table) capacityFinding(c traffic.Class) (report.Finding, bool) {
	th := t.throttling(c)
	if th == nil || th.capacity == nil {
		return report.Finding{}, false
	}
	cp := th.capacity
	return report.Finding{
		Kind: report.KindCapacity, Class: c.String(), Severity: t.capacitySeverity(cp.ThrottledShare),
		Share: cp.ThrottledShare, UnitsPerSecond: cp.UnitsPerSecond, PeakUnitsPerSecond: t.classPeak(c),
		Evidence: &report.Evidence{
			Summary:            t.capacityEvidence(c, cp),
			WindowSeconds:      t.seconds,
			ClassUnits:         t.Classes[c].Units,
			PeakUnitsPerSecond: t.classPeak(c),
			Throttled:          cp.Throttled,
		},
	}, true
}

// keyRangeFindings adds a partition_limit finding for each key throttled
// in its key range that no rule found hot: a key refused at its
// partition's ceiling is at the limit, whatever its share or the units the
// input gives it (CloudTrail counts one per item).
func (t *table) keyRangeFindings(c traffic.Class, fs []report.Finding) []report.Finding {
	th := t.throttling(c)
	if th == nil || len(th.keyRange) == 0 {
		return fs
	}
	keys := make([]string, 0, len(th.keyRange))
	for key := range th.keyRange {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if slices.ContainsFunc(fs, func(f report.Finding) bool { return f.Key == key && f.Class == c.String() }) {
			continue
		}
		k := t.keyStat(c, key)
		var share, rate, peak, units float64
		var sortKeys uint64
		if k != nil {
			share, rate, peak, units, sortKeys = t.share(c, k), t.rate(k.Units), t.keyPeak(k), k.Units, k.SortKeys
		}
		kr := th.keyRange[key]
		fs = append(fs, report.Finding{
			Kind: report.KindPartitionLimit, Key: key, Class: c.String(), Severity: report.SeverityCritical,
			Share: share, UnitsPerSecond: rate, PeakUnitsPerSecond: peak,
			Evidence: &report.Evidence{
				Summary:            t.keyRangeEvidence(c, quoteKey(key), kr) + ".",
				WindowSeconds:      t.seconds,
				Units:              units,
				ClassUnits:         t.Classes[c].Units,
				Limit:              t.limit(c),
				SortKeys:           sortKeys,
				PeakUnitsPerSecond: peak,
				Throttled:          kr.throttled,
				KeyRangeThrottled:  kr.throttled,
			},
		})
	}
	return fs
}

// keyRangeEvidence says why a key's throttling is its key range's, of
// the key named by subject (empty: the sentence's subject already).
func (t *table) keyRangeEvidence(c traffic.Class, subject string, kr keyRangeThrottle) string {
	if subject != "" {
		subject += " is "
	}
	if kr.reason {
		return subject + "throttled in its key range, as the throttling reasons say (KeyRangeThroughputExceeded): " +
			count(kr.throttled) + " of its " + c.String() + "s refused"
	}
	return subject + "throttled in its key range: " + count(kr.throttled) + " of its " + count(kr.calls) + " " + c.String() +
		"s refused (" + pct(float64(kr.throttled)/float64(max(kr.calls, 1))) + "), against " + pct(kr.others) + " of the other keys'"
}

// capacityEvidence says why the class's throttling is the capacity's.
func (t *table) capacityEvidence(c traffic.Class, cp *report.Capacity) string {
	s := count(cp.Throttled) + " of the " + t.noun() + "'s " + count(cp.Calls) + " " + c.String() + "s were refused (" + pct(cp.ThrottledShare) + ")"
	if !cp.Inferred {
		return s + ", for its capacity as the throttling reasons say (" + reasonNames(cp.Reasons) + ")."
	}
	return s + ", spread over its keys in proportion to their traffic, with no key throttled beyond its share: no throttling reason in the input, the cause is inferred."
}

func reasonNames(rs []report.ReasonCount) string {
	var s string
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += r.Reason + " " + count(r.Calls)
	}
	return s
}

// keyRangeOf is the throttled calls of keys in class c that are their key
// ranges'.
func (t *table) keyRangeOf(c traffic.Class, keys []string) uint64 {
	var n uint64
	for _, k := range keys {
		n += t.keyRangeThrottled(c, k)
	}
	return n
}

// heldCapacitySeverity is the severity a flagged capacity diagnosis keeps
// in live mode: it falls only once its share is below four fifths of the
// share it rose at, so a share hovering at a boundary does not flap.
func (t *table) heldCapacitySeverity(was report.Severity, share float64) report.Severity {
	now := t.capacitySeverity(share)
	switch {
	case now.Rank() <= was.Rank():
		return now
	case was == report.SeverityCritical && share >= 0.8*t.s.CapacityCriticalShare:
		return report.SeverityCritical
	case was.Rank() <= report.SeverityWarning.Rank() && share >= 0.8*t.s.CapacityWarnShare:
		return report.SeverityWarning
	}
	return now
}
