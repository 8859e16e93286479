// Package cloudtrail reads DynamoDB data events from CloudTrail logs: the
// {"Records":[...]} files CloudTrail delivers to S3 (gzip or plain), and the
// EventBridge envelopes ("detail-type": "AWS API Call via CloudTrail") that
// log pipelines write one per line. It turns every item a call touched into
// an traffic.Event, marks throttled calls, and follows a delivery folder
// (Source) or decodes whole inputs (Decode, for hotkeyd analyze).
//
// CloudTrail records carry neither item sizes nor consumed capacity, so
// every item counts 1 unit; and their key maps do not say which attribute is
// the partition key, so key schemas come from the configuration (or from
// CreateTable/UpdateTable events in the same input).
package cloudtrail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// SourceName is the source label of every Event this package produces.
const SourceName = "cloudtrail"

// maxRecord bounds one record's size. CloudTrail events are at most a few
// hundred kilobytes (a 100-item BatchGetItem); anything bigger is hostile.
const maxRecord = 8 << 20

// batchSize is how many Events are handed to the Sink at a time.
const batchSize = 512

// Stats counts what one or more inputs held: the counts every decoder
// keeps (Records: the CloudTrail records read, of any service; Events:
// the Events produced as traffic, throttled ones excluded; Rejected;
// NoSchema: the tables and "TABLE/INDEX" indexes whose keys of several
// attributes were counted whole for want of a key schema), and these.
type Stats struct {
	ingest.Stats
	// Throttled counts the Events of calls that failed with a throttling
	// error: counted per key as throttled, never as traffic.
	Throttled uint64 `json:"throttled"`
	// Failed counts the DynamoDB data calls that failed for another reason
	// (ConditionalCheckFailedException, TransactionCanceledException...):
	// neither traffic nor throttled.
	Failed uint64 `json:"failed"`
	// Ignored counts the records that are not DynamoDB data events (other
	// services, control-plane calls such as CreateTable, stream reads).
	Ignored uint64 `json:"ignored"`
	// Keyless counts the Events produced without a partition key (Scan,
	// PartiQL statements whose key could not be read).
	Keyless uint64 `json:"keyless"`
	// AmbiguousReasons counts the throttled items whose errorMessage
	// named several throttling reasons that could be theirs: counted
	// throttled without a reason (reasons.go).
	AmbiguousReasons uint64 `json:"ambiguous_throttle_reasons"`
	// UnitsPerItem is true when Events count 1 unit per item (2 in a
	// transaction) rather than consumed capacity, which CloudTrail does
	// not record. Always true for
	// this package; reports should say so.
	UnitsPerItem bool `json:"units_per_item"`
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.Stats.Add(o.Stats)
	s.Throttled += o.Throttled
	s.Failed += o.Failed
	s.Ignored += o.Ignored
	s.Keyless += o.Keyless
	s.AmbiguousReasons += o.AmbiguousReasons
	s.UnitsPerItem = s.UnitsPerItem || o.UnitsPerItem
}

// Decoder turns CloudTrail inputs into Events. It keeps, across inputs, the
// key schemas learnt from CreateTable and UpdateTable events and the tables
// already warned about, so one Decoder should read all the inputs of one
// analysis. It is safe for concurrent use.
type Decoder struct {
	schemas *schemas
	log     *zap.Logger
	rep     traffic.Reporter
	mask    traffic.Masker // of rep: input quoted in errors is masked as keys are
	// maxRecord is the record size limit (tests lower it).
	maxRecord int
}

// NewDecoder returns a Decoder. tables maps a table name to its key schema,
// and "TABLE/INDEX" to a secondary index's key schema; tables that are not
// listed count a one-attribute key as the partition key and a
// several-attribute key as a whole. log and rep may be nil.
func NewDecoder(tables map[string]traffic.KeySchema, log *zap.Logger, rep traffic.Reporter) *Decoder {
	if log == nil {
		log = zap.NewNop()
	}
	if rep == nil {
		rep = traffic.NopReporter{}
	}
	return &Decoder{schemas: newSchemas(tables, log), log: log, rep: rep, mask: traffic.MaskerOf(rep), maxRecord: maxRecord}
}

// Decode reads one whole input with a new Decoder. See Decoder.Decode.
func Decode(ctx context.Context, r io.Reader, name string, schemas map[string]traffic.KeySchema, sink traffic.Sink, rep traffic.Reporter) (Stats, error) {
	return NewDecoder(schemas, nil, rep).Decode(ctx, r, name, sink)
}

// Decode reads r to its end and hands its Events to sink. r may be
// compressed (gzip, zstd, xz: package input) and may hold
// {"Records":[...]} objects, EventBridge envelopes or bare events, one
// after the other (one per line or pretty-printed), or a JSON array of
// them. name identifies the input in messages.
//
// Bad records, a truncated or corrupt file, are reported to the Reporter
// and counted in Stats.Rejected; what could be read is kept. The error is
// non-nil only when r itself fails, ctx is done or sink refuses a batch.
func (d *Decoder) Decode(ctx context.Context, r io.Reader, name string, sink traffic.Sink) (Stats, error) {
	st := &stream{d: d, ctx: ctx, sink: sink, name: name}
	st.stats.UnitsPerItem = true
	err := st.decode(r)
	if ferr := st.flush(); err == nil {
		err = ferr
	}
	var re *readError
	if errors.As(err, &re) {
		err = fmt.Errorf("read %s: %w", name, re.err)
	}
	return st.stats, err
}

// readError is a failure of the reader Decode was given, told apart from
// a bad file (a rejection) and from a sink's refusal.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// stream is the state of one Decode call.
type stream struct {
	d     *Decoder
	ctx   context.Context
	sink  traffic.Sink
	name  string
	p     fastjson.Parser
	batch []traffic.Event
	stats Stats
	// items holds the item accesses of the record being read.
	items []item
	// positions is how many items the list of the call being read has,
	// pos the position of the one being read.
	positions, pos int
	// names interns table and index names.
	names map[string]string
	// n counts the records read, for messages.
	n uint64
	// err is the first sink error; it stops the stream.
	err error
}

func (st *stream) decode(in io.Reader) error {
	r, err := input.Decompress(in)
	if err != nil {
		var ce *input.CorruptError
		if errors.As(err, &ce) {
			st.rejectFile(err)
			return nil
		}
		return &readError{err}
	}
	defer r.Close()
	err = jsonscan.WalkRecords(r, st.d.maxRecord, st)
	var ce *input.CorruptError
	switch {
	case err == nil || st.err != nil:
		return st.err
	case errors.As(err, &ce):
		// Compressed content that cannot be decompressed on: a
		// truncated or corrupt .gz.
		st.rejectFile(err)
		return nil
	}
	return &readError{err}
}

// Record implements jsonscan.RecordHandler: a record, or at the top level
// an envelope, a bare event or a Records object. It is checked and walked
// in its bytes (node), never parsed whole.
func (st *stream) Record(raw []byte, top bool) error {
	st.n++
	v, ok := objectAt(raw)
	if !ok {
		st.reject(traffic.ReasonBadRecord, errors.New("record is not a JSON object"))
		return nil
	}
	st.object(v, top)
	return st.err
}

// rejectJSON reports a record that is not valid JSON.
func (st *stream) rejectJSON(err error) {
	reason := traffic.ReasonBadJSON
	if errors.Is(err, jsonscan.ErrBadUTF8) {
		reason = traffic.ReasonBadUTF8
	}
	st.reject(reason, fmt.Errorf("record is not valid JSON: %w", err))
}

// Bad implements jsonscan.RecordHandler.
func (st *stream) Bad(p jsonscan.Problem, err error) {
	switch p {
	case jsonscan.BadFile:
		st.rejectFile(err)
	case jsonscan.TooLong:
		st.n++
		st.reject(traffic.ReasonTooLong, fmt.Errorf("record over %d bytes", st.d.maxRecord))
	case jsonscan.NotObject:
		st.reject(traffic.ReasonBadRecord, err)
	default:
		st.n++
		st.reject(traffic.ReasonBadJSON, err)
	}
}

// object handles one object: with top set, a Records object, an
// EventBridge envelope or a bare event; otherwise a record of a Records
// list. Its members are walked once (scanFields), which checks it.
func (st *stream) object(v node, top bool) {
	if v.kind() != jsonscan.Object {
		st.reject(traffic.ReasonBadRecord, errors.New("record is not a JSON object"))
		return
	}
	f, err := scanFields(v)
	if err != nil {
		st.rejectJSON(err)
		return
	}
	if top && f.records.exists() {
		if f.records.kind() != jsonscan.Array {
			st.reject(traffic.ReasonBadType, errors.New("the Records member is not an array"))
			return
		}
		f.records.elements(func(r node) bool {
			st.object(r, false)
			return st.err == nil
		})
		return
	}
	if f.detail.exists() && !f.source.exists() {
		if f.detail.kind() != jsonscan.Object {
			st.reject(traffic.ReasonBadType, errors.New("detail is not an object"))
			return
		}
		v = f.detail
		if f, err = scanFields(v); err != nil {
			st.rejectJSON(err)
			return
		}
	}
	st.record(v, &f)
}

// emit appends an Event and hands a full batch to the sink.
func (st *stream) emit(e traffic.Event) {
	if e.Throttled {
		st.stats.Throttled++
	} else {
		st.stats.Events++
	}
	if e.PK == "" {
		st.stats.Keyless++
	}
	if st.batch == nil {
		st.batch = make([]traffic.Event, 0, batchSize)
	}
	st.batch = append(st.batch, e)
	if len(st.batch) >= batchSize {
		if err := st.flush(); err != nil {
			st.err = err
		}
	}
}

func (st *stream) flush() error {
	if len(st.batch) == 0 || st.err != nil {
		return st.err
	}
	b := st.batch
	st.batch = nil
	if err := st.ctx.Err(); err != nil {
		return err
	}
	if err := st.sink.Put(st.ctx, b); err != nil {
		return &sinkError{err}
	}
	return nil
}

// sinkError is a Sink's refusal, told apart from read errors.
type sinkError struct{ err error }

func (e *sinkError) Error() string { return "put events: " + e.err.Error() }
func (e *sinkError) Unwrap() error { return e.err }

// reject reports one unusable record.
func (st *stream) reject(reason string, err error) {
	st.stats.Rejected++
	st.d.rep.Reject(SourceName, reason, &input.RecordError{Name: st.name, Record: int64(st.n), Err: err})
}

// rejectFile reports a file that could not be read to its end.
func (st *stream) rejectFile(err error) {
	st.stats.Rejected++
	st.d.rep.Reject(SourceName, traffic.ReasonBadFile, fmt.Errorf("%s: %w", st.name, err))
}

// parseError is fastjson's error with the piece of input it quotes (its
// "unparsed tail") quoted through traffic.Quote, so that it is masked as
// keys are.
func parseError(err error, m traffic.Masker) error {
	const tailMark = "; unparsed tail: "
	msg, tail, ok := strings.Cut(err.Error(), tailMark)
	if !ok {
		return err
	}
	if t, uerr := strconv.Unquote(tail); uerr == nil {
		tail = t
	}
	return errors.New(msg + tailMark + traffic.Quote(m, []byte(tail)))
}
