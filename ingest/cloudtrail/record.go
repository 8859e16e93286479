package cloudtrail

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fastjson"

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

// throttleReason is why a call that failed with errorCode code and
// errorMessage msg was throttled, as far as the record says: CloudTrail
// keeps the exception's code and message, not its ThrottlingReasons, so a
// reason is known when the message names one of DynamoDB's sixteen, or
// when the code is RequestLimitExceeded, which DynamoDB's API reference
// defines as throughput beyond the account's quota. Its class is checked
// against each item's.
func throttleReason(code, msg []byte, c traffic.Class) traffic.ThrottleReason {
	if r, ok := traffic.FindThrottleReason(string(msg)); ok {
		return r
	}
	if string(code) == "RequestLimitExceeded" {
		return traffic.MakeThrottleReason(false, c, traffic.LimitAccount)
	}
	return 0
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

// record turns one CloudTrail event into Events.
func (st *stream) record(v *fastjson.Value) {
	st.stats.Records++
	if string(v.GetStringBytes("eventSource")) != "dynamodb.amazonaws.com" {
		st.stats.Ignored++
		return
	}
	name := v.GetStringBytes("eventName")
	kind, class, ok := operation(name)
	if !ok {
		// Control-plane calls are not traffic, but CreateTable and
		// UpdateTable say which key attribute is which.
		st.d.schemas.learn(v)
		st.stats.Ignored++
		return
	}
	ts, err := eventTime(v, st.d.mask)
	if err != nil {
		st.reject(traffic.ReasonBadTime, err)
		return
	}
	// Failed calls: throttled ones are counted per key as throttled; the
	// others (a failed condition, a validation error) not at all.
	throttled := false
	var reasons []string
	var why traffic.ThrottleReason
	if code := v.GetStringBytes("errorCode"); len(code) > 0 {
		switch {
		case isThrottleCode(code):
			throttled = true
			why = throttleReason(code, v.GetStringBytes("errorMessage"), class)
		case string(code) == "TransactionCanceledException":
			reasons = cancelReasons(v.GetStringBytes("errorMessage"))
			throttled = false
			for _, r := range reasons {
				throttled = throttled || isThrottleReason(r)
			}
		}
		if !throttled {
			st.stats.Failed++
			return
		}
	}
	rp := v.Get("requestParameters")
	if rp == nil || rp.Type() != fastjson.TypeObject {
		st.reject(traffic.ReasonBadRecord, fmt.Errorf("%s: requestParameters is not an object", name))
		return
	}
	st.items = st.items[:0]
	if err := st.parse(kind, class, rp); err != nil {
		reason := traffic.ReasonBadRecord
		var re *recordError
		if errors.As(err, &re) {
			reason = re.reason
		}
		st.reject(reason, fmt.Errorf("%s: %w", name, err))
		return
	}
	// A cancelled transaction names a reason per item, in order: only the
	// items that were throttled count, as throttled. CloudTrail records no
	// consumed capacity: an item costs one unit, a transaction's two.
	perItem := reasons != nil && len(reasons) == len(st.items)
	units := 1.0
	if transactional(name) {
		units = traffic.TransactionalUnits
	}
	for i := range st.items {
		if perItem && !isThrottleReason(reasons[i]) {
			continue
		}
		e := st.items[i]
		e.Time = ts
		e.Source = SourceName
		e.Units = units
		e.Throttled = throttled
		if throttled && why.Known() {
			// The operation of the reason is the item's own (a
			// statement's class comes from its verb).
			e.ThrottleReason = traffic.MakeThrottleReason(why.Index(), e.Class, why.Limit())
		}
		st.emit(e)
		if st.err != nil {
			return
		}
	}
}

// eventTime parses eventTime (RFC 3339, always UTC in CloudTrail).
func eventTime(v *fastjson.Value, m traffic.Masker) (time.Time, error) {
	b := v.GetStringBytes("eventTime")
	if len(b) == 0 {
		return time.Time{}, errors.New("no eventTime")
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, fmt.Errorf("eventTime %s is not an RFC 3339 time", traffic.Quote(m, b))
	}
	return t, nil
}

// add appends one item access to the record's Events.
func (st *stream) add(table, index, pk, sk string, class traffic.Class) {
	st.items = append(st.items, traffic.Event{Table: table, Index: index, PK: pk, SK: sk, Class: class})
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

// parse reads the items of one call into st.items.
func (st *stream) parse(kind opKind, class traffic.Class, rp *fastjson.Value) error {
	switch kind {
	case opItem:
		table, pk, sk, err := st.itemOf(rp)
		if err != nil {
			return err
		}
		if pk == "" {
			return rerr(traffic.ReasonMissingPK, "no key")
		}
		st.add(table, "", pk, sk, class)
	case opQuery:
		table, err := st.table(rp)
		if err != nil {
			return err
		}
		index, err := st.index(rp)
		if err != nil {
			return err
		}
		// The key holds the key condition's values; a sort key condition
		// (a range) does not name one item, so only the partition key counts.
		pk, _, err := st.key(table, index, get(rp, "key", "Key"), false, rp)
		if err != nil {
			return err
		}
		st.add(table, index, pk, "", class)
	case opScan:
		table, err := st.table(rp)
		if err != nil {
			return err
		}
		index, err := st.index(rp)
		if err != nil {
			return err
		}
		st.add(table, index, "", "", class)
	case opBatchGet, opBatchWrite:
		return st.batchItems(kind, class, get(rp, "requestItems", "RequestItems"))
	case opTransact:
		items := get(rp, "requestItems", "transactItems", "RequestItems", "TransactItems")
		if items == nil || items.Type() != fastjson.TypeArray {
			return rerr(traffic.ReasonBadRecord, "requestItems is not an array")
		}
		arr, _ := items.Array()
		for _, it := range arr {
			if err := st.listItem(class, it); err != nil {
				return err
			}
		}
	case opStatement:
		return st.statement(get(rp, "statement", "Statement"))
	case opStatements:
		items := get(rp, "requestItems", "transactStatements", "statements", "RequestItems", "TransactStatements", "Statements")
		if items == nil || items.Type() != fastjson.TypeArray {
			return rerr(traffic.ReasonBadRecord, "requestItems is not an array")
		}
		arr, _ := items.Array()
		for _, it := range arr {
			if it.Type() != fastjson.TypeObject {
				return rerr(traffic.ReasonBadType, "statement item is not an object")
			}
			if err := st.statement(get(it, "statement", "Statement")); err != nil {
				return err
			}
		}
	}
	return nil
}

// listItem reads one element of a transaction's (or a list-shaped batch's)
// requestItems: its own table and key, maybe wrapped in an operation
// object as in the API's TransactItems ({"Put": {"TableName":..., "Item":...}}).
func (st *stream) listItem(class traffic.Class, it *fastjson.Value) error {
	if it.Type() != fastjson.TypeObject {
		return rerr(traffic.ReasonBadType, "request item is not an object")
	}
	if get(it, "tableName", "TableName") == nil {
		if inner := get(it, "get", "Get", "put", "Put", "update", "Update", "delete", "Delete", "conditionCheck", "ConditionCheck"); inner != nil && inner.Type() == fastjson.TypeObject {
			it = inner
		}
	}
	table, pk, sk, err := st.itemOf(it)
	if err != nil {
		return err
	}
	st.add(table, "", pk, sk, class)
	return nil
}

// itemOf reads the table and the key of one item-level request object: its
// "key", or, for a put in the API's shape, the key attributes in its "item".
func (st *stream) itemOf(obj *fastjson.Value) (table, pk, sk string, err error) {
	table, err = st.table(obj)
	if err != nil {
		return "", "", "", err
	}
	pk, sk, err = st.key(table, "", get(obj, "key", "Key"), true, nil)
	if err == nil && pk == "" {
		pk, sk, err = st.itemKey(table, get(obj, "item", "Item"))
	}
	return table, pk, sk, err
}

// batchItems reads BatchGetItem and BatchWriteItem requestItems. No public
// CloudTrail sample of either exists; this follows the documented request
// shape, a map from table name to the table's requests:
//
//	BatchGetItem:   {"Music": {"keys": [{"Artist": "a", "SongTitle": "t"}]}}
//	BatchWriteItem: {"Music": [{"putRequest": {"item": {...}}}, {"deleteRequest": {"key": {...}}}]}
//
// with CloudTrail's lower-camel names or the API's capitalised ones, and a
// list shaped like TransactWriteItems' requestItems as well.
func (st *stream) batchItems(kind opKind, class traffic.Class, items *fastjson.Value) error {
	if items == nil {
		return rerr(traffic.ReasonBadRecord, "no requestItems")
	}
	switch items.Type() {
	case fastjson.TypeArray:
		arr, _ := items.Array()
		for _, it := range arr {
			if err := st.listItem(class, it); err != nil {
				return err
			}
		}
		return nil
	case fastjson.TypeObject:
	default:
		return rerr(traffic.ReasonBadType, "requestItems is neither an object nor an array")
	}
	obj, _ := items.Object()
	var err error
	obj.Visit(func(k []byte, tv *fastjson.Value) {
		if err != nil {
			return
		}
		if len(k) == 0 {
			err = rerr(traffic.ReasonMissingTable, "empty table name in requestItems")
			return
		}
		var table string
		if table, err = st.intern(k); err != nil {
			return
		}
		if kind == opBatchGet {
			err = st.batchGetTable(table, class, tv)
		} else {
			err = st.batchWriteTable(table, class, tv)
		}
	})
	return err
}

func (st *stream) batchGetTable(table string, class traffic.Class, tv *fastjson.Value) error {
	if tv.Type() != fastjson.TypeObject {
		return rerr(traffic.ReasonBadType, "requestItems.%s is not an object", table)
	}
	keys := get(tv, "keys", "Keys")
	if keys == nil || keys.Type() != fastjson.TypeArray {
		return rerr(traffic.ReasonBadRecord, "requestItems.%s.keys is not an array", table)
	}
	arr, _ := keys.Array()
	for _, k := range arr {
		pk, sk, err := st.key(table, "", k, true, nil)
		if err != nil {
			return err
		}
		if pk == "" {
			return rerr(traffic.ReasonMissingPK, "requestItems.%s: empty key", table)
		}
		st.add(table, "", pk, sk, class)
	}
	return nil
}

func (st *stream) batchWriteTable(table string, class traffic.Class, tv *fastjson.Value) error {
	if tv.Type() != fastjson.TypeArray {
		return rerr(traffic.ReasonBadType, "requestItems.%s is not an array", table)
	}
	arr, _ := tv.Array()
	for _, req := range arr {
		if req.Type() != fastjson.TypeObject {
			return rerr(traffic.ReasonBadType, "requestItems.%s: request is not an object", table)
		}
		r := get(req, "putRequest", "PutRequest", "deleteRequest", "DeleteRequest")
		if r == nil || r.Type() != fastjson.TypeObject {
			return rerr(traffic.ReasonBadRecord, "requestItems.%s: neither putRequest nor deleteRequest", table)
		}
		pk, sk, err := st.key(table, "", get(r, "key", "Key"), true, nil)
		if err == nil && pk == "" {
			pk, sk, err = st.itemKey(table, get(r, "item", "Item"))
		}
		if err != nil {
			return err
		}
		st.add(table, "", pk, sk, class)
	}
	return nil
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
