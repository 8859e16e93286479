package streamrecord

import (
	"os"
	"path/filepath"
	"testing"
)

// samplesDir holds third-party stream records (read-only test inputs).
var samplesDir = filepath.Join("..", "..", "..", "shared", "data", "streams")

// recordedResponse is a GetRecords answer of 1000 records recorded from
// DynamoDB Local by the Streams reader's TestRecordGetRecords, which keeps
// it in its own testdata.
const recordedResponse = "getrecords-1000.json"

// readTestdata reads a recorded answer of the Streams reader's testdata.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "streams", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
