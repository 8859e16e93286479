package demo

import (
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// The planted keys and the sizes of the tables. The rates are those of
// DefaultRate, chosen so that each planted cause is a warning or critical
// against one partition's ceiling (1000 WCU/s, 3000 RCU/s) with room for a
// second's noise, and the trivial one stays info.
const (
	// CelebrityUser is the orders key carrying CelebrityShare of its writes,
	// each of OrderUnits WCU: 150 writes/s, 600 WCU/s, a warning.
	CelebrityUser  = "USER#42"
	CelebrityShare = 0.30
	OrderUnits     = 4
	Users          = 100_000

	// HotProduct is the single item carrying HotProductShare of the
	// products table's reads, each of ProductUnits RCU: 90 reads/s,
	// 1800 RCU/s, a warning.
	HotProduct      = "PRODUCT#7"
	HotProductShare = 0.30
	ProductUnits    = 20
	Products        = 50_000

	// HotDevice is the telemetry key near one partition's write ceiling
	// with a small share: HotDeviceShare of telemetry writes of
	// TelemetryUnits WCU each, HotDeviceWCU WCU/s at DefaultRate, critical.
	HotDevice      = "DEVICE#7781"
	HotDeviceShare = 0.07
	TelemetryUnits = 44
	Devices        = 10_000

	// TicketUnits is the WCU of a ticket write: STATUS#OPEN takes half of
	// 160 writes/s, 560 WCU/s, a warning.
	TicketUnits = 7
	// EventUnits is the WCU of an event write: today's key takes all
	// 140 writes/s, 560 WCU/s, a warning.
	EventUnits = 4

	// TrivialKey is the settings key with a third of its table's 20 WCU/s:
	// hot by share, at 0.7 % of the ceiling: info, never paged.
	TrivialKey = "CONFIG#global"

	// ShipmentStatus is the status most shipments are written in: the
	// shipments table's own keys are all distinct, but its global index
	// by-status (partition key status, INCLUDE manifest) takes every
	// shipment write too, told from the item images as the stream readers
	// tell them. New shipments (ShipmentNewShare of the writes) go in
	// IN_TRANSIT, the others move from IN_TRANSIT to DELIVERED (a delete
	// and a put): all 200 shipment writes a second write IN_TRANSIT's
	// index partition, an entry of ShipmentIndexUnits WCU each, 600 WCU/s,
	// a warning.
	ShipmentStatus     = "IN_TRANSIT"
	ShipmentNewShare   = 0.80
	ShipmentIndexUnits = 3

	// Sessions is the key space of the uniform sessions table.
	Sessions = 1_000_000
	// SKUs is the key space of the orders table's GSI1 index.
	SKUs = 20_000

	// Accounts is the key space of the ledger table, short of write
	// capacity: LedgerRefused of every account's writes are refused with
	// TableWriteProvisionedThroughputExceeded, about 13 of its 40 writes a
	// second at DefaultRate, while no account comes near a partition's
	// ceiling (a few WCU/s at most): a capacity diagnosis, critical.
	Accounts      = 3_000
	LedgerRefused = 1.0 / 3
)

// Event mix, per 1000 events.
const (
	wOrdersWrite    = 250
	wOrdersRead     = 50
	wOrdersGSI      = 50
	wTickets        = 80
	wEvents         = 70
	wProducts       = 150
	wTelemetry      = 150
	wSettings       = 10
	wShipments      = 100
	wLedger         = 20
	wSessionsRead   = 35
	wSessionsWrite  = 34
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
	{"STATUS#OPEN", 0.50},
	{"STATUS#IN_PROGRESS", 0.25},
	{"STATUS#RESOLVED", 0.15},
	{"STATUS#CLOSED", 0.05},
	{"STATUS#ESCALATED", 0.05},
}

// Plant is a table, index or key the workload shapes on purpose, and the
// diagnosis the detector is expected to make of it at DefaultRate over a
// window of 30 to 60 s.
type Plant struct {
	Table string
	// Index is the secondary index, empty for the base table.
	Index string
	// Key is the diagnosis's first key: the planted partition key, or for a
	// table-wide cause its hottest value.
	Key   string
	Class traffic.Class
	// Cause is the expected diagnosis's cause (a finding kind); empty means
	// the table must have no diagnosis and no finding at all.
	Cause string
	// Severity is the expected severity: "warning" means warning or
	// critical (a second's noise may tip a peak over 80 %), "critical"
	// means critical, "info" means info and never more.
	Severity string
	// Fix is the expected fix kind of the diagnosis.
	Fix string
	// Why describes the traffic.
	Why string
}

// Causes lists the causes the detector may give the plant's diagnosis: its
// Cause, and for a hot key at warning also partition_limit, the same
// diagnosis once a second's noise (a burst of late events on a loaded
// machine) tips its busiest second over 80 % of the ceiling.
func (p Plant) Causes() []string {
	if p.Cause == "hot_key" && p.Severity == "warning" {
		return []string{p.Cause, "partition_limit"}
	}
	return []string{p.Cause}
}

// Planted lists what the workload plants, for tests and documentation:
//
//   - orders: USER#42 carries 30% of the writes, 600 WCU/s, over many sort
//     keys → hot_key (warning) with calculated_suffix;
//   - tickets: five STATUS# values carry all writes, STATUS#OPEN half of
//     them at 560 WCU/s → one low_cardinality (warning) with gsi, which
//     explains its hot values;
//   - events: the partition key is the event's date, EVENTS#2026-11-23,
//     560 WCU/s → one time_ordered_key (warning) with rekey, which explains
//     today's hot key;
//   - products: PRODUCT#7, one item with one sort key, takes 30% of reads,
//     1800 RCU/s → hot_key (warning) with cache;
//   - telemetry: DEVICE#7781 takes 7% of writes of 44 WCU each, about 924
//     WCU/s, every write under its own timestamp sort key → partition_limit
//     (critical) with calculated_suffix;
//   - settings: CONFIG#global has a third of 20 WCU/s → hot_key at info
//     (write_sharding), never paged, and a quiet that says so;
//   - ledger: uniform writes over 3 000 accounts, a third of them refused
//     for the table's provisioned capacity (the reason logged) → one
//     capacity diagnosis (critical) with a capacity fix, and no key paged;
//   - sessions: uniform over a million keys, plus an occasional keyless
//     Scan → nothing;
//   - orders index GSI1: uniform Queries over 20 000 SKUs → nothing (it
//     shows as its own entry in reports);
//   - shipments: every shipment its own key → nothing on the table; its
//     index by-status takes the writes the item images tell, IN_TRANSIT
//     at 600 WCU/s of 720 → one low_cardinality on shipments/by-status
//     (warning) whose fix spreads the index key (calculated_suffix), and
//     whose summary says why the table's writes throttle with it.
func Planted() []Plant {
	return []Plant{
		{Table: "orders", Key: CelebrityUser, Class: traffic.Write, Cause: "hot_key", Severity: "warning", Fix: "calculated_suffix",
			Why: "a celebrity user with 30% of the order writes, each order its own sort key"},
		{Table: "tickets", Key: statuses[0].key, Class: traffic.Write, Cause: "low_cardinality", Severity: "warning", Fix: "gsi",
			Why: "tickets keyed by their status: five values carry every write"},
		{Table: "events", Key: "", Class: traffic.Write, Cause: "time_ordered_key", Severity: "warning", Fix: "rekey",
			Why: "events keyed by the date they happened: today's key takes every write"},
		{Table: "products", Key: HotProduct, Class: traffic.Read, Cause: "hot_key", Severity: "warning", Fix: "cache",
			Why: "one product page read far more than the others, a single item"},
		{Table: "telemetry", Key: HotDevice, Class: traffic.Write, Cause: "partition_limit", Severity: "critical", Fix: "calculated_suffix",
			Why: "a chatty device with 7% of a big table's writes, near 1000 WCU/s"},
		{Table: "settings", Key: TrivialKey, Class: traffic.Write, Cause: "hot_key", Severity: "info", Fix: "write_sharding",
			Why: "a small settings table where one item takes a third of 20 WCU/s: hot by share, far from any ceiling"},
		{Table: "ledger", Class: traffic.Write, Cause: "capacity", Severity: "critical", Fix: "capacity",
			Why: "a ledger short of write capacity: a third of every account's writes refused for the table's provisioned capacity, no key near a ceiling"},
		{Table: "sessions", Why: "uniform reads and writes over a million sessions, and a Scan now and then"},
		{Table: "orders", Index: "GSI1", Class: traffic.Read, Why: "uniform Queries by SKU on a global secondary index"},
		{Table: "shipments", Why: "every shipment its own key: a table that looks healthy"},
		{Table: "shipments", Index: "by-status", Key: ShipmentStatus, Class: traffic.Write, Cause: "low_cardinality", Severity: "warning", Fix: "calculated_suffix",
			Why: "the shipments' status index, written by every shipment write, most of them in IN_TRANSIT"},
	}
}

func mix() []kind {
	return []kind{
		{wOrdersWrite, (*Workload).orderWrite},
		{wOrdersRead, func(w *Workload, ev *traffic.Event) {
			ev.Table, ev.Class, ev.Units = "orders", traffic.Read, 0.5
			ev.PK = w.key("USER#", w.rng.Uint64N(Users))
		}},
		{wOrdersGSI, func(w *Workload, ev *traffic.Event) {
			ev.Table, ev.Index, ev.Class, ev.Units = "orders", "GSI1", traffic.Read, 0.5
			ev.PK = w.key("SKU#", w.rng.Uint64N(SKUs))
		}},
		{wTickets, (*Workload).ticket},
		{wEvents, func(w *Workload, ev *traffic.Event) {
			ev.Table, ev.Class, ev.Units = "events", traffic.Write, EventUnits
			ev.PK = "EVENTS#" + ev.Time.UTC().Format("2006-01-02")
			ev.SK = w.key(ev.Time.UTC().Format(time.RFC3339Nano)+"#", w.seq)
		}},
		{wProducts, (*Workload).productRead},
		{wTelemetry, (*Workload).telemetry},
		{wSettings, func(w *Workload, ev *traffic.Event) {
			ev.Table, ev.Class = "settings", traffic.Write
			if planted(&w.nSettings, 1.0/3) {
				ev.PK = TrivialKey
			} else {
				ev.PK = w.key("CONFIG#user-", w.rng.Uint64N(200))
			}
		}},
		{wShipments, (*Workload).shipment},
		{wLedger, (*Workload).ledgerWrite},
		{wSessionsRead, func(w *Workload, ev *traffic.Event) {
			ev.Table, ev.Class, ev.Units = "sessions", traffic.Read, 0.5
			ev.PK = w.key("SESSION#", w.rng.Uint64N(Sessions))
		}},
		{wSessionsWrite, func(w *Workload, ev *traffic.Event) {
			ev.Table, ev.Class = "sessions", traffic.Write
			ev.PK = w.key("SESSION#", w.rng.Uint64N(Sessions))
		}},
		{wSessionsScan, func(w *Workload, ev *traffic.Event) {
			// A Scan reads no particular key: counted for the table only.
			ev.Table, ev.Class, ev.Units = "sessions", traffic.Read, scanUnits
		}},
	}
}

// orderWrite is an order written: by the celebrity at CelebrityShare, else
// by any user, under the day's order key.
func (w *Workload) orderWrite(ev *traffic.Event) {
	ev.Table, ev.Class, ev.Units = "orders", traffic.Write, OrderUnits
	if planted(&w.nOrders, CelebrityShare) {
		ev.PK = CelebrityUser
	} else {
		ev.PK = w.key("USER#", w.rng.Uint64N(Users))
	}
	ev.SK = w.key("ORDER#"+ev.Time.UTC().Format("2006-01-02")+"#", w.seq)
}

// ticket is a ticket written under its status, the statuses at their shares.
func (w *Workload) ticket(ev *traffic.Event) {
	ev.Table, ev.Class, ev.Units = "tickets", traffic.Write, TicketUnits
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
}

// productRead is a product's details read: the hot product at
// HotProductShare.
func (w *Workload) productRead(ev *traffic.Event) {
	ev.Table, ev.Class, ev.Units, ev.SK = "products", traffic.Read, ProductUnits, "DETAILS"
	if planted(&w.nProducts, HotProductShare) {
		ev.PK = HotProduct
	} else {
		ev.PK = w.key("PRODUCT#", w.rng.Uint64N(Products))
	}
}

// telemetry is a device's reading written: the hot device at HotDeviceShare.
func (w *Workload) telemetry(ev *traffic.Event) {
	ev.Table, ev.Class, ev.Units = "telemetry", traffic.Write, TelemetryUnits
	if planted(&w.nTelemetry, HotDeviceShare) {
		ev.PK = HotDevice
	} else {
		ev.PK = w.key("DEVICE#", w.rng.Uint64N(Devices))
	}
	ev.SK = w.key("T#", uint64(ev.Time.UnixMilli()))
}

// ledgerWrite is an account's ledger write, refused for the table's
// provisioned capacity at LedgerRefused.
func (w *Workload) ledgerWrite(ev *traffic.Event) {
	ev.Table, ev.Class = "ledger", traffic.Write
	ev.PK = w.key("ACCOUNT#", w.rng.Uint64N(Accounts))
	if w.chance(LedgerRefused) {
		ev.Throttled = true
		ev.ThrottleReason = traffic.MakeThrottleReason(false, traffic.Write, traffic.LimitProvisioned)
	}
}
