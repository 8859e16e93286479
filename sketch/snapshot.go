package sketch

import (
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Snapshot is an immutable picture of every table's window at one moment.
// detect/ and export/ read it while ingestion goes on; nothing in it is
// shared with the live sketches.
type Snapshot struct {
	// Start and End bound the traffic the snapshot covers. In live mode they
	// are the sliding window's bounds; over whole files (analyze) they are
	// the earliest and latest event times seen.
	Start, End time.Time
	// Tables holds one entry per table and one per index, sorted by Table
	// then Index (the base table, with an empty Index, first).
	Tables []TableSnapshot
}

// TableSnapshot is one table's (or one index's) window.
type TableSnapshot struct {
	// Table is the table name; Index is empty for the base table.
	Table, Index string
	// Start and End bound the traffic this entry covers (see Snapshot).
	Start, End time.Time
	// RateSpan is, over whole files, the time the rates of the classes and
	// keys are means over: the whole seconds from Start's to End's, both
	// counted, since units are counted in whole seconds (16 events one a
	// second from :00 to :15 lie in 16 seconds, though 15 s pass between
	// the first and the last), so that a mean is never above the busiest
	// second. Zero means End − Start: a live window's rates are over the
	// time it has run.
	RateSpan time.Duration
	// Events counts the accesses in the window, both classes, excluding
	// throttled calls.
	Events uint64
	// Classes holds the per-class totals and heavy hitters, indexed by
	// traffic.Class.
	Classes [traffic.NumClasses]ClassStats
	// DistinctKeys estimates the number of distinct partition keys in the
	// window (HyperLogLog; exact for small counts).
	DistinctKeys uint64
	// Shards holds the records per stream shard in the window, most first,
	// for sources that know the shard (DynamoDB Streams). A shard is one
	// physical partition.
	Shards []ShardStat
	// ThrottledEvents counts every throttled call in the window, both
	// classes (ClassStats.Throttled has each class's, with its keys).
	ThrottledEvents uint64
	// RecentSpan is the time the RecentUnits of the classes and keys cover:
	// Config.RecentSeconds complete seconds up to LastSecond, fewer when the
	// window (live) or the input (whole files) is shorter.
	RecentSpan time.Duration
	// LastSecond is the start of the last complete second, the one whose
	// units LastSecondUnits counts: the second before the clock's (live),
	// or the second of the latest event (whole files). Zero when there is
	// none yet. A live view adds LastSecondUnits per LastSecond to draw
	// units per second.
	LastSecond time.Time
	// Tail is how many complete seconds before LastSecond the entry
	// carries besides it (ClassStats.TailUnits, KeyStat.TailUnits). In
	// Store.SnapshotSince: the seconds judged since the caller's previous
	// picture of the table other than LastSecond, when the judged second
	// moved by more than one between the two (a backlog read in one go, a
	// batch spanning seconds), at most as many as the class rings hold
	// (every second of the window); none in a table's first picture. In a
	// Summary: the keyLateSeconds (7) before LastSecond, those of the
	// window. In a Combined snapshot: the sum of the replicas' by second,
	// when every replica with the table is at the same LastSecond (see
	// Combine), else 0. 0 in Store.Snapshot.
	Tail int
	// Version names the picture this entry shows, in the entries of
	// Store.SnapshotSince: two entries of a table with the same Version
	// show the same counts. 0 names none (Store.Snapshot, analyze mode, a
	// combined snapshot of replicas).
	Version uint64
	// Kept is set, by Store.SnapshotSince only, on the entry of a table
	// whose picture the caller already holds at Version and that has not
	// changed since in any way the caller has to see: it then carries only
	// Table, Index, Start, End, LastSecond and Version, no counts (its
	// Classes, Shards and Throttled are empty; see Store.SnapshotSince).
	Kept bool
}

// ClassStats is one class's totals and heavy hitters in a window.
type ClassStats struct {
	// Events and Units are exact totals for the class in the window.
	Events uint64
	Units  float64
	// PeakUnitsPerSecond is the highest rate over the window's sub-windows
	// (live mode), or Units over the covered duration (whole files): a mean
	// over 5 s or more. PeakSecondUnits is the busiest single second.
	PeakUnitsPerSecond float64
	// PeakSecondUnits is the class's units in its busiest second of the
	// window (live mode, event time up to the sources' watermarks) or of
	// the whole input (whole files, exact whatever the order of the
	// events).
	PeakSecondUnits float64
	// RecentUnits is the class's units over TableSnapshot.RecentSpan, and
	// LastSecondUnits its units in TableSnapshot.LastSecond.
	RecentUnits, LastSecondUnits float64
	// TailUnits is the class's units in each of the last len(TailUnits)
	// seconds before TableSnapshot.LastSecond, oldest first: the
	// entry's Tail seconds, fewer when the class's ring no longer holds
	// the oldest of them.
	TailUnits []float64
	// Top ranks the heaviest partition keys by estimated units, heaviest
	// first, at most the configured number tracked.
	Top []KeyStat
	// Overflowed says, over whole files (Config.Window 0; never in a
	// live window or a replica's summary), that the class has more keys
	// than its candidates hold (Config.Candidates): keys were counted
	// from the count-min sketch's estimates or left to it, so which keys
	// Top holds, and their units, depend on the order the sketch met them
	// in. When it is not set, every key of the class was counted exactly
	// from its first event.
	Overflowed bool
	// Throttled is the class's calls refused by throttling in the window:
	// never part of Events or Units.
	Throttled ThrottleStats
}

// ThrottleStats is one class's throttled calls in a window.
type ThrottleStats struct {
	// Events counts them all, exactly.
	Events uint64
	// Causes counts them by what their reason says (traffic.ThrottleCause:
	// the limit, on the table or on one of its indexes), exactly; those
	// without a reason are in the table's traffic.LimitUnknown.
	Causes [traffic.NumThrottleCauses]uint64
	// Keys ranks the most throttled partition keys, each known within
	// bounds (KeyCount), by the calls they are known to have had, at most
	// the configured number tracked. A key counted since the start of the
	// window is exact.
	Keys []KeyCount
	// Error is the most throttled calls a key not in Keys can have had in
	// the window: 0 when Keys holds every throttled key, exactly.
	Error uint64
}

// KeyStat is one heavy partition key.
type KeyStat struct {
	// Key is the partition key value.
	Key string
	// Units is the estimated units of the key in the window. The estimate
	// never undercounts and overcounts by at most Error.
	Units float64
	// Error bounds the overestimate of Units.
	Error float64
	// Events estimates the accesses of the key in the window.
	Events uint64
	// SortKeys estimates the number of distinct sort keys seen under the key
	// (0 when the source gave none). One sort key means one hot item; many
	// mean a hot item collection.
	SortKeys uint64
	// PeakUnitsPerSecond is the key's units in its busiest second of the
	// window (see ClassStats.PeakSecondUnits), RecentUnits its units over
	// TableSnapshot.RecentSpan and LastSecondUnits its units in
	// TableSnapshot.LastSecond. They count the key's traffic since it has
	// been counted exactly: exact when Error is 0, otherwise they may miss up
	// to Error units from before (never more than the truth).
	PeakUnitsPerSecond           float64
	RecentUnits, LastSecondUnits float64
	// TailUnits is the key's units in each of the last len(TailUnits)
	// seconds before TableSnapshot.LastSecond, oldest first: of the
	// entry's Tail seconds, only those the key's ring still holds (its
	// newest second and the 7 before it, see keyLateSeconds). A key's
	// units in an older second are not known one by one: they are in its
	// window's totals only.
	TailUnits []float64
}

// ShardStat is one stream shard's records in a window.
type ShardStat struct {
	Shard   string
	Records uint64
	// PeakRecords is the records of the shard's busiest second in the
	// window: the newest second exactly, the others within 1/32 below
	// (at most 4032, four times a partition's writes); a record is one
	// write of at least one WCU, so it is a floor of the shard's busiest
	// WCU/s. Zero in a summary from a replica that does not keep it.
	PeakRecords uint64 `json:",omitempty"`
}

// KeyCount is a partition key and how many of its calls were throttled,
// within bounds: at least Count, at most Max (equal when exact).
type KeyCount struct {
	Key   string `json:"k"`
	Count uint64 `json:"n"`
	Max   uint64 `json:"m"`
}
