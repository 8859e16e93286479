package cloudtrail

import (
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// parse reads the items of one call into st.items. A call of one item
// (GetItem, Query, Scan, ExecuteStatement) is parsed whole, as one piece;
// a call of a list (batches, transactions, statement lists) is walked in
// the record's bytes, counted against DynamoDB's limit of its kind, and
// read item by item: an item that cannot be read is refused alone, with
// its reason, and the others are counted.
func (st *stream) parse(kind opKind, class traffic.Class, name string, rp node) error {
	switch kind {
	case opBatchGet, opBatchWrite:
		return st.batchCall(kind, class, name, rp.get("requestItems", "RequestItems"))
	case opTransact:
		return st.list(name, rp.get("requestItems", "transactItems", "RequestItems", "TransactItems"), func(it *fastjson.Value) error {
			return st.listItem(class, it)
		})
	case opStatements:
		return st.list(name, rp.get("requestItems", "transactStatements", "statements", "RequestItems", "TransactStatements", "Statements"), func(it *fastjson.Value) error {
			if it.Type() != fastjson.TypeObject {
				return rerr(traffic.ReasonBadType, "statement item is not an object")
			}
			return st.statement(get(it, "statement", "Statement"))
		})
	}
	v, err := st.piece(rp, "requestParameters")
	if err != nil {
		return err
	}
	return st.single(kind, class, v)
}

// single reads the item of a call of one item.
func (st *stream) single(kind opKind, class traffic.Class, rp *fastjson.Value) error {
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
	case opQuery, opScan:
		table, err := st.table(rp)
		if err != nil {
			return err
		}
		index, err := st.index(rp)
		if err != nil {
			return err
		}
		pk := ""
		if kind == opQuery {
			// The key holds the key condition's values; a sort key
			// condition (a range) does not name one item, so only the
			// partition key counts.
			if pk, _, err = st.key(table, index, get(rp, "key", "Key"), false, rp); err != nil {
				return err
			}
		}
		st.add(table, index, pk, "", class)
	case opStatement:
		return st.statement(get(rp, "statement", "Statement"))
	}
	return nil
}

// list reads a list-shaped call (a transaction, a statement list, a batch
// written as a list): it is counted against DynamoDB's limit, then each
// element is parsed and read by read; an element that cannot be read is
// refused alone.
func (st *stream) list(name string, items node, read func(*fastjson.Value) error) error {
	if items.kind() != jsonscan.Array {
		return rerr(traffic.ReasonBadRecord, "requestItems is not an array")
	}
	n := items.count()
	if err := checkCallSize(name, n); err != nil {
		return err
	}
	st.positions = n
	st.pos = 0
	items.elements(func(it node) bool {
		v, err := st.piece(it, "request item")
		if err == nil {
			err = read(v)
		}
		if err != nil {
			st.rejectItem(name, st.pos, err)
		}
		st.pos++
		return st.err == nil
	})
	return nil
}

// rejectItem refuses one item of a list-shaped call; the others count.
func (st *stream) rejectItem(name string, pos int, err error) {
	st.reject(reasonOf(err), fmt.Errorf("%s: item %d: %w", name, pos+1, err))
}

// batchCall reads BatchGetItem and BatchWriteItem requestItems. No public
// CloudTrail sample of either exists; this follows the documented request
// shape, a map from table name to the table's requests:
//
//	BatchGetItem:   {"Music": {"keys": [{"Artist": "a", "SongTitle": "t"}]}}
//	BatchWriteItem: {"Music": [{"putRequest": {"item": {...}}}, {"deleteRequest": {"key": {...}}}]}
//
// with CloudTrail's lower-camel names or the API's capitalised ones, and a
// list shaped like TransactWriteItems' requestItems as well. The requests
// of all tables are counted against DynamoDB's limit first.
func (st *stream) batchCall(kind opKind, class traffic.Class, name string, items node) error {
	switch items.kind() {
	case jsonscan.None:
		return rerr(traffic.ReasonBadRecord, "no requestItems")
	case jsonscan.Array:
		return st.list(name, items, func(it *fastjson.Value) error { return st.listItem(class, it) })
	case jsonscan.Object:
	default:
		return rerr(traffic.ReasonBadType, "requestItems is neither an object nor an array")
	}
	n := 0
	items.members(func(_ []byte, tv node) bool {
		n += batchRequests(kind, tv).count()
		return true
	})
	if err := checkCallSize(name, n); err != nil {
		return err
	}
	st.positions, st.pos = n, 0
	items.members(func(k []byte, tv node) bool {
		st.batchTable(kind, class, name, k, tv)
		return st.err == nil
	})
	return nil
}

// batchRequests is the list of one table's requests in a batch: a
// BatchGetItem table's keys, a BatchWriteItem table's requests.
func batchRequests(kind opKind, tv node) node {
	if kind == opBatchGet {
		return tv.get("keys", "Keys")
	}
	return tv
}

// batchTable reads the requests of one table of a batch; what cannot be
// read is refused request by request.
func (st *stream) batchTable(kind opKind, class traffic.Class, name string, k []byte, tv node) {
	reqs := batchRequests(kind, tv)
	var err error
	table := ""
	switch {
	case len(k) == 0:
		err = rerr(traffic.ReasonMissingTable, "empty table name in requestItems")
	case kind == opBatchGet && tv.kind() != jsonscan.Object:
		err = rerr(traffic.ReasonBadType, "requestItems.%s is not an object", k)
	case kind == opBatchGet && reqs.kind() != jsonscan.Array:
		err = rerr(traffic.ReasonBadRecord, "requestItems.%s.keys is not an array", k)
	case kind == opBatchWrite && reqs.kind() != jsonscan.Array:
		err = rerr(traffic.ReasonBadType, "requestItems.%s is not an array", k)
	default:
		table, err = st.intern(k)
	}
	if err != nil {
		// The table's requests are refused one by one (one refusal
		// when they are not a list).
		n := max(reqs.count(), 1)
		if reqs.kind() != jsonscan.Array {
			n = 1
		}
		for range n {
			st.rejectItem(name, st.pos, err)
			st.pos++
		}
		return
	}
	reqs.elements(func(r node) bool {
		v, err := st.piece(r, "request")
		if err == nil {
			if kind == opBatchGet {
				err = st.batchGetKey(table, class, v)
			} else {
				err = st.batchWriteRequest(table, class, v)
			}
		}
		if err != nil {
			st.rejectItem(name, st.pos, fmt.Errorf("requestItems.%s: %w", table, err))
		}
		st.pos++
		return st.err == nil
	})
}

// batchGetKey reads one key of a BatchGetItem table.
func (st *stream) batchGetKey(table string, class traffic.Class, k *fastjson.Value) error {
	pk, sk, err := st.key(table, "", k, true, nil)
	if err != nil {
		return err
	}
	if pk == "" {
		return rerr(traffic.ReasonMissingPK, "empty key")
	}
	st.add(table, "", pk, sk, class)
	return nil
}

// batchWriteRequest reads one put or delete request of a BatchWriteItem
// table.
func (st *stream) batchWriteRequest(table string, class traffic.Class, req *fastjson.Value) error {
	if req.Type() != fastjson.TypeObject {
		return rerr(traffic.ReasonBadType, "request is not an object")
	}
	r := get(req, "putRequest", "PutRequest", "deleteRequest", "DeleteRequest")
	if r == nil || r.Type() != fastjson.TypeObject {
		return rerr(traffic.ReasonBadRecord, "neither putRequest nor deleteRequest")
	}
	pk, sk, err := st.key(table, "", get(r, "key", "Key"), true, nil)
	if err == nil && pk == "" {
		pk, sk, err = st.itemKey(table, get(r, "item", "Item"))
	}
	if err != nil {
		return err
	}
	st.add(table, "", pk, sk, class)
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
