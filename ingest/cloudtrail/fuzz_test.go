package cloudtrail

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// FuzzDecode feeds arbitrary input to the decoder: it must not panic or
// hang, must not fail on input that reads fine, must account for every
// Event and rejection, and must produce only well-formed Events.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"awsdocs-ddb-log-entries.json", "ibm-universal-connectors-dynamodb-filter-test.json", "ibm-universal-connectors-dynamodb-s3sqs-sample.json"} {
		if b, err := os.ReadFile(filepath.Join(samples, name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(records(getItem("a"), ev("BatchWriteItem", `{"requestItems":{"T":[{"deleteRequest":{"key":{"id":"x"}}}]}}`))))
	f.Add([]byte(envelope(getItem("a")) + "\n" + envelope(getItem("b"))[:50] + "\n"))
	f.Add(gz(f, records(getItem("a"))))
	f.Add([]byte(records(ev("Query", `{"tableName":"Q","key":{"p":"1","s":"2"},"keyConditionExpression":"#p = :p AND begins_with(#s, :s) AND s<=x","expressionAttributeNames":{"#p":"p","#s":"s"},"keyConditions":{"p":{"comparisonOperator":"EQ"}}}`))))
	tables := map[string]traffic.KeySchema{"T": {PartitionKey: "id", SortKey: "s"}, "Music": {PartitionKey: "Artist", SortKey: "SongTitle"}}
	f.Fuzz(func(t *testing.T, in []byte) {
		col := &collector{}
		st, err := Decode(context.Background(), bytes.NewReader(in), "fuzz", tables, col, col)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if st.Events+st.Throttled != uint64(len(col.events)) {
			t.Fatalf("stats count %d+%d events, sink got %d", st.Events, st.Throttled, len(col.events))
		}
		if st.Rejected != uint64(len(col.rejected)) {
			t.Fatalf("stats count %d rejected, reporter got %d", st.Rejected, len(col.rejected))
		}
		for _, e := range col.events {
			if e.Table == "" || e.Units != 1 && e.Units != traffic.TransactionalUnits || e.Source != SourceName || e.PK == "" && e.SK != "" {
				t.Fatalf("bad event %+v", e)
			}
			for _, s := range []string{e.Table, e.Index, e.PK, e.SK} {
				if !utf8.ValidString(s) {
					t.Fatalf("invalid UTF-8 in event %+v", e)
				}
			}
		}
	})
}

// FuzzPartiQL checks that any statement text is read without panicking.
func FuzzPartiQL(f *testing.F) {
	f.Add("SELECT * FROM Music WHERE Artist = 'No One You Know' AND SongTitle = 'Call Me Today' AND nonKeyAttr = ***(Redacted)")
	f.Add("INSERT INTO Music VALUE {'Artist' : ***(Redacted), 'SongTitle' : ***(Redacted)}")
	f.Add(`EXISTS(SELECT * FROM "a"."b" WHERE (x = 1) OR y = ?)`)
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parsePartiQL(s)
		if err == nil && st.table == "" {
			t.Fatalf("no error and no table for %q", s)
		}
	})
}
