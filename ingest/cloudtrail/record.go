package cloudtrail

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fastjson"

	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// opKind says where a data call keeps its table and keys.
type opKind uint8

const (
	opItem       opKind = iota // GetItem, PutItem, UpdateItem, DeleteItem: tableName + key
	opQuery                    // tableName, indexName, key (the key condition values)
	opScan                     // tableName, indexName; no key
	opBatchGet                 // requestItems: {table: {keys: [...]}}
	opBatchWrite               // requestItems: {table: [{putRequest|deleteRequest}]}
	opTransact                 // requestItems: [{tableName|TableName, key|Key}]
	opStatement                // statement (PartiQL)
	opStatements               // requestItems or transactStatements: [{statement}]
)

// shapes maps the eventName of a DynamoDB data call to where its request
// keeps tables and keys. The class of an item call is the one ingest
// knows for it (traffic.LookupOperation, shared with the access-log
// reader); a PartiQL statement's comes from its verb.
var shapes = map[string]opKind{
	"GetItem":               opItem,
	"PutItem":               opItem,
	"UpdateItem":            opItem,
	"DeleteItem":            opItem,
	"Query":                 opQuery,
	"Scan":                  opScan,
	"BatchGetItem":          opBatchGet,
	"BatchWriteItem":        opBatchWrite,
	"TransactGetItems":      opTransact,
	"TransactWriteItems":    opTransact,
	"ExecuteStatement":      opStatement,
	"BatchExecuteStatement": opStatements,
	"ExecuteTransaction":    opStatements,
}

// operation maps a DynamoDB eventName to how it is read and its class.
// Statement classes come from each statement's verb (Read until then).
func operation(name []byte) (opKind, traffic.Class, bool) {
	kind, ok := shapes[string(name)]
	if !ok {
		return 0, 0, false
	}
	if op, ok := traffic.LookupOperation(string(name)); ok {
		return kind, op.Class, true
	}
	return kind, traffic.Read, true
}

// recordError is a record that cannot be used, with its reason label.
type recordError struct {
	reason string
	err    error
}

func (e *recordError) Error() string { return e.err.Error() }

func rerr(reason, format string, args ...any) error {
	return &recordError{reason: reason, err: fmt.Errorf(format, args...)}
}

// Throttling error codes: the call was refused for capacity, so its keys
// are the ones that throttle.
func isThrottleCode(code []byte) bool {
	switch string(code) {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded":
		return true
	}
	return false
}

// transactional reports whether a call is a transaction, whose items
// cost twice a plain call's (traffic.TransactionalUnits).
func transactional(name []byte) bool {
	switch string(name) {
	case "TransactGetItems", "TransactWriteItems", "ExecuteTransaction":
		return true
	}
	return false
}

// isThrottleReason reports whether a transaction cancellation reason is a
// throttling one.
func isThrottleReason(r string) bool {
	return r == "ThrottlingError" || r == "ProvisionedThroughputExceeded" || r == "ThrottlingException" ||
		r == "ProvisionedThroughputExceededException" || r == "RequestLimitExceeded"
}

// cancelReasons reads the per-item reasons of a TransactionCanceledException
// message: "... for specific reasons [ConditionalCheckFailed, None]".
func cancelReasons(msg []byte) []string {
	i := bytes.LastIndexByte(msg, '[')
	j := bytes.LastIndexByte(msg, ']')
	if i < 0 || j < i {
		return nil
	}
	var out []string
	for _, p := range bytes.Split(msg[i+1:j], []byte(",")) {
		out = append(out, string(bytes.TrimSpace(p)))
	}
	return out
}

// outcome is how a data call ended, as its errorCode and errorMessage say.
type outcome struct {
	// throttled: the call, or (with cancel) some of its items, were
	// refused for capacity.
	throttled bool
	// code is the errorCode of a throttled call.
	code string
	// reasons are the throttling reasons its errorMessage names.
	reasons []traffic.ThrottleReason
	// cancel are a cancelled transaction's reasons, one per item in order.
	cancel []string
}

// outcomeOf reads how the call of record v ended; ok is false for a call
// that failed for another reason than throttling (a failed condition, a
// validation error), which is neither traffic nor throttled.
func outcomeOf(f *fields) (o outcome, ok bool) {
	code, _ := f.code.text()
	if len(code) == 0 {
		return o, true
	}
	msg, _ := f.msg.text()
	switch {
	case isThrottleCode(code):
		return outcome{throttled: true, code: string(code), reasons: namedReasons(msg)}, true
	case string(code) == "TransactionCanceledException":
		o.cancel = cancelReasons(msg)
		for _, r := range o.cancel {
			o.throttled = o.throttled || isThrottleReason(r)
		}
		return o, o.throttled
	}
	return o, false
}

// record turns one CloudTrail event, v with its fields f, into Events.
func (st *stream) record(v node, f *fields) {
	st.stats.Records++
	if !f.source.is("dynamodb.amazonaws.com") {
		st.stats.Ignored++
		return
	}
	name, _ := f.name.text()
	kind, class, ok := operation(name)
	if !ok {
		// Control-plane calls are not traffic, but CreateTable and
		// UpdateTable say which key attribute is which.
		st.learn(v)
		st.stats.Ignored++
		return
	}
	ts, err := eventTime(f.time, st.d.mask)
	if err != nil {
		st.reject(traffic.ReasonBadTime, err)
		return
	}
	// Failed calls: throttled ones are counted per key as throttled; the
	// others (a failed condition, a validation error) not at all.
	out, ok := outcomeOf(f)
	if !ok {
		st.stats.Failed++
		return
	}
	rp := f.params
	if rp.kind() != jsonscan.Object {
		st.reject(traffic.ReasonBadRecord, fmt.Errorf("%s: requestParameters is not an object", name))
		return
	}
	st.items, st.positions = st.items[:0], 0
	if err := st.parse(kind, class, string(name), rp); err != nil {
		st.reject(reasonOf(err), fmt.Errorf("%s: %w", name, err))
		return
	}
	st.emitItems(name, ts, &out)
}

// reasonOf is the rejection reason of an error of the record's reading.
func reasonOf(err error) string {
	var re *recordError
	if errors.As(err, &re) {
		return re.reason
	}
	return traffic.ReasonBadRecord
}

// learn teaches the decoder the key schemas a control-plane record
// states, parsing it whole when it is no larger than a piece.
func (st *stream) learn(v node) {
	pv, err := st.piece(v, "control-plane record")
	if err != nil {
		st.reject(reasonOf(err), err)
		return
	}
	st.d.schemas.learn(pv)
}

// emitItems hands on the items of a call read into st.items. A cancelled
// transaction names a reason per item, in order: only the items that were
// throttled count, as throttled. CloudTrail records no consumed capacity:
// an item costs one unit, a transaction's two.
func (st *stream) emitItems(name []byte, ts time.Time, out *outcome) {
	perItem := out.cancel != nil && len(out.cancel) == st.positions
	units := 1.0
	if transactional(name) {
		units = traffic.TransactionalUnits
	}
	for i := range st.items {
		it := &st.items[i]
		if perItem && !isThrottleReason(out.cancel[it.pos]) {
			continue
		}
		e := it.ev
		e.Time, e.Source, e.Units, e.Throttled = ts, SourceName, units, out.throttled
		if out.throttled && out.cancel == nil {
			why, err := itemReason(out.reasons, out.code, &e)
			switch {
			case err == errAmbiguous:
				st.stats.AmbiguousReasons++
			case err != nil:
				st.reject(reasonOf(err), fmt.Errorf("%s: item %d: %w", name, it.pos+1, err))
				continue
			}
			e.ThrottleReason = why
		}
		st.emit(e)
		if st.err != nil {
			return
		}
	}
}

// eventTime parses eventTime (RFC 3339, always UTC in CloudTrail).
func eventTime(v node, m traffic.Masker) (time.Time, error) {
	b, _ := v.text()
	if len(b) == 0 {
		return time.Time{}, errors.New("no eventTime")
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, fmt.Errorf("eventTime %s is not an RFC 3339 time", traffic.Quote(m, b))
	}
	return t, nil
}

// item is one item access of the record being read, and its place in
// the call's list (a cancelled transaction's reasons follow that order).
type item struct {
	ev  traffic.Event
	pos int
}

// add appends one item access to the record's items, at the position of
// the list item being read.
func (st *stream) add(table, index, pk, sk string, class traffic.Class) {
	st.items = append(st.items, item{traffic.Event{Table: table, Index: index, PK: pk, SK: sk, Class: class}, st.pos})
}

// get returns the first of the fields that exists: CloudTrail mixes
// tableName and TableName, key and Key inside one record.
func get(v *fastjson.Value, names ...string) *fastjson.Value {
	for _, n := range names {
		if f := v.Get(n); f != nil {
			return f
		}
	}
	return nil
}

// name reads a table or index name field; required fails when it is missing.
func (st *stream) field(v *fastjson.Value, required bool, names ...string) (string, error) {
	f := get(v, names...)
	if f == nil || f.Type() == fastjson.TypeNull {
		if required {
			return "", rerr(traffic.ReasonMissingTable, "no %s", names[0])
		}
		return "", nil
	}
	b, err := f.StringBytes()
	if err != nil {
		return "", rerr(traffic.ReasonBadType, "%s is not a string", names[0])
	}
	if len(b) == 0 {
		if required {
			return "", rerr(traffic.ReasonMissingTable, "empty %s", names[0])
		}
		return "", nil
	}
	return st.intern(b)
}

func (st *stream) table(v *fastjson.Value) (string, error) {
	return st.field(v, true, "tableName", "TableName")
}

func (st *stream) index(v *fastjson.Value) (string, error) {
	return st.field(v, false, "indexName", "IndexName")
}

// intern returns the table or index name b as a string, sharing one copy
// per distinct name so that Events of one table do not each allocate it.
// A table's ARN, which the API takes as its name too, is its name. A name
// DynamoDB would refuse is an error (bad_table): a call naming it would
// have failed, so the record is not one CloudTrail wrote.
func (st *stream) intern(b []byte) (string, error) {
	if s, ok := st.names[string(b)]; ok {
		return s, nil
	}
	b = tableOfARN(b)
	if !traffic.ValidName(string(b)) {
		if !validUTF8(b) {
			return "", rerr(traffic.ReasonBadUTF8, "name is not valid UTF-8")
		}
		e := traffic.CheckName("table or index", string(b))
		return "", &recordError{reason: e.Reason, err: errors.New(e.Detail)}
	}
	if st.names == nil || len(st.names) > 4096 {
		st.names = make(map[string]string)
	}
	s := string(b)
	st.names[s] = s
	return s, nil
}

// tableOfARN returns the table name of a table ARN
// (arn:aws:dynamodb:REGION:ACCOUNT:table/NAME, maybe followed by /index/...
// or /stream/...), and b itself when it is not one.
func tableOfARN(b []byte) []byte {
	if !bytes.HasPrefix(b, []byte("arn:")) {
		return b
	}
	_, name, ok := bytes.Cut(b, []byte(":table/"))
	if !ok {
		return b
	}
	if i := bytes.IndexByte(name, '/'); i >= 0 {
		name = name[:i]
	}
	return name
}
