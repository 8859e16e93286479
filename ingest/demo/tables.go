package demo

import (
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
)

// The planted keys and the sizes of the tables.
const (
	// CelebrityUser is the orders key carrying CelebrityShare of its writes.
	CelebrityUser  = "USER#42"
	CelebrityShare = 0.25
	Users          = 100_000

	// HotProduct is the single item carrying HotProductShare of the
	// products table's reads.
	HotProduct      = "PRODUCT#7"
	HotProductShare = 0.30
	Products        = 50_000

	// HotDevice is the telemetry key near one partition's write ceiling
	// with a small share: HotDeviceShare of telemetry writes of
	// TelemetryUnits WCU each, HotDeviceWCU WCU/s at DefaultRate.
	HotDevice      = "DEVICE#7781"
	HotDeviceShare = 0.07
	TelemetryUnits = 44
	Devices        = 10_000

	// Sessions is the key space of the uniform sessions table.
	Sessions = 1_000_000
	// SKUs is the key space of the orders table's GSI1 index.
	SKUs = 20_000
)

// Event mix, per 1000 events.
const (
	wOrdersWrite    = 250
	wOrdersRead     = 50
	wOrdersGSI      = 50
	wTickets        = 80
	wEvents         = 80
	wProducts       = 150
	wTelemetry      = 150
	wSessionsRead   = 95
	wSessionsWrite  = 94
	wSessionsScan   = 1
	mixTotal        = 1000
	scanUnits       = 16
	telemetryPerSec = DefaultRate * wTelemetry / mixTotal
)

// HotDeviceWCU is the hot device's write rate at DefaultRate.
const HotDeviceWCU = telemetryPerSec * HotDeviceShare * TelemetryUnits

// statuses is the status-like partition key of the tickets table and the
// share of writes of each value.
var statuses = []struct {
	key   string
	share float64
}{
	{"STATUS#OPEN", 0.45},
	{"STATUS#IN_PROGRESS", 0.25},
	{"STATUS#RESOLVED", 0.16},
	{"STATUS#CLOSED", 0.07},
	{"STATUS#ESCALATED", 0.07},
}

// Plant is a table, index or key the workload shapes on purpose, and what
// the detector is expected to say about it at DefaultRate over a window of
// 60 s.
type Plant struct {
	Table string
	// Index is the secondary index, empty for the base table.
	Index string
	// Key is the planted partition key, empty for a table-wide pattern.
	Key   string
	Class ingest.Class
	// Findings are the finding kinds expected at least; empty means the
	// table must produce no finding at all.
	Findings []string
	// Recommendation is the expected recommendation kind of the finding.
	Recommendation string
	// Why describes the traffic.
	Why string
}

// Planted lists what the workload plants, for tests and documentation:
//
//   - orders: USER#42 carries 25% of the writes, over many sort keys →
//     hot_key with calculated_suffix.
//   - tickets: five STATUS# values carry all writes → low_cardinality
//     (its biggest statuses are hot keys too).
//   - events: the partition key is the event's date, EVENTS#2026-11-23 →
//     time_ordered_key (one key takes every write: a hot key as well).
//   - products: PRODUCT#7, one item with one sort key, takes 30% of reads →
//     hot_key with cache.
//   - telemetry: DEVICE#7781 takes 7% of writes of 44 WCU each, about 924
//     WCU/s, every write under its own timestamp sort key → partition_limit
//     (critical) with calculated_suffix, and no hot_key.
//   - sessions: uniform over a million keys, plus an occasional keyless
//     Scan → nothing.
//   - orders index GSI1: uniform Queries over 20 000 SKUs → nothing (it
//     shows as its own entry in reports).
func Planted() []Plant {
	return []Plant{
		{Table: "orders", Key: CelebrityUser, Class: ingest.Write, Findings: []string{"hot_key"}, Recommendation: "calculated_suffix",
			Why: "a celebrity user with 25% of the order writes, each order its own sort key"},
		{Table: "tickets", Class: ingest.Write, Findings: []string{"low_cardinality"}, Recommendation: "gsi",
			Why: "tickets keyed by their status: five values carry every write"},
		{Table: "events", Class: ingest.Write, Findings: []string{"time_ordered_key"}, Recommendation: "rekey",
			Why: "events keyed by the date they happened: today's key takes every write"},
		{Table: "products", Key: HotProduct, Class: ingest.Read, Findings: []string{"hot_key"}, Recommendation: "cache",
			Why: "one product page read far more than the others, a single item"},
		{Table: "telemetry", Key: HotDevice, Class: ingest.Write, Findings: []string{"partition_limit"}, Recommendation: "calculated_suffix",
			Why: "a chatty device with 7% of a big table's writes, near 1000 WCU/s"},
		{Table: "sessions", Why: "uniform reads and writes over a million sessions, and a Scan now and then"},
		{Table: "orders", Index: "GSI1", Class: ingest.Read, Why: "uniform Queries by SKU on a global secondary index"},
	}
}

func mix() []kind {
	return []kind{
		{wOrdersWrite, func(w *Workload, ev *ingest.Event) {
			ev.Table, ev.Class = "orders", ingest.Write
			if w.chance(CelebrityShare) {
				ev.PK = CelebrityUser
			} else {
				ev.PK = w.key("USER#", w.rng.Uint64N(Users))
			}
			ev.SK = w.key("ORDER#"+ev.Time.UTC().Format("2006-01-02")+"#", w.seq)
		}},
		{wOrdersRead, func(w *Workload, ev *ingest.Event) {
			ev.Table, ev.Class, ev.Units = "orders", ingest.Read, 0.5
			ev.PK = w.key("USER#", w.rng.Uint64N(Users))
		}},
		{wOrdersGSI, func(w *Workload, ev *ingest.Event) {
			ev.Table, ev.Index, ev.Class, ev.Units = "orders", "GSI1", ingest.Read, 0.5
			ev.PK = w.key("SKU#", w.rng.Uint64N(SKUs))
		}},
		{wTickets, func(w *Workload, ev *ingest.Event) {
			ev.Table, ev.Class = "tickets", ingest.Write
			r := w.rng.Float64()
			ev.PK = statuses[len(statuses)-1].key
			for _, s := range statuses {
				if r < s.share {
					ev.PK = s.key
					break
				}
				r -= s.share
			}
			ev.SK = w.key("TICKET#", w.rng.Uint64N(1_000_000))
		}},
		{wEvents, func(w *Workload, ev *ingest.Event) {
			ev.Table, ev.Class = "events", ingest.Write
			ev.PK = "EVENTS#" + ev.Time.UTC().Format("2006-01-02")
			ev.SK = w.key(ev.Time.UTC().Format(time.RFC3339Nano)+"#", w.seq)
		}},
		{wProducts, func(w *Workload, ev *ingest.Event) {
			ev.Table, ev.Class, ev.Units, ev.SK = "products", ingest.Read, 0.5, "DETAILS"
			if w.chance(HotProductShare) {
				ev.PK = HotProduct
			} else {
				ev.PK = w.key("PRODUCT#", w.rng.Uint64N(Products))
			}
		}},
		{wTelemetry, func(w *Workload, ev *ingest.Event) {
			ev.Table, ev.Class, ev.Units = "telemetry", ingest.Write, TelemetryUnits
			if w.chance(HotDeviceShare) {
				ev.PK = HotDevice
			} else {
				ev.PK = w.key("DEVICE#", w.rng.Uint64N(Devices))
			}
			ev.SK = w.key("T#", uint64(ev.Time.UnixMilli()))
		}},
		{wSessionsRead, func(w *Workload, ev *ingest.Event) {
			ev.Table, ev.Class, ev.Units = "sessions", ingest.Read, 0.5
			ev.PK = w.key("SESSION#", w.rng.Uint64N(Sessions))
		}},
		{wSessionsWrite, func(w *Workload, ev *ingest.Event) {
			ev.Table, ev.Class = "sessions", ingest.Write
			ev.PK = w.key("SESSION#", w.rng.Uint64N(Sessions))
		}},
		{wSessionsScan, func(w *Workload, ev *ingest.Event) {
			// A Scan reads no particular key: counted for the table only.
			ev.Table, ev.Class, ev.Units = "sessions", ingest.Read, scanUnits
		}},
	}
}
