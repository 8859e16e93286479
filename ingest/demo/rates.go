package demo

import (
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Rate is the steady traffic of one table (or index) and class at
// DefaultRate, as the mix and the planted shares make it: what a history
// of the demo written in advance shows, without generating its events.
type Rate struct {
	Table string
	// Index is the secondary index, empty for the base table.
	Index string
	Class traffic.Class
	// Units and Events are per second, throttled calls apart.
	Units, Events float64
	// Throttled is the calls refused per second.
	Throttled float64
	// Keys are the keys with a share of their own (the planted ones and
	// the status-like values), heaviest first, in units per second; the
	// rest of Units is spread over the table's other keys.
	Keys []KeyRate
}

// KeyRate is one key's units per second.
type KeyRate struct {
	Key   string
	Units float64
}

// Rates returns the workload's traffic per second at DefaultRate, per
// table, index and class, for a second at (the events table's key is the
// day's date).
func Rates(at time.Time) []Rate {
	per := func(weight int) float64 { return float64(DefaultRate) * float64(weight) / mixTotal }
	tickets := make([]KeyRate, len(statuses))
	for i, s := range statuses {
		tickets[i] = KeyRate{s.key, per(wTickets) * s.share * TicketUnits}
	}
	shipments := per(wShipments)
	delivered := shipments * (1 - ShipmentNewShare)
	ledger := per(wLedger)
	return []Rate{
		{Table: "orders", Class: traffic.Write, Units: per(wOrdersWrite) * OrderUnits, Events: per(wOrdersWrite),
			Keys: []KeyRate{{CelebrityUser, per(wOrdersWrite) * CelebrityShare * OrderUnits}}},
		{Table: "orders", Class: traffic.Read, Units: per(wOrdersRead) * 0.5, Events: per(wOrdersRead)},
		{Table: "orders", Index: "GSI1", Class: traffic.Read, Units: per(wOrdersGSI) * 0.5, Events: per(wOrdersGSI)},
		{Table: "tickets", Class: traffic.Write, Units: per(wTickets) * TicketUnits, Events: per(wTickets), Keys: tickets},
		{Table: "events", Class: traffic.Write, Units: per(wEvents) * EventUnits, Events: per(wEvents),
			Keys: []KeyRate{{"EVENTS#" + at.UTC().Format("2006-01-02"), per(wEvents) * EventUnits}}},
		{Table: "products", Class: traffic.Read, Units: per(wProducts) * ProductUnits, Events: per(wProducts),
			Keys: []KeyRate{{HotProduct, per(wProducts) * HotProductShare * ProductUnits}}},
		{Table: "telemetry", Class: traffic.Write, Units: per(wTelemetry) * TelemetryUnits, Events: per(wTelemetry),
			Keys: []KeyRate{{HotDevice, HotDeviceWCU}}},
		{Table: "settings", Class: traffic.Write, Units: per(wSettings), Events: per(wSettings),
			Keys: []KeyRate{{TrivialKey, per(wSettings) / 3}}},
		{Table: "shipments", Class: traffic.Write, Units: shipments * 3, Events: shipments},
		// Every shipment write puts or deletes an IN_TRANSIT entry; a
		// delivery also puts a DELIVERED one.
		{Table: "shipments", Index: "by-status", Class: traffic.Write, Units: (shipments + delivered) * ShipmentIndexUnits,
			Events: shipments + delivered, Keys: []KeyRate{
				{ShipmentStatus, shipments * ShipmentIndexUnits}, {"DELIVERED", delivered * ShipmentIndexUnits}}},
		{Table: "ledger", Class: traffic.Write, Units: ledger * (1 - LedgerRefused), Events: ledger * (1 - LedgerRefused),
			Throttled: ledger * LedgerRefused},
		{Table: "sessions", Class: traffic.Read, Units: per(wSessionsRead)*0.5 + per(wSessionsScan)*scanUnits,
			Events: per(wSessionsRead) + per(wSessionsScan)},
		{Table: "sessions", Class: traffic.Write, Units: per(wSessionsWrite), Events: per(wSessionsWrite)},
	}
}
