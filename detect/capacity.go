package detect

import (
	"fmt"
	"math"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// This file is the rule of a class throttled for the capacity of its table
// or index (capacity; throttle.go tells it from a key range's throttling),
// its severity, and what the diagnosis says and how to fix it: with
// capacity, each limit its own way, as DynamoDB's throttling resolution
// guide does for ProvisionedThroughputExceeded, AccountLimitExceeded and
// MaxOnDemandThroughputExceeded. Sharding a key changes nothing here: the
// calls of every key are refused alike.

// capacitySummary says in one sentence what is short and how urgent it is.
func (t *table) capacitySummary(c traffic.Class, cp *report.Capacity, sev report.Severity) string {
	what := fmt.Sprintf("The %s's %ss are throttled for %s: %s of %s %ss refused (%s)",
		t.noun(), c, t.capacityNoun(cp), count(cp.Throttled), count(cp.Calls), c, pct(cp.ThrottledShare))
	if cp.Inferred {
		what += ", spread over its keys in proportion to their traffic with no key beyond its share (no throttling reason in the input: inferred)"
	} else {
		what += " (" + reasonNames(cp.Reasons) + ")"
	}
	what += fmt.Sprintf("; it consumes %s %s/s and would need about %s %s/s",
		num(cp.UnitsPerSecond), unitName(c), num(cp.DemandUnitsPerSecond), unitName(c))
	switch sev {
	case report.SeverityCritical:
		return what + fmt.Sprintf(": critical, %s of the calls or more refused.", pct(t.s.CapacityCriticalShare))
	case report.SeverityWarning:
		return what + fmt.Sprintf(": warning, %s of the calls or more refused.", pct(t.s.CapacityWarnShare))
	}
	return what + fmt.Sprintf(": info, below the %s of calls refused that warns.", pct(t.s.CapacityWarnShare))
}

// capacityNoun names the capacity found short.
func (t *table) capacityNoun(cp *report.Capacity) string {
	whose := "its"
	if cp.Resource == "index" && t.Index == "" {
		whose = "an index's"
	}
	switch cp.Limit {
	case report.LimitProvisioned:
		return whose + " provisioned capacity"
	case report.LimitAccount:
		return "the account's per-table throughput quota"
	case report.LimitOnDemandMax:
		return whose + " maximum on-demand throughput"
	}
	return whose + " capacity"
}

// adviseCapacity picks the fix of a capacity diagnosis: more capacity, of
// the kind the limit says.
func (t *table) adviseCapacity(c traffic.Class, cp *report.Capacity) report.Recommendation {
	need := fmt.Sprintf("%s %s/s", num(math.Ceil(cp.DemandUnitsPerSecond)), unitName(c))
	what := "the table"
	switch {
	case t.Index != "":
		what = fmt.Sprintf("the index %s of table %s", t.Index, t.Table)
	case cp.Resource == "index":
		what = "the table's global secondary index that the throttling reasons name (give throttle_resource, the reason's ARN, to name it)"
	}
	capacity := "read capacity"
	maxUnits := "MaxReadRequestUnits"
	if c == traffic.Write {
		capacity, maxUnits = "write capacity", "MaxWriteRequestUnits"
	}
	var text string
	switch cp.Limit {
	case report.LimitProvisioned:
		text = fmt.Sprintf("Raise the provisioned %s of %s to at least %s (UpdateTable%s), and let auto scaling follow the load, or switch to on-demand: the calls of every key are refused alike, so spreading a key changes nothing.",
			capacity, what, need, indexUpdate(t, cp))
	case report.LimitAccount:
		text = fmt.Sprintf("Ask for a higher per-table %s quota for the account in this Region (Service Quotas), above %s: %s is on-demand and reached the account's quota.",
			capacity, need, what)
	case report.LimitOnDemandMax:
		text = fmt.Sprintf("Raise the maximum on-demand throughput of %s (UpdateTable, OnDemandThroughput %s) to at least %s, or remove it: calls beyond it are refused by design.",
			what, maxUnits, need)
	default:
		text = fmt.Sprintf("Give %s more %s, about %s: raise its provisioned capacity and let auto scaling follow the load, or, if it is on-demand, raise its maximum throughput or the account's per-table quota. Log DynamoDB's throttling reasons (throttle_reason) to tell which.",
			what, capacity, need)
	}
	return report.Recommendation{Kind: report.AdviceCapacity, Text: text}
}

// indexUpdate names where UpdateTable takes an index's capacity.
func indexUpdate(t *table, cp *report.Capacity) string {
	if t.Index != "" || cp.Resource == "index" {
		return ", GlobalSecondaryIndexUpdates"
	}
	return ""
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
