package detect

import (
	"fmt"
	"math"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// This file says what a capacity diagnosis found and how to fix it: with
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
