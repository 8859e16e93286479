package cloudtrail

import (
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/valyala/fastjson"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// IndexSchemaKey is the key of a secondary index's schema in a tables map:
// "TABLE/INDEX". Table and index names cannot contain '/', so the key is
// never ambiguous (and it reads like the index's ARN suffix).
func IndexSchemaKey(table, index string) string { return table + "/" + index }

// schemas holds the configured key schemas, those learnt from control-plane
// events, and the tables already warned about.
type schemas struct {
	log        *zap.Logger
	configured map[string]traffic.KeySchema

	mu     sync.RWMutex
	learnt map[string]traffic.KeySchema
	warned map[string]bool
}

func newSchemas(tables map[string]traffic.KeySchema, log *zap.Logger) *schemas {
	c := make(map[string]traffic.KeySchema, len(tables))
	for k, v := range tables {
		c[k] = v
	}
	return &schemas{log: log, configured: c, learnt: map[string]traffic.KeySchema{}, warned: map[string]bool{}}
}

// get returns the key schema of a table (index empty) or of an index.
func (s *schemas) get(table, index string) (traffic.KeySchema, bool) {
	name := table
	if index != "" {
		name = IndexSchemaKey(table, index)
	}
	if ks, ok := s.configured[name]; ok {
		return ks, true
	}
	s.mu.RLock()
	ks, ok := s.learnt[name]
	s.mu.RUnlock()
	return ks, ok
}

// warnOnce logs, once per table or index, that keys of several attributes
// are counted whole for want of a schema.
func (s *schemas) warnOnce(table, index string, attrs []string) {
	name := table
	if index != "" {
		name = IndexSchemaKey(table, index)
	}
	s.mu.RLock()
	done := s.warned[name]
	s.mu.RUnlock()
	if done {
		return
	}
	s.mu.Lock()
	done = s.warned[name]
	s.warned[name] = true
	s.mu.Unlock()
	if done {
		return
	}
	s.log.Warn("no key schema: counting keys of several attributes whole; add the table to the tables section or --key-schema",
		zap.String("table", table), zap.String("index", index), zap.Strings("attributes", attrs),
		zap.String("schema_key", name))
}

// learn records the key schemas a control-plane event states: CreateTable's
// request, and the tableDescription in the response of CreateTable,
// UpdateTable, DescribeTable and DeleteTable. Configured schemas win.
func (s *schemas) learn(v *fastjson.Value) {
	if td := v.Get("responseElements", "tableDescription"); td != nil {
		s.learnTable(td)
	}
	if string(v.GetStringBytes("eventName")) == "CreateTable" {
		if rp := v.Get("requestParameters"); rp != nil {
			s.learnTable(rp)
		}
	}
}

func (s *schemas) learnTable(td *fastjson.Value) {
	table := string(td.GetStringBytes("tableName"))
	if table == "" || !utf8.ValidString(table) {
		return
	}
	if ks, ok := keySchema(td.Get("keySchema")); ok {
		s.put(table, ks)
	}
	for _, f := range []string{"globalSecondaryIndexes", "localSecondaryIndexes"} {
		for _, ix := range td.GetArray(f) {
			name := string(ix.GetStringBytes("indexName"))
			if name == "" || !utf8.ValidString(name) {
				continue
			}
			if ks, ok := keySchema(ix.Get("keySchema")); ok {
				s.put(IndexSchemaKey(table, name), ks)
			}
		}
	}
}

func (s *schemas) put(name string, ks traffic.KeySchema) {
	if _, ok := s.configured[name]; ok {
		return
	}
	s.mu.Lock()
	old, had := s.learnt[name]
	// Bound the map: a hostile input cannot make it grow without end.
	if had || len(s.learnt) < 100000 {
		s.learnt[name] = ks
	}
	s.mu.Unlock()
	if !had || old.PartitionKey != ks.PartitionKey || old.SortKey != ks.SortKey {
		s.log.Info("key schema learnt from a control-plane event", zap.String("table", name),
			zap.String("partition_key", ks.PartitionKey), zap.String("sort_key", ks.SortKey))
	}
}

// keySchema reads [{"attributeName": "Artist", "keyType": "HASH"}, ...].
func keySchema(v *fastjson.Value) (traffic.KeySchema, bool) {
	var ks traffic.KeySchema
	if v == nil {
		return ks, false
	}
	arr, err := v.Array()
	if err != nil {
		return ks, false
	}
	for _, e := range arr {
		name := string(e.GetStringBytes("attributeName"))
		if !utf8.ValidString(name) {
			return ks, false
		}
		switch string(e.GetStringBytes("keyType")) {
		case "HASH":
			ks.PartitionKey = name
		case "RANGE":
			ks.SortKey = name
		}
	}
	return ks, ks.PartitionKey != ""
}

// key reads the partition and sort key of one access from a key map m of
// table (or of index, for a Query). A missing m gives an empty key; a key
// that does not hold the schema's partition key is an error. wantSK says
// whether the sort key is wanted.
//
// query, for a Query, is its requestParameters: the attribute its key
// condition compares with a range operator is the sort key, so without a
// schema the other one is known to be the partition key.
func (st *stream) key(table, index string, m *fastjson.Value, wantSK bool, query *fastjson.Value) (pk, sk string, err error) {
	if m == nil || m.Type() == fastjson.TypeNull {
		return "", "", nil
	}
	obj, err := m.Object()
	if err != nil {
		return "", "", rerr(traffic.ReasonBadType, "key of %s is not an object", table)
	}
	name := tableIndex(table, index)
	if ks, ok := st.d.schemas.get(table, index); ok {
		return keyBySchema(name, ks, obj, wantSK)
	}
	switch obj.Len() {
	case 0:
		return "", "", rerr(traffic.ReasonMissingPK, "empty key of %s", name)
	case 1:
		// A one-attribute key is the partition key.
		var v *fastjson.Value
		obj.Visit(func(_ []byte, x *fastjson.Value) { v = x })
		pk, err = partitionValue(name, v)
		return pk, "", err
	}
	if v := keyByCondition(obj, query); v != nil {
		pk, err = partitionValue(name, v)
		return pk, "", err
	}
	pk, attrs, err := wholeKey(obj)
	if err != nil {
		return "", "", err
	}
	st.d.schemas.warnOnce(table, index, attrs)
	st.stats.AddNoSchema(name)
	return pk, "", nil
}

// keyBySchema reads the key of the table or index name, whose schema is
// ks: the partition key is required and not empty (DynamoDB refuses
// empty key values), the sort key read when wanted and present.
func keyBySchema(name string, ks traffic.KeySchema, obj *fastjson.Object, wantSK bool) (pk, sk string, err error) {
	pv := obj.Get(ks.PartitionKey)
	if pv == nil {
		return "", "", rerr(traffic.ReasonMissingPK, "key of %s has no partition key attribute %q", name, ks.PartitionKey)
	}
	if pk, err = partitionValue(name, pv); err != nil {
		return "", "", err
	}
	if wantSK && ks.SortKey != "" {
		if sv := obj.Get(ks.SortKey); sv != nil {
			if sk, err = keyValue(sv); err != nil {
				return "", "", err
			}
		}
	}
	return pk, sk, nil
}

// partitionValue reads a partition key value, refusing an empty one: the
// record is broken.
func partitionValue(name string, v *fastjson.Value) (string, error) {
	pk, err := keyValue(v)
	if err == nil && pk == "" {
		err = rerr(traffic.ReasonMissingPK, "key of %s has an empty partition key", name)
	}
	return pk, err
}

// keyByCondition returns the partition key's value of a Query's key of
// several attributes without a schema: the one attribute its key
// condition does not compare with a range operator; nil when that does
// not tell one.
func keyByCondition(obj *fastjson.Object, query *fastjson.Value) *fastjson.Value {
	ranged := rangeAttrs(query)
	if len(ranged) == 0 {
		return nil
	}
	var pv *fastjson.Value
	n := 0
	obj.Visit(func(k []byte, x *fastjson.Value) {
		if !ranged[string(k)] {
			pv = x
			n++
		}
	})
	if n != 1 {
		return nil
	}
	return pv
}

// wholeKey renders a key of several attributes whose partition key is
// unknown whole, in a canonical form (attributes sorted by name,
// "customer=C-1,order=O-9"), with its attribute names.
func wholeKey(obj *fastjson.Object) (string, []string, error) {
	type kv struct{ k, v string }
	pairs := make([]kv, 0, obj.Len())
	var err error
	obj.Visit(func(k []byte, x *fastjson.Value) {
		if err != nil {
			return
		}
		var s string
		if s, err = keyValue(x); err == nil {
			if !validUTF8(k) {
				err = rerr(traffic.ReasonBadUTF8, "key attribute name is not valid UTF-8")
				return
			}
			pairs = append(pairs, kv{string(k), s})
		}
	})
	if err != nil {
		return "", nil, err
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].k < pairs[j].k })
	var b strings.Builder
	attrs := make([]string, len(pairs))
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
		attrs[i] = p.k
	}
	return b.String(), attrs, nil
}

// itemKey reads the key from a full item (PutItem in the API's shape). It
// needs the schema: an item's attributes do not say which are the key.
// CloudTrail's own item field lists attribute names only, which gives an
// empty key.
func (st *stream) itemKey(table string, item *fastjson.Value) (pk, sk string, err error) {
	if item == nil || item.Type() != fastjson.TypeObject {
		return "", "", nil
	}
	if _, ok := st.d.schemas.get(table, ""); !ok {
		return "", "", nil
	}
	return st.key(table, "", item, true, nil)
}

func tableIndex(table, index string) string {
	if index == "" {
		return table
	}
	return IndexSchemaKey(table, index)
}

// keyValue renders a key attribute's value as text: strings as they are,
// numbers as written, and a typed value of the API's shape ({"S": "x"},
// {"N": "1"}) unwrapped. Anything else is its compact JSON.
func keyValue(v *fastjson.Value) (string, error) {
	var b []byte
	switch v.Type() {
	case fastjson.TypeString:
		b, _ = v.StringBytes()
	case fastjson.TypeObject:
		obj, _ := v.Object()
		if obj.Len() == 1 {
			for _, t := range []string{"S", "N", "B"} {
				if x := obj.Get(t); x != nil && x.Type() == fastjson.TypeString {
					b, _ = x.StringBytes()
					return checkValue(b)
				}
			}
		}
		b = v.MarshalTo(nil)
	default:
		b = v.MarshalTo(nil)
	}
	return checkValue(b)
}

func checkValue(b []byte) (string, error) {
	if !validUTF8(b) {
		return "", rerr(traffic.ReasonBadUTF8, "key value is not valid UTF-8")
	}
	return string(b), nil
}

func validUTF8(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return utf8.Valid(b)
		}
	}
	return true
}
