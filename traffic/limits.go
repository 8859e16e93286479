package traffic

import (
	"context"
	"fmt"
	"math"
	"time"
	"unsafe"
)

// Table and index names, as DynamoDB allows them: 3 to 255 characters of
// A-Z, a-z, 0-9, '_', '-' and '.' (the CreateTable API's TableName and
// IndexName). A name outside that set cannot be a table of the account,
// and counting it would give any writer of the input a label value and a
// tracked table of its choosing.
const (
	MinNameLen = 3
	MaxNameLen = 255
)

// ValidName reports whether s is a table or index name DynamoDB accepts.
func ValidName(s string) bool {
	if len(s) < MinNameLen || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !nameByte[s[i]] {
			return false
		}
	}
	return true
}

// nameByte marks the bytes a table or index name may hold.
var nameByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['_'], t['-'], t['.'] = true, true, true
	return t
}()

// Key lengths, as DynamoDB bounds them: a partition key value is at most
// 2048 bytes, a sort key value at most 1024 (string keys in UTF-8, binary
// keys in bytes). Events carry keys in text form, binary keys in padded
// base64, so the bounds on the text are those of a binary key's base64:
// a longer key cannot be an item's key, and counting it would let any
// writer of the input fill the candidates' memory with key bytes.
const (
	MaxPKLen = (2048 + 2) / 3 * 4 // 2 732: base64 of 2048 bytes
	MaxSKLen = (1024 + 2) / 3 * 4 // 1 368: base64 of 1024 bytes
)

// MaxShardLen is the longest stream shard id DynamoDB Streams gives (its
// API reference: ShardId, at most 65 characters). Only its records carry
// a shard: an Event with a longer one did not come from a stream.
const MaxShardLen = 65

// CheckKeys returns nil when e's partition and sort keys are no longer
// than a DynamoDB key can be (MaxPKLen, MaxSKLen).
func CheckKeys(e *Event) *Invalid {
	switch {
	case len(e.PK) > MaxPKLen:
		return &Invalid{ReasonKeyTooLong, fmt.Sprintf("partition key of %d bytes: DynamoDB allows 2048 (%d in base64)", len(e.PK), MaxPKLen)}
	case len(e.SK) > MaxSKLen:
		return &Invalid{ReasonKeyTooLong, fmt.Sprintf("sort key of %d bytes: DynamoDB allows 1024 (%d in base64)", len(e.SK), MaxSKLen)}
	}
	return nil
}

// DynamoDB's documented limits that bound the capacity one call can
// consume (the Developer Guide's "Service, account, and table quotas" and
// the API reference of each call). All sizes are binary: 1 KB = 1024
// bytes.
const (
	// itemKB: an item, attribute names and values, is at most 400 KB.
	itemKB = 400
	// readUnitKB, writeUnitKB: a read capacity unit reads 4 KB strongly
	// consistent (half a unit eventually consistent), a write capacity
	// unit writes 1 KB, each item rounded up to the next unit.
	readUnitKB  = 4
	writeUnitKB = 1
	// transactional: a transactional read or write costs twice the units.
	transactional = 2
	// maxLocalIndexes: a table has at most 5 local secondary indexes. They
	// share the table's capacity: a write that moves an item in one of
	// them costs a delete and a put of the index entry (each at most the
	// item's size) on top of the table's write.
	maxLocalIndexes = 5
	// batchWriteItems: BatchWriteItem (and BatchExecuteStatement) takes at
	// most 25 items.
	batchWriteItems = 25
	// batchGetItems, batchGetKB: BatchGetItem returns at most 100 items and
	// 16 MB.
	batchGetItems = 100
	batchGetKB    = 16 * 1024
	// transactItems, transactKB: a transaction (TransactWriteItems,
	// TransactGetItems, ExecuteTransaction) holds at most 100 items of at
	// most 4 MB together.
	transactItems = 100
	transactKB    = 4 * 1024
	// pageKB: a Query or Scan reads at most 1 MB per call; the item that
	// crosses the mark is read whole.
	pageKB = 1024
)

// Units of one item written to a table with every local secondary index
// rewritten: the table's write and a delete and a put in each index.
const itemWriteUnits = itemKB / writeUnitKB * (1 + 2*maxLocalIndexes) // 4 400 WCU

// The most units each kind of call can consume of one table's (or one
// index's) capacity, derived from the limits above. The per-item rounding
// of a batch or transaction adds at most one unit per item.
const (
	// GetItem reads one item: 400 KB / 4 KB.
	MaxGetItemUnits = itemKB / readUnitKB // 100 RCU
	// Query and Scan read a 1 MB page and the item that crosses it.
	MaxQueryUnits = (pageKB + itemKB) / readUnitKB // 356 RCU
	// BatchGetItem reads 16 MB, at most 100 items each rounded up.
	MaxBatchGetUnits = batchGetKB/readUnitKB + batchGetItems // 4 196 RCU
	// TransactGetItems reads 4 MB in at most 100 items, at twice the units.
	MaxTransactGetUnits = (transactKB/readUnitKB + transactItems) * transactional // 2 248 RCU
	// PutItem, UpdateItem and DeleteItem write one item and its local
	// indexes.
	MaxWriteItemUnits = itemWriteUnits // 4 400 WCU
	// BatchWriteItem writes 25 items and their local indexes.
	MaxBatchWriteUnits = batchWriteItems * itemWriteUnits // 110 000 WCU
	// TransactWriteItems writes 4 MB in at most 100 items, with their local
	// indexes, at twice the units.
	MaxTransactWriteUnits = (transactKB/writeUnitKB + transactItems) * (1 + 2*maxLocalIndexes) * transactional // 92 312 WCU
)

// MaxUnits returns the most units of class c one call can consume of one
// table or index: the largest of the calls of that class (BatchGetItem for
// reads, BatchWriteItem for writes). An access that says it consumed more
// is not a DynamoDB call; CheckEvent rejects it as bad_units, so that no
// input can push a total towards the float limit.
//
// A Query of a local secondary index that fetches attributes the index
// does not project also reads each fetched item from the table, rounded
// up per item; DynamoDB documents no ceiling for those fetches beyond the
// 1 MB page, so they are bounded like any read.
func MaxUnits(c Class) float64 {
	if c == Write {
		return MaxBatchWriteUnits
	}
	return MaxBatchGetUnits
}

// Operation is a DynamoDB call as an access log names it.
type Operation struct {
	// Class is the capacity the call consumes.
	Class Class
	// Keyless marks a call that reads no particular key (Scan).
	Keyless bool
	// MaxUnits is the most units the call can consume of one table or
	// index (the Max*Units constants).
	MaxUnits float64
	// DefaultUnits is what one item of the call costs when the input does
	// not say: 2 for a transaction, whose every item DynamoDB reads or
	// writes twice (TransactionalUnits), else 1.
	DefaultUnits float64
}

// TransactionalUnits is what one item of a transaction (TransactGetItems,
// TransactWriteItems, ExecuteTransaction) costs at least: DynamoDB
// performs two underlying reads or writes of every item, "two RCUs per
// item read up to 4 KB, two WCUs per item written up to 1 KB" (Amazon
// DynamoDB Transactions: How it works, capacity management).
const TransactionalUnits = transactional

// operations are the calls an access log may name, and the class names
// themselves for logs that only know read or write.
var operations = map[string]Operation{
	"GetItem":            {Class: Read, MaxUnits: MaxGetItemUnits, DefaultUnits: 1},
	"BatchGetItem":       {Class: Read, MaxUnits: MaxBatchGetUnits, DefaultUnits: 1},
	"Query":              {Class: Read, MaxUnits: MaxQueryUnits, DefaultUnits: 1},
	"Scan":               {Class: Read, Keyless: true, MaxUnits: MaxQueryUnits, DefaultUnits: 1},
	"TransactGetItems":   {Class: Read, MaxUnits: MaxTransactGetUnits, DefaultUnits: TransactionalUnits},
	"read":               {Class: Read, MaxUnits: MaxBatchGetUnits, DefaultUnits: 1},
	"PutItem":            {Class: Write, MaxUnits: MaxWriteItemUnits, DefaultUnits: 1},
	"UpdateItem":         {Class: Write, MaxUnits: MaxWriteItemUnits, DefaultUnits: 1},
	"DeleteItem":         {Class: Write, MaxUnits: MaxWriteItemUnits, DefaultUnits: 1},
	"BatchWriteItem":     {Class: Write, MaxUnits: MaxBatchWriteUnits, DefaultUnits: 1},
	"TransactWriteItems": {Class: Write, MaxUnits: MaxTransactWriteUnits, DefaultUnits: TransactionalUnits},
	"write":              {Class: Write, MaxUnits: MaxBatchWriteUnits, DefaultUnits: 1},
}

// LookupOperation returns the Operation named name: a DynamoDB item call
// (GetItem, BatchGetItem, Query, Scan, TransactGetItems, PutItem,
// UpdateItem, DeleteItem, BatchWriteItem, TransactWriteItems) or "read" or
// "write".
func LookupOperation(name string) (Operation, bool) {
	op, ok := operations[name]
	return op, ok
}

// Invalid says why an Event cannot be counted: Reason is one of the
// Reason* constants, Detail what was wrong.
type Invalid struct {
	Reason string
	Detail string
}

func (e *Invalid) Error() string { return e.Reason + ": " + e.Detail }

// CheckUnits returns nil when u is a number of units one call of class c
// can consume: finite, not negative, at most MaxUnits(c).
func CheckUnits(c Class, u float64) *Invalid {
	switch {
	case math.IsNaN(u) || math.IsInf(u, 0):
		return &Invalid{ReasonBadUnits, fmt.Sprintf("units %v are not a number", u)}
	case u < 0:
		return &Invalid{ReasonBadUnits, fmt.Sprintf("negative units %v", u)}
	case u > MaxUnits(c):
		return &Invalid{ReasonBadUnits, fmt.Sprintf("%g %s units: one call consumes at most %g", u, unitName(c), MaxUnits(c))}
	}
	return nil
}

func unitName(c Class) string {
	if c == Write {
		return "write"
	}
	return "read"
}

// CheckName returns nil when name is a table or index name DynamoDB
// accepts; what names it ("table", "index") starts the detail. The name is
// not quoted: it may be anything, a partition key included.
func CheckName(what, name string) *Invalid {
	if ValidName(name) {
		return nil
	}
	if len(name) < MinNameLen || len(name) > MaxNameLen {
		bytes := "bytes"
		if len(name) == 1 {
			bytes = "byte"
		}
		return &Invalid{ReasonBadTable, fmt.Sprintf("%s name of %d %s: DynamoDB names are %d to %d characters", what, len(name), bytes, MinNameLen, MaxNameLen)}
	}
	return &Invalid{ReasonBadTable, fmt.Sprintf("%s name holds a character other than A-Z, a-z, 0-9, '_', '-' and '.'", what)}
}

// CheckEvent returns nil when e can be counted: its table and index
// names are names DynamoDB accepts (ReasonBadTable), its class is read or
// write (ReasonBadOp), its keys are no longer than DynamoDB allows
// (ReasonKeyTooLong), its throttling reason, if any, is that of a
// throttled call of its class (ReasonBadThrottleReason), and its units are
// a number one call can consume (ReasonBadUnits; throttled calls count no
// units and are not checked).
// Every reader checks the Events it makes with it (or through a parser
// that does) before handing them to a Sink, and rejects those it refuses
// with the reason it gives; the daemon checks every batch once more
// (Checked), so that no reader can let such an Event through.
func CheckEvent(e *Event) *Invalid {
	if e.Table == "" {
		return &Invalid{ReasonMissingTable, "no table name"}
	}
	if err := CheckName("table", e.Table); err != nil {
		return err
	}
	if e.Index != "" {
		if err := CheckName("index", e.Index); err != nil {
			return err
		}
	}
	if e.Class >= NumClasses {
		return &Invalid{ReasonBadOp, fmt.Sprintf("class %d is neither read nor write", e.Class)}
	}
	if err := CheckKeys(e); err != nil {
		return err
	}
	if len(e.Shard) > MaxShardLen {
		return &Invalid{ReasonBadRecord, fmt.Sprintf("shard id of %d bytes: DynamoDB Streams gives at most %d", len(e.Shard), MaxShardLen)}
	}
	if e.ThrottleReason.Known() && (!e.Throttled || e.ThrottleReason.Class() != e.Class) {
		return &Invalid{ReasonBadThrottleReason, fmt.Sprintf("%s on a %s call that was throttled: %v", e.ThrottleReason, e.Class, e.Throttled)}
	}
	if e.Throttled {
		return nil
	}
	return CheckUnits(e.Class, e.Units)
}

// Checked returns a Sink that hands next every Event of a batch that
// CheckEvent accepts and rejects the others to rep, under their Source.
// It is the daemon's last line in front of the counting: a reader that
// forgot to check cannot push a total to +Inf or track a table DynamoDB
// could not have. A batch whose Events all pass (the usual case) is
// handed on as it is; the names of a run of Events of one table are
// checked once.
func Checked(next Sink, rep Reporter) Sink {
	return CheckedTimes(next, rep, TimeLimits{})
}

// CheckedTimes is Checked that also refuses, as ReasonBadTime, the
// Events whose time lim refuses (TimeLimits.Check).
func CheckedTimes(next Sink, rep Reporter, lim TimeLimits) Sink {
	if rep == nil {
		rep = NopReporter{}
	}
	if lim.Now == nil {
		lim.Now = time.Now
	}
	return checkedSink{next: next, rep: rep, lim: lim}
}

type checkedSink struct {
	next Sink
	rep  Reporter
	lim  TimeLimits
}

// TimeLimits bound the event times the daemon counts: an Event's time is
// when the access happened (Event.Time), and a time far in the future or
// older than its input can hold is no access the window can judge.
type TimeLimits struct {
	// MaxFuture is how far past the clock's now an Event's time may be
	// (a clock skew between hosts); 0 checks nothing.
	MaxFuture time.Duration
	// MaxAge returns how old an Event of source may be (the input's
	// retention); 0, or a nil MaxAge, checks nothing.
	MaxAge func(source string) time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Retainer is implemented by sources whose input holds records for a
// bounded time (a stream's retention): an event older than that cannot
// have been read from it, and the daemon refuses it as ReasonBadTime.
type Retainer interface {
	// Retention returns how long the input holds a record.
	Retention() time.Duration
}

// timeBounds are a TimeLimits' bounds for one batch: the latest time
// accepted, and the earliest of the last source looked up.
type timeBounds struct {
	lim      *TimeLimits
	latest   time.Time
	now      time.Time
	source   string
	earliest time.Time
	looked   bool
}

func (l *TimeLimits) bounds() timeBounds {
	if l.MaxFuture <= 0 && l.MaxAge == nil {
		return timeBounds{}
	}
	now := l.Now()
	b := timeBounds{lim: l, now: now}
	if l.MaxFuture > 0 {
		b.latest = now.Add(l.MaxFuture)
	}
	return b
}

// ok reports whether e's time is within the bounds; a zero time (the
// Store's now) always is.
func (b *timeBounds) ok(e *Event) bool {
	if b.lim == nil || e.Time.IsZero() {
		return true
	}
	if !b.latest.IsZero() && e.Time.After(b.latest) {
		return false
	}
	if b.lim.MaxAge == nil {
		return true
	}
	if !b.looked || e.Source != b.source {
		b.source, b.looked, b.earliest = e.Source, true, time.Time{}
		if age := b.lim.MaxAge(e.Source); age > 0 {
			b.earliest = b.now.Add(-age)
		}
	}
	return b.earliest.IsZero() || !e.Time.Before(b.earliest)
}

// Check returns nil when e's time is within the limits at now, or why not
// (ReasonBadTime).
func (l TimeLimits) Check(e *Event, now time.Time) *Invalid {
	if e.Time.IsZero() {
		return nil
	}
	if l.MaxFuture > 0 && e.Time.After(now.Add(l.MaxFuture)) {
		return &Invalid{ReasonBadTime, fmt.Sprintf("time %s is %s in the future; at most %s is accepted (max_future)",
			e.Time.UTC().Format(time.RFC3339), span(now, e.Time), l.MaxFuture)}
	}
	if l.MaxAge == nil {
		return nil
	}
	if age := l.MaxAge(e.Source); age > 0 && e.Time.Before(now.Add(-age)) {
		return &Invalid{ReasonBadTime, fmt.Sprintf("time %s is %s old; the input holds at most %s",
			e.Time.UTC().Format(time.RFC3339), span(e.Time, now), age)}
	}
	return nil
}

// span says how long it is from a to b (b after a), in whole seconds as a
// Duration prints them up to 100 days, in days beyond, and in years beyond
// ten years: a Duration holds at most 292 years, and a time of year 9999
// (or 0001) is further than that from now.
func span(a, b time.Time) string {
	const day, year = 86400, 365.2425 * 86400
	secs := b.Unix() - a.Unix() // seconds since year 1 fit an int64 many times over
	switch {
	case secs < 100*day:
		return b.Sub(a).Round(time.Second).String()
	case float64(secs) < 10*year:
		return fmt.Sprintf("%d days", secs/day)
	default:
		return fmt.Sprintf("%.0f years", float64(secs)/year)
	}
}

// Put implements Sink.
func (s checkedSink) Put(ctx context.Context, batch []Event) error {
	var names nameCache
	times := s.lim.bounds()
	bad := -1
	for i := range batch {
		if !names.check(&batch[i]) || !times.ok(&batch[i]) {
			bad = i
			break
		}
	}
	if bad < 0 {
		return s.next.Put(ctx, batch)
	}
	// Drop the bad ones in place: the batch is this Sink's now.
	o := OutcomeOf(ctx)
	kept := batch[:bad]
	for i := bad; i < len(batch); i++ {
		e := &batch[i]
		if names.check(e) && times.ok(e) {
			kept = append(kept, *e)
			continue
		}
		inv := CheckEvent(e)
		if inv == nil {
			inv = s.lim.Check(e, times.now)
		}
		if inv != nil {
			s.rep.Reject(e.Source, inv.Reason, inv)
		}
		o.Refuse(i, inv)
	}
	clear(batch[len(kept):])
	if len(kept) == 0 {
		return nil
	}
	return s.next.Put(ctx, kept)
}

// nameCache remembers the last table and index names found valid, by
// their bytes' address: a reader's Events of one table share the name's
// string, so most Events cost two pointer comparisons.
type nameCache struct {
	table, index string
}

// check reports whether CheckEvent accepts e.
func (c *nameCache) check(e *Event) bool {
	if e.Class >= NumClasses || len(e.PK) > MaxPKLen || len(e.SK) > MaxSKLen || len(e.Shard) > MaxShardLen {
		return false
	}
	if !e.Throttled && !(e.Units >= 0 && e.Units <= MaxUnits(e.Class)) {
		return false
	}
	if !c.same(e.Table, c.table) {
		if !ValidName(e.Table) {
			return false
		}
		c.table = e.Table
	}
	if e.Index != "" && !c.same(e.Index, c.index) {
		if !ValidName(e.Index) {
			return false
		}
		c.index = e.Index
	}
	return true
}

func (*nameCache) same(a, b string) bool {
	return len(a) == len(b) && len(a) > 0 && unsafe.StringData(a) == unsafe.StringData(b)
}

// MaxAges returns how old an event of each source may be, for
// TimeLimits.MaxAge: the input's retention for a source that has one
// (Retainer) when it is longer than def, def otherwise.
func MaxAges(sources []Source, def time.Duration) func(string) time.Duration {
	// A Kinesis reader learns its streams' retention as it describes
	// them: asked at each batch, not once.
	kept := map[string][]Retainer{}
	for _, src := range sources {
		if r, ok := src.(Retainer); ok {
			kept[src.Name()] = append(kept[src.Name()], r)
		}
	}
	return func(source string) time.Duration {
		age := def
		for _, r := range kept[source] {
			age = max(age, r.Retention())
		}
		return age
	}
}
