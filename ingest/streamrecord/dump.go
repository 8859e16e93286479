package streamrecord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Dumps are stream records as users keep them, read whole (hotkeyd
// analyze, a followed file): the event a Lambda function receives
// ({"Records": [...]}, from DynamoDB Streams or from Kinesis), the output
// of `aws dynamodbstreams get-records` and `aws kinesis get-records`,
// Kinesis Data Streams for DynamoDB payloads (plain, or in their base64
// envelope), JSON arrays of any of them, and files of one per line (what
// Firehose delivers to S3). Every record goes through the GetRecords
// decoder (decode.go, dumprecord.go) and Map, as a record read
// from a stream does.

// Limits of a dump.
const (
	// maxDumpValue bounds one top-level value read whole: a record, or a
	// Records object whose list is not its first member (a Lambda event
	// is at most 6 MB).
	maxDumpValue = 8 << 20
	// maxDumpRecord bounds one record: an item is at most 400 KB, a record
	// holds two images of it, and a Kinesis envelope adds a third in
	// base64. A bigger record is rejected as too_long.
	maxDumpRecord = 2 << 20
	// dumpBatch is how many Events are handed to the Sink at a time.
	dumpBatch = 512
)

// DumpConfig configures a DumpDecoder.
type DumpConfig struct {
	// Schemas are what is known of each table: its key schema and its
	// secondary indexes (the config's tables section, and what
	// DescribeTable taught a reader). A record's Keys do not say which
	// attribute is the partition key: a one-attribute key is, and a key of
	// several attributes of a table without a schema is counted whole
	// (name=value pairs), the table listed in DumpStats.NoSchema. The
	// writes of a table's indexes are told from the records' images
	// (IndexWrites). Nil knows nothing.
	Schemas *Schemas
	// Meet, when set, is called with the table of every record mapped,
	// before its index writes are told: a reader that learns tables'
	// schemas as it meets them (DescribeTable) does so here.
	Meet func(table string)
	// Gaps counts and logs the records whose images could not tell their
	// index writes; nil does not (DumpStats still counts them).
	Gaps *Gaps
	// Table is the table of the records that name none (the output of
	// `aws dynamodbstreams get-records` does not). When set, records of
	// any other table are rejected. Empty: records naming no table are
	// rejected as missing_table.
	Table string
	// Source is the source label of the Events and rejections
	// (SourceName when empty).
	Source string
	// Log is for hints a person should see (a table without a key
	// schema, said once per table); nil logs nothing.
	Log *zap.Logger
	// Reporter is told about every record rejected; nil discards.
	Reporter traffic.Reporter
	// Now stamps records without a creation time when no record before
	// them in the input had one (time.Now when nil); the others take the
	// time of the record before them.
	Now func() time.Time
}

// DumpStats counts what dump inputs held: the counts every decoder keeps
// (Records: the stream records read, whatever became of them; Events: the
// writes handed on; Rejected; NoSchema: the tables whose keys of several
// attributes were counted whole for want of a key schema), and these.
type DumpStats struct {
	ingest.Stats
	// TTLDeletes counts the items deleted by Time to Live: not writes.
	TTLDeletes uint64 `json:"ttl_deletes"`
	// Duplicates counts records read again (same table, eventID and
	// sequence number as one read before): counted once.
	Duplicates uint64 `json:"duplicates"`
	// Unsized counts the writes without SizeBytes, counted 1 unit each.
	Unsized uint64 `json:"unsized"`
	// NoTable counts the records rejected for naming no table.
	NoTable uint64 `json:"no_table"`
	// IndexWrites counts the writes of global secondary indexes told
	// from the records' images (Events of TABLE/INDEX, in Events too).
	IndexWrites uint64 `json:"index_writes"`
	// Incomplete counts, by table and view type, the writes to tables
	// with secondary indexes whose images could not tell every index
	// write (IndexWrites counted those they make certain).
	Incomplete map[IndexGap]uint64 `json:"-"`
}

// IndexGap names a table whose records could not tell their index writes,
// and the view type of its stream that hid them.
type IndexGap struct{ Table, ViewType string }

// Add adds o's counts to s.
func (s *DumpStats) Add(o DumpStats) {
	s.Stats.Add(o.Stats)
	s.TTLDeletes += o.TTLDeletes
	s.Duplicates += o.Duplicates
	s.Unsized += o.Unsized
	s.NoTable += o.NoTable
	s.IndexWrites += o.IndexWrites
	for k, n := range o.Incomplete {
		if s.Incomplete == nil {
			s.Incomplete = map[IndexGap]uint64{}
		}
		s.Incomplete[k] += n
	}
}

// DumpDecoder turns dumps of stream records into write Events. It keeps,
// across inputs, the records seen (to count a record read twice once) and
// the tables already warned about, so one DumpDecoder should read all the
// inputs of one analysis. It is safe for concurrent use.
type DumpDecoder struct {
	cfg DumpConfig

	mu     sync.Mutex
	seen   *recentIDs
	warned map[string]bool
	// decoders recycles record decoders, whose blocks serve many records,
	// between the calls of DecodeLine and DecodeRecord.
	decoders sync.Pool
}

// NewDumpDecoder returns a DumpDecoder.
func NewDumpDecoder(cfg DumpConfig) *DumpDecoder {
	if cfg.Source == "" {
		cfg.Source = SourceName
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Reporter == nil {
		cfg.Reporter = traffic.NopReporter{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &DumpDecoder{cfg: cfg, seen: newRecentIDs(recentIDsGeneration), warned: map[string]bool{}}
}

// Decode reads r to its end (decompressing it: package input) and hands
// the writes its records hold to sink; name identifies the input in
// messages. Bad records, and an input cut short, are reported to the
// Reporter and counted in DumpStats.Rejected; the records around them are
// read. The error is non-nil only when r itself fails, ctx is done or sink
// refuses a batch.
func (dd *DumpDecoder) Decode(ctx context.Context, r io.Reader, name string, sink traffic.Sink) (DumpStats, error) {
	st := &dumpStream{dd: dd, ctx: ctx, sink: sink, name: name, dec: &decoder{}}
	err := st.decode(r)
	if ferr := st.flush(); err == nil {
		err = ferr
	}
	return st.stats, err
}

// Notes says what a report must know of the records read (traffic.Noter):
// the tables whose index writes the records could not all tell, as
// counted by DumpConfig.Gaps.
func (dd *DumpDecoder) Notes() []string {
	if n := dd.cfg.Gaps.Note(); n != "" {
		return []string{n}
	}
	return nil
}

// Sniff reports whether line, the first line of a file, is a stream
// record (or a Lambda event of them): a followed file of them is read
// with DecodeLine.
func (dd *DumpDecoder) Sniff(line []byte) bool { return SniffDump(line) }

// DecodeLine reads one line of a followed file (one record, or one
// Lambda event) and appends the Events it holds to dst. Bad records are
// reported, as Decode does, lineNo naming the line; the number of records
// rejected is returned.
func (dd *DumpDecoder) DecodeLine(line []byte, name string, lineNo int64, dst []traffic.Event) ([]traffic.Event, int) {
	st := dd.stream(name, dst)
	st.line = lineNo
	st.top(line)
	dd.decoders.Put(st.dec)
	return st.batch, int(st.stats.Rejected)
}

// DecodeRecord reads one record, data (a Kinesis Data Streams for DynamoDB
// payload, as a Kinesis record's Data holds it), and appends its write to
// dst; name says where it is in messages ("stream S shard X sequence N").
// The stats tell what became of it: a write, a Time to Live delete, a
// duplicate of a record read lately, or a rejection (reported).
func (dd *DumpDecoder) DecodeRecord(data []byte, name string, dst []traffic.Event) ([]traffic.Event, DumpStats) {
	st := dd.stream(name, dst)
	st.record(data)
	dd.decoders.Put(st.dec)
	return st.batch, st.stats
}

// stream returns the state of a call reading one line or record, with a
// recycled decoder (to be put back).
func (dd *DumpDecoder) stream(name string, dst []traffic.Event) *dumpStream {
	dec, ok := dd.decoders.Get().(*decoder)
	if !ok {
		dec = &decoder{}
	}
	return &dumpStream{dd: dd, name: name, batch: dst, dec: dec}
}

// dumpStream is the state of one Decode call.
type dumpStream struct {
	dd    *DumpDecoder
	ctx   context.Context
	sink  traffic.Sink
	name  string
	line  int64 // for DecodeLine
	dec   *decoder
	rec   dumpRecord
	batch []traffic.Event
	// ixs holds one record's writes: the table's, then its indexes'.
	ixs   []traffic.Event
	stats DumpStats
	// n counts the records, for messages.
	n uint64
	// last is the creation time of the last record that had one.
	last time.Time
	// err is the first sink error; it stops the stream.
	err error
}

func (st *dumpStream) decode(in io.Reader) error {
	r, err := input.Decompress(in)
	if err != nil {
		var ce *input.CorruptError
		if errors.As(err, &ce) {
			st.rejectInput(err)
			return nil
		}
		return fmt.Errorf("read %s: %w", st.name, err)
	}
	defer r.Close()
	err = jsonscan.WalkRecords(r, maxDumpValue, st)
	var ce *input.CorruptError
	switch {
	case err == nil || st.err != nil:
		return st.err
	case errors.As(err, &ce):
		st.rejectInput(err)
		return nil
	}
	return fmt.Errorf("read %s: %w", st.name, err)
}

// Record implements jsonscan.RecordHandler.
func (st *dumpStream) Record(raw []byte, top bool) error {
	if top {
		st.top(raw)
	} else {
		st.record(raw)
	}
	return st.err
}

// Bad implements jsonscan.RecordHandler.
func (st *dumpStream) Bad(p jsonscan.Problem, err error) {
	switch p {
	case jsonscan.BadFile:
		st.rejectInput(err)
	case jsonscan.TooLong:
		st.n++
		st.reject(traffic.ReasonTooLong, fmt.Errorf("over %d bytes", maxDumpValue))
	case jsonscan.NotObject:
		st.n++
		st.reject(traffic.ReasonBadRecord, err)
	default:
		st.n++
		st.reject(traffic.ReasonBadJSON, err)
	}
}

// top reads a top-level object: a Records object whose list is not its
// first member (or a line of a followed file), or one record.
func (st *dumpStream) top(raw []byte) {
	list, ok := recordsList(raw)
	if !ok {
		st.record(raw)
		return
	}
	i := list + 1
	for first := true; st.err == nil; first = false {
		next, more, err := jsonscan.Element(raw, i, first)
		if err != nil {
			st.n++
			st.reject(traffic.ReasonBadJSON, fmt.Errorf("the Records list: %v", err))
			return
		}
		if !more {
			return
		}
		end, err := jsonscan.Skip(raw, next, maxNesting)
		if err != nil {
			st.n++
			st.reject(traffic.ReasonBadJSON, fmt.Errorf("the Records list: %v", err))
			return
		}
		st.record(raw[next:end])
		i = end
	}
}

// recordsList returns the index of the '[' of a Records member of the
// object raw, if it has one.
func recordsList(raw []byte) (int, bool) {
	i := jsonscan.Space(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return 0, false
	}
	i++
	for first := true; ; first = false {
		key, _, value, more, err := jsonscan.Member(raw, i, first)
		if err != nil || !more {
			return 0, false
		}
		v := jsonscan.Space(raw, value)
		if string(key) == "Records" && v < len(raw) && raw[v] == '[' {
			return v, true
		}
		if i, err = jsonscan.Skip(raw, value, maxNesting); err != nil {
			return 0, false
		}
	}
}

// record maps one record to an Event, or counts it apart, or rejects it.
func (st *dumpStream) record(raw []byte) {
	st.n++
	st.stats.Records++
	if len(raw) > maxDumpRecord {
		st.reject(traffic.ReasonTooLong, fmt.Errorf("record of %d bytes, over %d: larger than a record of a DynamoDB item can be", len(raw), maxDumpRecord))
		return
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		st.reject(traffic.ReasonBadRecord, errors.New("record is not a JSON object"))
		return
	}
	dr := &st.rec
	if err := st.dec.decodeDump(raw, dr); err != nil {
		st.rejectRecord(err)
		return
	}
	cfg := &st.dd.cfg
	table := dr.table
	switch {
	case table == "" && cfg.Table != "":
		table = cfg.Table
	case table == "":
		st.stats.NoTable++
		if dr.arn != "" {
			st.reject(traffic.ReasonMissingTable, fmt.Errorf("record names no table: eventSourceARN %q is not a DynamoDB table's stream ARN", dr.arn))
		} else {
			st.reject(traffic.ReasonMissingTable, errors.New("record names no table (no eventSourceARN, no tableName)"))
		}
		return
	case cfg.Table != "" && table != cfg.Table:
		st.reject(traffic.ReasonBadRecord, fmt.Errorf("record of table %q, not of table %q", table, cfg.Table))
		return
	}
	if st.dd.duplicate(table, &dr.rec) {
		st.stats.Duplicates++
		return
	}
	var ev traffic.Event
	kind, reason, err := st.mapKeys(table, &dr.rec, &ev)
	switch kind {
	case KindTTLDelete:
		st.stats.TTLDeletes++
		return
	case KindRejected:
		st.reject(reason, err)
		return
	}
	if sr := dr.rec.Dynamodb; sr.SizeBytes == nil {
		st.stats.Unsized++
	}
	switch {
	case !ev.Time.IsZero():
		st.last = ev.Time
	case !st.last.IsZero():
		// Records come in the order they were written: one without a
		// creation time is taken as written with the one before it.
		ev.Time = st.last
	default:
		ev.Time = cfg.Now()
	}
	ev.Source = cfg.Source
	st.emitWrites(dr, table, ev)
}

// emitWrites emits a record's table write ev, then the writes it caused
// in the table's secondary indexes (AppendWrites), counting them.
func (st *dumpStream) emitWrites(dr *dumpRecord, table string, ev traffic.Event) {
	cfg := &st.dd.cfg
	if cfg.Meet != nil {
		cfg.Meet(table)
	}
	t := cfg.Schemas.Table(table)
	if t.HasIndexes() {
		st.readImages(dr, t)
	}
	var complete bool
	st.ixs, complete = AppendWrites(st.ixs[:0], &dr.rec, t, ev, cfg.Gaps)
	st.stats.IndexWrites += uint64(len(st.ixs) - 1)
	if !complete {
		gap := IndexGap{table, string(dr.rec.Dynamodb.StreamViewType)}
		if st.stats.Incomplete == nil {
			st.stats.Incomplete = map[IndexGap]uint64{}
		}
		st.stats.Incomplete[gap]++
	}
	for _, w := range st.ixs {
		st.emit(w)
	}
}

// readImages reads the item images of a record of a table with indexes,
// as far as its indexes need them: an image the decoder cannot read
// hides the index writes it would tell, and the table write stands.
func (st *dumpStream) readImages(dr *dumpRecord, t *Table) {
	sr := dr.rec.Dynamodb
	for _, img := range []struct {
		span []byte
		dst  *map[string]types.AttributeValue
	}{{dr.newImage, &sr.NewImage}, {dr.oldImage, &sr.OldImage}} {
		if img.span == nil {
			continue
		}
		m, err := st.dec.imageAt(img.span, t)
		if err != nil {
			m = nil
		}
		*img.dst = m
	}
}

// mapKeys maps a record with the table's key schema, counting a key of
// several attributes whole when the table has none.
func (st *dumpStream) mapKeys(table string, r *types.Record, ev *traffic.Event) (Kind, string, error) {
	var ks traffic.KeySchema
	if t := st.dd.cfg.Schemas.Table(table); t != nil {
		ks = t.Key
	}
	kind, reason, err := Map(r, table, "", ks, ev)
	if kind != KindRejected || ks.PartitionKey != "" || r.Dynamodb == nil || len(r.Dynamodb.Keys) < 2 {
		return kind, reason, err
	}
	pk, first, err := wholeKey(r.Dynamodb.Keys)
	if err != nil {
		return KindRejected, traffic.ReasonBadType, err
	}
	// Mapped with any attribute as the partition key, whose value the
	// whole key replaces.
	kind, reason, err = Map(r, table, "", traffic.KeySchema{PartitionKey: first}, ev)
	ev.PK, ev.SK = pk, ""
	st.stats.AddNoSchema(table)
	st.dd.warnOnce(table, r.Dynamodb.Keys)
	return kind, reason, err
}

// wholeKey renders a key of several attributes whose partition key is not
// known, as the CloudTrail reader counts such keys: name=value pairs in
// name order, joined by commas, the values in canonical text form. first
// is the first name.
func wholeKey(keys map[string]types.AttributeValue) (pk, first string, err error) {
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		v, err := keyText(keys[n])
		if err != nil {
			return "", "", fmt.Errorf("key attribute %q: %w", n, err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n + "=" + v)
	}
	return b.String(), names[0], nil
}

// warnOnce logs, once per table, that its keys are counted whole.
func (dd *DumpDecoder) warnOnce(table string, keys map[string]types.AttributeValue) {
	dd.mu.Lock()
	done := dd.warned[table]
	dd.warned[table] = true
	dd.mu.Unlock()
	if done {
		return
	}
	attrs := make([]string, 0, len(keys))
	for n := range keys {
		attrs = append(attrs, n)
	}
	sort.Strings(attrs)
	dd.cfg.Log.Warn("no key schema: counting keys of several attributes whole; add the table to the tables section or --key-schema",
		zap.String("table", table), zap.Strings("attributes", attrs))
}

// duplicate reports whether the record was read before.
func (dd *DumpDecoder) duplicate(table string, r *types.Record) bool {
	id := aws.ToString(r.EventID)
	if id == "" {
		return false
	}
	seq := ""
	if r.Dynamodb != nil {
		seq = aws.ToString(r.Dynamodb.SequenceNumber)
	}
	dd.mu.Lock()
	defer dd.mu.Unlock()
	return dd.seen.add(table, id, seq)
}

func (st *dumpStream) emit(ev traffic.Event) {
	st.stats.Events++
	if st.sink == nil {
		st.batch = append(st.batch, ev)
		return
	}
	if st.batch == nil {
		st.batch = make([]traffic.Event, 0, dumpBatch)
	}
	st.batch = append(st.batch, ev)
	if len(st.batch) >= dumpBatch {
		if err := st.flush(); err != nil {
			st.err = err
		}
	}
}

func (st *dumpStream) flush() error {
	if len(st.batch) == 0 || st.err != nil || st.sink == nil {
		return st.err
	}
	b := st.batch
	st.batch = nil
	if err := st.ctx.Err(); err != nil {
		return err
	}
	return st.sink.Put(st.ctx, b)
}

// rejectRecord reports a record the decoder refused.
func (st *dumpStream) rejectRecord(err error) {
	reason := traffic.ReasonBadRecord
	var re *recordError
	if errors.As(err, &re) {
		reason = re.reason
	}
	st.reject(reason, err)
}

// reject reports one unusable record.
func (st *dumpStream) reject(reason string, err error) {
	st.stats.Rejected++
	st.dd.cfg.Reporter.Reject(st.dd.cfg.Source, reason, &input.RecordError{Name: st.name, Line: st.line, Record: int64(st.n), Err: err})
}

// rejectInput reports an input that could not be read to its end.
func (st *dumpStream) rejectInput(err error) {
	st.stats.Rejected++
	st.dd.cfg.Reporter.Reject(st.dd.cfg.Source, traffic.ReasonBadFile, fmt.Errorf("%s: %w", st.name, err))
}
