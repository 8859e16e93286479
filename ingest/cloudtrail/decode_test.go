package cloudtrail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/valyala/fastjson"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// ev builds a CloudTrail record of a DynamoDB call; extra is more members
// (errorCode...), rp the requestParameters object.
func ev(name, rp string, extra ...string) string {
	more := ""
	for _, e := range extra {
		more += "," + e
	}
	return fmt.Sprintf(`{"eventVersion":"1.08","eventTime":"2026-11-22T10:00:00Z","eventSource":"dynamodb.amazonaws.com","eventName":%q,"requestParameters":%s%s}`, name, rp, more)
}

// repeat joins n copies of s with commas.
func repeat(s string, n int) string { return strings.TrimSuffix(strings.Repeat(s+",", n), ",") }

func records(recs ...string) string { return `{"Records":[` + strings.Join(recs, ",") + `]}` }

// short renders an Event as table|index|pk|sk|class, with |throttled
// and its reason, and |2u for a transaction's item (two units).
func short(e traffic.Event) string {
	s := e.Table + "|" + e.Index + "|" + e.PK + "|" + e.SK + "|" + e.Class.String()
	if e.Throttled {
		s += "|throttled"
	}
	if e.ThrottleReason.Known() {
		s += "|" + e.ThrottleReason.String()
	}
	if e.Units == 2 {
		s += "|2u"
	}
	return s
}

func decodeString(t *testing.T, in string, tables map[string]traffic.KeySchema) ([]string, Stats, *collector) {
	t.Helper()
	col := &collector{}
	st, err := Decode(context.Background(), strings.NewReader(in), "test.json", tables, col, col)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	var got []string
	for _, e := range col.events {
		if e.Units != 1 && e.Units != 2 || e.Source != "cloudtrail" || e.Time.IsZero() {
			t.Errorf("event %+v: want units 1 (2 in a transaction), source cloudtrail and a time", e)
		}
		got = append(got, short(e))
	}
	return got, st, col
}

func TestDecodeCalls(t *testing.T) {
	music := map[string]traffic.KeySchema{
		"Music":                  {PartitionKey: "Artist", SortKey: "SongTitle"},
		"Orders/byCustomer":      {PartitionKey: "customer", SortKey: "date"},
		"Orders":                 {PartitionKey: "order"},
		IndexSchemaKey("T", "x"): {PartitionKey: "gpk"},
	}
	cases := []struct {
		name     string
		in       string
		want     []string
		rejected []string // reasons
		failed   uint64
	}{
		{
			// No public BatchGetItem sample exists: this follows the
			// documented request shape (RequestItems: table -> {Keys: [...]})
			// in CloudTrail's lower-camel spelling, and in the API's.
			name: "BatchGetItem documented shape",
			in: records(ev("BatchGetItem", `{"requestItems":{
				"Music":{"keys":[{"Artist":"A","SongTitle":"s1"},{"Artist":"B","SongTitle":"s2"}],"projectionExpression":"x"},
				"Users":{"Keys":[{"id":{"S":"u1"}},{"id":{"N":"42"}}]}}}`)),
			want: []string{"Music||A|s1|read", "Music||B|s2|read", "Users||u1||read", "Users||42||read"},
		},
		{
			// No public BatchWriteItem sample exists: documented shape,
			// RequestItems: table -> [{PutRequest: {Item}} | {DeleteRequest: {Key}}].
			// A CloudTrail-style item (attribute names only) has no key.
			name: "BatchWriteItem documented shape",
			in: records(ev("BatchWriteItem", `{"requestItems":{"Music":[
				{"putRequest":{"key":{"Artist":"A","SongTitle":"s1"},"item":["Artist","SongTitle","Album"]}},
				{"deleteRequest":{"key":{"Artist":"B","SongTitle":"s2"}}},
				{"PutRequest":{"Item":{"Artist":{"S":"C"},"SongTitle":{"S":"s3"},"Album":{"S":"x"}}}},
				{"putRequest":{"item":["Artist","SongTitle"]}}]}}`)),
			want: []string{"Music||A|s1|write", "Music||B|s2|write", "Music||C|s3|write", "Music||||write"},
		},
		{
			name: "TransactGetItems mixed spellings",
			in: records(ev("TransactGetItems", `{"requestItems":[
				{"tableName":"Music","key":{"Artist":"A","SongTitle":"s1"}},
				{"TableName":"Orders","Key":{"order":"o-1"}}]}`)),
			want: []string{"Music||A|s1|read|2u", "Orders||o-1||read|2u"},
		},
		{
			name: "Query on an index with a schema counts the index partition key",
			in:   records(ev("Query", `{"tableName":"Orders","indexName":"byCustomer","key":{"customer":"C-1","date":"2026"}}`)),
			want: []string{"Orders|byCustomer|C-1||read"},
		},
		{
			name: "Query on a base table ignores the sort key condition",
			in:   records(ev("Query", `{"tableName":"Music","key":{"Artist":"A","SongTitle":"s"}}`)),
			want: []string{"Music||A||read"},
		},
		{
			// Without a schema, the attribute the key condition compares
			// with a range operator is the sort key: the other one is the
			// partition key.
			name: "Query without a schema tells the partition key from the condition",
			in: records(
				ev("Query", `{"tableName":"NoSchema","key":{"p":"P1","s":"2026-"},"keyConditionExpression":"#p = :p AND begins_with(#s, :s)","expressionAttributeNames":{"#p":"p","#s":"s"}}`),
				ev("Query", `{"tableName":"NoSchema","key":{"p":"P2","s":"1"},"keyConditionExpression":"p = :p and s BETWEEN :a AND :b"}`),
				ev("Query", `{"tableName":"NoSchema","key":{"p":"P3","s":"1"},"keyConditionExpression":"s >= :s AND p = :p"}`),
				ev("Query", `{"tableName":"NoSchema","key":{"p":"P4","s":"1"},"keyConditions":{"p":{"comparisonOperator":"EQ"},"s":{"comparisonOperator":"GT"}}}`),
				ev("Query", `{"tableName":"NoSchema","key":{"p":"P5","s":"1"},"keyConditionExpression":"p = :p AND s = :s"}`)),
			want: []string{"NoSchema||P1||read", "NoSchema||P2||read", "NoSchema||P3||read", "NoSchema||P4||read", "NoSchema||p=P5,s=1||read"},
		},
		{
			name: "Scan on an index",
			in:   records(ev("Scan", `{"tableName":"Orders","indexName":"byCustomer","limit":5}`)),
			want: []string{"Orders|byCustomer|||read"},
		},
		{
			name: "throttling codes mark every item throttled",
			in: records(
				ev("GetItem", `{"tableName":"Orders","key":{"order":"o-1"}}`, `"errorCode":"ProvisionedThroughputExceededException"`),
				ev("PutItem", `{"tableName":"Orders","key":{"order":"o-2"}}`, `"errorCode":"ThrottlingException"`),
				ev("BatchGetItem", `{"requestItems":{"Orders":{"keys":[{"order":"o-3"},{"order":"o-4"}]}}}`, `"errorCode":"RequestLimitExceeded"`)),
			want: []string{"Orders||o-1||read|throttled", "Orders||o-2||write|throttled",
				"Orders||o-3||read|throttled|TableReadAccountLimitExceeded", "Orders||o-4||read|throttled|TableReadAccountLimitExceeded"},
		},
		{
			// CloudTrail keeps the exception's message, not its
			// ThrottlingReasons: the reasons the message names are read,
			// and each item takes the one of its class and resource.
			name: "a reason named in the message",
			in: records(
				ev("PutItem", `{"tableName":"Orders","key":{"order":"o-1"}}`, `"errorCode":"ProvisionedThroughputExceededException"`,
					`"errorMessage":"Throughput exceeds the limit (TableWriteKeyRangeThroughputExceeded)"`),
				ev("GetItem", `{"tableName":"Orders","key":{"order":"o-2"}}`, `"errorCode":"ProvisionedThroughputExceededException"`,
					`"errorMessage":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."`),
				ev("ExecuteTransaction", `{"transactStatements":[{"statement":"UPDATE Orders SET n = 2 WHERE order = 'o-3'"}]}`,
					`"errorCode":"ThrottlingException"`, `"errorMessage":"IndexWriteMaxOnDemandThroughputExceeded"`),
				// The first reason named is not the item's: the second is.
				ev("PutItem", `{"tableName":"Orders","key":{"order":"o-4"}}`, `"errorCode":"ProvisionedThroughputExceededException"`,
					`"errorMessage":"TableReadProvisionedThroughputExceeded, TableWriteProvisionedThroughputExceeded"`),
				ev("GetItem", `{"tableName":"Orders","key":{"order":"o-5"}}`, `"errorCode":"ProvisionedThroughputExceededException"`,
					`"errorMessage":"TableWriteKeyRangeThroughputExceeded; TableReadKeyRangeThroughputExceeded"`),
				// A read of an index is throttled by the index.
				ev("Query", `{"tableName":"Orders","indexName":"byCustomer","key":{"customer":"C-1"}}`, `"errorCode":"ProvisionedThroughputExceededException"`,
					`"errorMessage":"TableReadKeyRangeThroughputExceeded IndexReadKeyRangeThroughputExceeded"`),
				// Two reasons that both fit a write (its table's and an
				// index's): counted throttled, the reason unknown.
				ev("PutItem", `{"tableName":"Orders","key":{"order":"o-6"}}`, `"errorCode":"ProvisionedThroughputExceededException"`,
					`"errorMessage":"TableWriteKeyRangeThroughputExceeded, IndexWriteProvisionedThroughputExceeded"`)),
			want: []string{"Orders||o-1||write|throttled|TableWriteKeyRangeThroughputExceeded", "Orders||o-2||read|throttled",
				"Orders||o-3||write|throttled|IndexWriteMaxOnDemandThroughputExceeded|2u",
				"Orders||o-4||write|throttled|TableWriteProvisionedThroughputExceeded",
				"Orders||o-5||read|throttled|TableReadKeyRangeThroughputExceeded",
				"Orders|byCustomer|C-1||read|throttled|IndexReadKeyRangeThroughputExceeded",
				"Orders||o-6||write|throttled"},
		},
		{
			// A reason no item of the call can have: not what DynamoDB
			// said. Refused, as a JSON line's reason of the other class.
			name: "a reason that cannot be the call's is refused",
			in: records(
				ev("PutItem", `{"tableName":"Orders","key":{"order":"o-1"}}`, `"errorCode":"ProvisionedThroughputExceededException"`,
					`"errorMessage":"TableReadKeyRangeThroughputExceeded"`),
				ev("GetItem", `{"tableName":"Orders","key":{"order":"o-2"}}`, `"errorCode":"ProvisionedThroughputExceededException"`,
					`"errorMessage":"IndexReadProvisionedThroughputExceeded"`),
				ev("ExecuteTransaction", `{"transactStatements":[{"statement":"UPDATE Orders SET n = 2 WHERE order = 'o-3'"}]}`,
					`"errorCode":"ThrottlingException"`, `"errorMessage":"IndexReadMaxOnDemandThroughputExceeded"`)),
			rejected: []string{"bad_throttle_reason", "bad_throttle_reason", "bad_throttle_reason"},
		},
		{
			// DynamoDB's limits: 25 requests in a BatchWriteItem, 100 keys
			// in a BatchGetItem, 100 items in a transaction, 25 statements
			// in a BatchExecuteStatement, 100 in an ExecuteTransaction.
			name: "calls larger than DynamoDB accepts are refused whole",
			in: records(
				ev("BatchWriteItem", `{"requestItems":{"Orders":[`+repeat(`{"deleteRequest":{"key":{"order":"w"}}}`, 20)+`],"Music":[`+repeat(`{"deleteRequest":{"key":{"Artist":"a","SongTitle":"s"}}}`, 6)+`]}}`),
				ev("BatchWriteItem", `{"requestItems":{"Orders":[`+repeat(`{"deleteRequest":{"key":{"order":"ok"}}}`, 25)+`]}}`),
				ev("BatchGetItem", `{"requestItems":{"Orders":{"keys":[`+repeat(`{"order":"g"}`, 60)+`]},"Music":{"keys":[`+repeat(`{"Artist":"a","SongTitle":"s"}`, 41)+`]}}}`),
				ev("TransactWriteItems", `{"requestItems":[`+repeat(`{"tableName":"Orders","key":{"order":"t"}}`, 101)+`]}`),
				ev("TransactGetItems", `{"requestItems":[`+repeat(`{"tableName":"Orders","key":{"order":"t"}}`, 101)+`]}`),
				ev("BatchExecuteStatement", `{"statements":[`+repeat(`{"statement":"DELETE FROM Orders WHERE order = 'b'"}`, 26)+`]}`),
				ev("ExecuteTransaction", `{"transactStatements":[`+repeat(`{"statement":"DELETE FROM Orders WHERE order = 'x'"}`, 101)+`]}`)),
			want:     strings.Split(strings.TrimSuffix(strings.Repeat("Orders||ok||write\n", 25), "\n"), "\n"),
			rejected: []string{"beyond_dynamodb_limits", "beyond_dynamodb_limits", "beyond_dynamodb_limits", "beyond_dynamodb_limits", "beyond_dynamodb_limits", "beyond_dynamodb_limits"},
		},
		{
			// An item without its key is refused alone; the items of the
			// transaction that have theirs were written, and count.
			name: "a transaction's items without a key are refused one by one",
			in: records(ev("TransactWriteItems", `{"requestItems":[
				{"tableName":"Music","key":{"Artist":"A","SongTitle":"s1"}},
				{"tableName":"Music","key":{"SongTitle":"s2"}},
				{"tableName":"Orders","key":{"order":"o-3"}},
				{"tableName":"Music","key":{"Album":"x"}}]}`),
				ev("BatchGetItem", `{"requestItems":{"Music":{"keys":[{"Artist":"B","SongTitle":"s"},{"SongTitle":"s"}]}}}`)),
			want:     []string{"Music||A|s1|write|2u", "Orders||o-3||write|2u", "Music||B|s|read"},
			rejected: []string{"missing_pk", "missing_pk", "missing_pk"},
		},
		{
			name: "a cancelled transaction counts its throttled items only",
			in: records(ev("TransactWriteItems", `{"requestItems":[
				{"operation":"Put","tableName":"Orders","key":{"order":"o-1"}},
				{"operation":"Update","tableName":"Orders","key":{"order":"o-2"}}]}`,
				`"errorCode":"TransactionCanceledException"`,
				`"errorMessage":"Transaction cancelled, please refer cancellation reasons for specific reasons [None, ThrottlingError]"`)),
			want: []string{"Orders||o-2||write|throttled|2u"},
		},
		{
			name: "other failed calls are neither traffic nor throttled",
			in: records(
				ev("PutItem", `{"tableName":"Orders","key":{"order":"o-1"}}`, `"errorCode":"ConditionalCheckFailedException"`),
				ev("GetItem", `{"tableName":"Orders","key":{"order":"o-1"}}`, `"errorCode":"ValidationException"`),
				ev("TransactWriteItems", `{"requestItems":[]}`, `"errorCode":"TransactionCanceledException"`, `"errorMessage":"[ConditionalCheckFailed]"`)),
			failed: 3,
		},
		{
			name: "control-plane and other services are ignored, CreateTable teaches the schema",
			in: records(
				`{"eventTime":"2026-11-22T10:00:00Z","eventSource":"s3.amazonaws.com","eventName":"GetObject","requestParameters":{}}`,
				ev("CreateTable", `{"tableName":"New","keySchema":[{"attributeName":"h","keyType":"HASH"},{"attributeName":"r","keyType":"RANGE"}],
					"globalSecondaryIndexes":[{"indexName":"gsi","keySchema":[{"attributeName":"r","keyType":"HASH"}]}]}`),
				ev("DescribeTable", `{"tableName":"New"}`),
				ev("GetItem", `{"tableName":"New","key":{"r":"R1","h":"H1"}}`),
				ev("Query", `{"tableName":"New","indexName":"gsi","key":{"r":"R1","h":"H1"}}`)),
			want: []string{"New||H1|R1|read", "New|gsi|R1||read"},
		},
		{
			name: "PartiQL",
			in: records(
				ev("ExecuteStatement", `{"statement":"SELECT * FROM \"Orders\".\"byCustomer\" WHERE customer = 'C-1' AND total > 5"}`),
				ev("ExecuteStatement", `{"statement":"delete from Orders where order = 'o-1' or order = 'o-2'"}`),
				ev("ExecuteStatement", `{"statement":"UPDATE Orders SET x = 1 WHERE order = ?"}`),
				ev("ExecuteStatement", `{"statement":"INSERT INTO Music VALUE {'Artist' : 'It''s Me', 'SongTitle' : 7, 'Album' : ***(Redacted)}"}`),
				ev("ExecuteStatement", `{"statement":"SELECT * FROM Unknown WHERE id = 'x'"}`),
				ev("ExecuteTransaction", `{"transactStatements":[
					{"statement":"EXISTS(SELECT * FROM Orders WHERE order = 'o-9')"},
					{"statement":"UPDATE Orders SET n = 2 WHERE (order = 'o-9') RETURNING ALL NEW *"}]}`)),
			want: []string{"Orders|byCustomer|C-1||read", "Orders||||write", "Orders||||write", "Music||It's Me|7|write",
				"Unknown||||read", "Orders||o-9||read|2u", "Orders||o-9||write|2u"},
		},
		{
			name: "bad records are rejected, the others kept",
			in: records(
				ev("GetItem", `{"tableName":"Music","key":{"SongTitle":"no artist"}}`),
				ev("GetItem", `{"key":{"order":"o-1"}}`),
				ev("GetItem", `{"tableName":"Orders"}`),
				ev("GetItem", `{"tableName":"Orders","key":"o-1"}`),
				ev("GetItem", `"nope"`),
				ev("ExecuteStatement", `{"statement":"GRANT ALL"}`),
				ev("BatchGetItem", `{"requestItems":{"Orders":{"keys":"o-1"}}}`),
				`{"eventTime":"yesterday","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"Orders","key":{"order":"o-1"}}}`,
				ev("GetItem", `{"tableName":"Orders","key":{"order":""}}`),
				ev("GetItem", `{"tableName":"Solo","key":{"id":{"S":""}}}`),
				ev("GetItem", `{"tableName":"Orders","key":{"order":"ok"}}`)),
			want:     []string{"Orders||ok||read"},
			rejected: []string{"missing_pk", "missing_table", "missing_pk", "bad_type", "bad_record", "bad_op", "bad_record", "bad_time", "missing_pk", "missing_pk"},
		},
		{
			// A call naming such a table would have failed: the record
			// is not one CloudTrail wrote.
			name: "table names DynamoDB would refuse are rejected, ARNs are names",
			in: records(
				ev("GetItem", `{"tableName":"ab","key":{"order":"o-1"}}`),
				ev("GetItem", `{"tableName":"my table","key":{"order":"o-1"}}`),
				ev("Query", `{"tableName":"Orders","indexName":"by customer","key":{"customer":"C-1"}}`),
				ev("BatchGetItem", `{"requestItems":{"Orders":{"keys":[{"order":"o-2"}]},"x":{"keys":[{"order":"o-3"}]}}}`),
				ev("ExecuteStatement", `{"statement":"SELECT * FROM \"a\" WHERE order = 'o-4'"}`),
				ev("GetItem", `{"tableName":"arn:aws:dynamodb:us-east-1:111122223333:table/Orders","key":{"order":"o-5"}}`),
				ev("BatchWriteItem", `{"requestItems":{"arn:aws:dynamodb:us-east-1:111122223333:table/Orders":[{"deleteRequest":{"key":{"order":"o-6"}}}]}}`)),
			want:     []string{"Orders||o-2||read", "Orders||o-5||read", "Orders||o-6||write"},
			rejected: []string{"bad_table", "bad_table", "bad_table", "bad_table", "bad_table"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, st, col := decodeString(t, c.in, music)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("events:\n got %q\nwant %q", got, c.want)
			}
			var reasons []string
			for _, r := range col.rejected {
				reasons = append(reasons, strings.Fields(r)[1][:len(strings.Fields(r)[1])-1])
			}
			if strings.Join(reasons, ",") != strings.Join(c.rejected, ",") {
				t.Errorf("rejected %q, want reasons %q", col.rejected, c.rejected)
			}
			if st.Failed != c.failed {
				t.Errorf("failed = %d, want %d", st.Failed, c.failed)
			}
			if st.Rejected != uint64(len(c.rejected)) {
				t.Errorf("stats rejected = %d, want %d", st.Rejected, len(c.rejected))
			}
		})
	}
}

// TestDecodeWholeKeyWithoutSchema checks that a several-attribute key of a
// table without a schema counts whole, in a canonical form, and that the
// missing schema is logged once per table.
func TestDecodeWholeKeyWithoutSchema(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	d := NewDecoder(nil, zap.New(core), nil)
	col := &collector{}
	in := records(
		ev("GetItem", `{"tableName":"Tbl","key":{"z":"1","a":"x"}}`),
		ev("GetItem", `{"tableName":"Tbl","key":{"a":"x","z":"1"}}`),
		ev("GetItem", `{"tableName":"Ubl","key":{"k":"v","n":2}}`),
		ev("Query", `{"tableName":"Tbl","indexName":"idx","key":{"g":"G"}}`))
	for i := 0; i < 2; i++ {
		if _, err := d.Decode(context.Background(), strings.NewReader(in), "f", col); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, e := range col.events[:4] {
		got = append(got, short(e))
	}
	want := []string{"Tbl||a=x,z=1||read", "Tbl||a=x,z=1||read", "Ubl||k=v,n=2||read", "Tbl|idx|G||read"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q", got, want)
	}
	st, err := d.Decode(context.Background(), strings.NewReader(in), "f", col)
	if err != nil || strings.Join(st.NoSchema, " ") != "Tbl Ubl" {
		t.Errorf("NoSchema %q (%v), want Tbl and Ubl", st.NoSchema, err)
	}
	if n := logs.FilterMessageSnippet("no key schema").Len(); n != 2 {
		t.Errorf("%d missing-schema warnings over two inputs, want 2 (one per table): %v", n, logs.All())
	}
}

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func getItem(pk string) string { return ev("GetItem", `{"tableName":"Tbl","key":{"id":"`+pk+`"}}`) }

func envelope(rec string) string {
	return `{"version":"0","detail-type":"AWS API Call via CloudTrail","source":"aws.dynamodb","detail":` + rec + `}`
}

func TestDecodeContainers(t *testing.T) {
	two := records(getItem("a"), getItem("b"))
	cases := []struct {
		name     string
		in       []byte
		want     string
		rejected []string
	}{
		{"plain Records", []byte(two), "a b", nil},
		{"gzip Records", gz(t, two), "a b", nil},
		{"two gzip members", append(gz(t, two), gz(t, records(getItem("c")))...), "a b c", nil},
		{"pretty Records with a BOM", []byte("\ufeff{\n  \"Records\" : [\n    " + getItem("a") + ",\n    " + getItem("b") + "\n  ]\n}\n"), "a b", nil},
		{"Records not first", []byte(`{"x":{"y":[1]},"Records":[` + getItem("a") + `]}`), "a", nil},
		{"members after Records", []byte(`{"Records":[` + getItem("a") + `],"z":{"q":"]}"}}` + "\n" + two), "a a b", nil},
		{"envelopes one per line", []byte(envelope(getItem("a")) + "\n" + envelope(getItem("b")) + "\r\n\n" + getItem("c") + "\n"), "a b c", nil},
		{"a JSON array of envelopes and events", []byte("[\n" + envelope(getItem("a")) + ",\n" + getItem("b") + "\n]"), "a b", nil},
		{"truncated line, then good lines", []byte(envelope(getItem("a"))[:60] + "\n" + envelope(getItem("b")) + "\n"), "b", []string{"bad_json"}},
		{"raw newline inside a string", []byte(`{"detail-type":"x` + "\n" + envelope(getItem("b")) + "\n"), "b", []string{"bad_json"}},
		{"garbage line", []byte("hello world\n" + getItem("a") + "\n"), "a", []string{"bad_json"}},
		{"invalid JSON record", []byte(`{"Records":[{"eventSource":dynamodb},` + getItem("a") + `]}`), "a", []string{"bad_json"}},
		{"non-object records", []byte(`{"Records":[1,"s",[2,[3]],null,` + getItem("a") + `]}`), "a", []string{"bad_record", "bad_record", "bad_record", "bad_record"}},
		{"deep nesting", []byte(`{"Records":[{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `},` + getItem("a") + `]}`), "a", []string{"bad_json"}},
		{"Records not an array", []byte(`{"x":1,"Records":{}}`), "", []string{"bad_type"}},
		{"detail not an object", []byte(`{"detail-type":"x","detail":"y"}`), "", []string{"bad_type"}},
		{"truncated Records", []byte(two[:len(two)-40]), "a", []string{"bad_file"}},
		{"truncated after the last record", []byte(two[:len(two)-2]), "a b", []string{"bad_file"}},
		{"bad separator", []byte(`{"Records":[` + getItem("a") + ` x ` + getItem("b") + `]}`), "a", []string{"bad_file"}},
		{"truncated gzip", truncatedGzip(t), "a b c", []string{"bad_file"}},
		{"corrupt gzip header", []byte{0x1f, 0x8b, 0, 0}, "", []string{"bad_file"}},
		{"empty", nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			col := &collector{}
			st, err := Decode(context.Background(), bytes.NewReader(c.in), "f.json.gz", nil, col, col)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			seen := map[string]bool{}
			var got []string
			for _, e := range col.events {
				// The truncated gzip case yields a prefix of the c records.
				if e.PK == "c" && seen["c"] {
					continue
				}
				seen[e.PK] = true
				got = append(got, e.PK)
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("keys %q, want %q", strings.Join(got, " "), c.want)
			}
			var reasons []string
			for _, r := range col.rejected {
				f := strings.Fields(r)
				reasons = append(reasons, strings.TrimSuffix(f[1], ":"))
				if !strings.Contains(r, "f.json.gz") {
					t.Errorf("rejection %q does not name the file", r)
				}
			}
			if strings.Join(reasons, ",") != strings.Join(c.rejected, ",") {
				t.Errorf("rejected %q, want %q", col.rejected, c.rejected)
			}
			if st.Rejected != uint64(len(c.rejected)) {
				t.Errorf("stats rejected %d, want %d", st.Rejected, len(c.rejected))
			}
		})
	}
}

func TestDecodeTooLong(t *testing.T) {
	col := &collector{}
	d := NewDecoder(nil, nil, col)
	d.maxRecord = 4096
	big := ev("GetItem", `{"tableName":"Tbl","key":{"id":"x"},"pad":"`+strings.Repeat("x", d.maxRecord)+`"}`)
	in := records(getItem("a"), big, getItem("b")) + "\n" + envelope(big) + "\n" + envelope(getItem("c"))
	st, err := d.Decode(context.Background(), strings.NewReader(in), "f", col)
	if err != nil {
		t.Fatal(err)
	}
	if st.Events != 3 || st.Rejected != 2 || !strings.Contains(col.rejected[0], "too_long") || !strings.Contains(col.rejected[1], "too_long") {
		t.Errorf("stats %+v rejected %q: want 3 events and two too_long", st, col.rejected)
	}
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n > 0 {
		s := records(getItem("a"))
		f.n = 0
		return copy(p, s[:len(s)-5]), nil
	}
	return 0, errors.New("disk on fire")
}

func TestDecodeErrors(t *testing.T) {
	// A failing reader is an error, not a rejection.
	col := &collector{}
	_, err := Decode(context.Background(), &failingReader{n: 1}, "f", nil, col, col)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || !strings.Contains(err.Error(), "read f") {
		t.Errorf("err = %v, want the read error naming the file", err)
	}
	// A sink that refuses stops the decoding with its error.
	refuse := errors.New("pipeline stopped")
	sink := traffic.SinkFunc(func(context.Context, []traffic.Event) error { return refuse })
	in := records(strings.Repeat(getItem("a")+",", 2*batchSize) + getItem("b"))
	_, err = Decode(context.Background(), strings.NewReader(in), "f", nil, sink, nil)
	if !errors.Is(err, refuse) {
		t.Errorf("err = %v, want the sink's", err)
	}
	// A cancelled context stops it too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Decode(ctx, strings.NewReader(in), "f", nil, col, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestDecodeBatches(t *testing.T) {
	var sizes []int
	sink := traffic.SinkFunc(func(_ context.Context, b []traffic.Event) error {
		sizes = append(sizes, len(b))
		return nil
	})
	in := records(strings.Repeat(getItem("a")+",", batchSize+9) + getItem("b"))
	st, err := Decode(context.Background(), strings.NewReader(in), "f", nil, sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int{batchSize, 10}) || st.Events != batchSize+10 {
		t.Errorf("batches %v, events %d", sizes, st.Events)
	}
}

func TestSniff(t *testing.T) {
	yes := map[string][]byte{
		"Records":          []byte("  {\n \"Records\" : [ {"),
		"envelope":         []byte(envelope(getItem("a"))),
		"bare event":       []byte(getItem("a")),
		"array":            []byte("[\n  " + envelope(getItem("a"))),
		"gzip":             gz(t, records(getItem("a"))),
		"gzip prefix only": gz(t, records(getItem("a")))[:30],
	}
	no := map[string][]byte{
		"jsonl access log": []byte(`{"ts":"2026-11-22T10:00:00.123Z","table":"orders","pk":"USER#1","op":"GetItem"}` + "\n"),
		"gzip jsonl":       gz(t, `{"ts":"2026-11-22T10:00:00.123Z","table":"orders","pk":"USER#1","op":"GetItem"}`+"\n"),
		"text":             []byte("hello"),
		"empty":            nil,
	}
	for name, b := range yes {
		if !Sniff(b) {
			t.Errorf("Sniff(%s) = false", name)
		}
	}
	for name, b := range no {
		if Sniff(b) {
			t.Errorf("Sniff(%s) = true", name)
		}
	}
}

var _ io.Reader = (*failingReader)(nil)

// truncatedGzip is a gzip Records file cut in the middle of its c records.
func truncatedGzip(t testing.TB) []byte {
	var recs []string
	for i := 0; i < 500; i++ {
		recs = append(recs, ev("GetItem", fmt.Sprintf(`{"tableName":"Tbl","key":{"id":"c"},"n":%d,"pad":%q}`, i, strings.Repeat(fmt.Sprint(i*7919%1000), i%13))))
	}
	b := gz(t, records(getItem("a"), getItem("b"), strings.Join(recs, ","), getItem("d")))
	return b[:len(b)/2]
}

// maskingCollector is a collector whose Reporter masks input as the
// daemon's does under keys: redact.
type maskingCollector struct{ collector }

func (*maskingCollector) Mask(string) string { return "<redacted>" }

// TestRejectionsMaskQuotedInput checks every rejection that quotes a
// record's content: under a masking Reporter the content is masked.
func TestRejectionsMaskQuotedInput(t *testing.T) {
	const key = "SECRETKEY4242"
	col := &maskingCollector{}
	in := records(
		ev("ExecuteStatement", `{"statement":"UPSERT 'USER#`+key+`' INTO orders"}`),
		`{"eventTime":"`+key+`","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"id":"a"}}}`)
	if _, err := Decode(context.Background(), strings.NewReader(in), "f", nil, col, col); err != nil {
		t.Fatal(err)
	}
	if len(col.rejected) != 2 {
		t.Fatalf("rejected %q, want 2", col.rejected)
	}
	for _, r := range col.rejected {
		if strings.Contains(r, key) || !strings.Contains(r, `"<redacted>"`) {
			t.Errorf("rejection %q: want the input masked", r)
		}
	}
	// fastjson quotes the input it could not parse.
	var p fastjson.Parser
	_, err := p.Parse(`{"key":{"id":"` + key + `"}, x}`)
	if got := parseError(err, col).Error(); strings.Contains(got, key) || !strings.Contains(got, `unparsed tail: "<redacted>"`) {
		t.Errorf("parse error %q: want its tail masked", got)
	}
}

// TestOperationsAgree holds the CloudTrail reader's table of data calls to
// ingest's: every item call it reads has the class ingest gives it, and
// every call ingest knows is read; only PartiQL calls (classed by their
// statements' verbs) are the reader's own.
func TestOperationsAgree(t *testing.T) {
	statements := map[string]bool{"ExecuteStatement": true, "BatchExecuteStatement": true, "ExecuteTransaction": true}
	for name := range shapes {
		_, known := traffic.LookupOperation(name)
		if known == statements[name] {
			t.Errorf("%s: known to ingest %v, a PartiQL call %v", name, known, statements[name])
		}
	}
	for _, name := range []string{"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"} {
		op, _ := traffic.LookupOperation(name)
		_, class, ok := operation([]byte(name))
		if !ok || class != op.Class {
			t.Errorf("%s: read %v as %v, ingest says %v", name, ok, class, op.Class)
		}
	}
	if _, class, _ := operation([]byte("TransactWriteItems")); class != traffic.Write {
		t.Errorf("TransactWriteItems read as %v, want a write", class)
	}
}
