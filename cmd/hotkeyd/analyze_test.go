package main

import (
	"os"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/hotkeyd/hotkeyd/ingest"
)

func writeGzip(t testing.TB, path string, data []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestKeySchemas(t *testing.T) {
	got, err := keySchemas(map[string]ingest.KeySchema{"Music": {PartitionKey: "Artist"}, "orders": {PartitionKey: "x"}},
		[]string{"orders=PK,SK", "sessions=id"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ingest.KeySchema{
		"Music":    {PartitionKey: "Artist"},
		"orders":   {PartitionKey: "PK", SortKey: "SK"},
		"sessions": {PartitionKey: "id"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %+v, want %+v", k, got[k], v)
		}
	}
	for _, bad := range []string{"orders", "=PK", "orders=", "orders=a,b,c"} {
		if _, err := keySchemas(nil, []string{bad}); err == nil {
			t.Errorf("--key-schema %q accepted", bad)
		}
	}
}
