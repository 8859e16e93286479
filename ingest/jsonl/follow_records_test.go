package jsonl

import (
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// kinesisLine is a Kinesis Data Streams for DynamoDB payload, as Firehose
// writes them to S3 one per line.
func kinesisLine(id, pk string) string {
	return fmt.Sprintf(`{"awsRegion":"eu-west-1","eventID":%q,"eventName":"INSERT","userIdentity":null,"recordFormat":"application/json","tableName":"orders","dynamodb":{"ApproximateCreationDateTime":1731924555370,"Keys":{"id":{"S":%q}},"SizeBytes":60},"eventSource":"aws:dynamodb"}`+"\n", id, pk)
}

// TestFollowStreamRecords follows files of DynamoDB stream records next
// to an access log: a file's first line says which format it is in.
func TestFollowStreamRecords(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	records := streamrecord.NewDumpDecoder(streamrecord.DumpConfig{Source: SourceName, Reporter: rec})
	h := startFollow(t, dir, Config{Paths: []string{filepath.Join(dir, "*")}, Options: Options{Records: records}})
	firehose := filepath.Join(dir, "firehose-1")
	appendFile(t, firehose, kinesisLine("u1", "a")+kinesisLine("u2", "b"))
	h.waitPKs("a", "b")
	// A bad record between good ones; a record read twice; a line cut
	// short and completed by the next write.
	appendFile(t, firehose, kinesisLine("u3", "c")+`{"tableName":"orders","dynamodb":{"Keys":{"id":5}}}`+"\n"+kinesisLine("u1", "a"))
	whole := kinesisLine("u4", "d")
	appendFile(t, firehose, whole[:40])
	h.settle()
	appendFile(t, firehose, whole[40:])
	h.waitPKs("a", "b", "c", "d")
	// A Lambda event per line, and an access log beside them.
	lambda := `{"Records":[{"eventID":"1","eventName":"INSERT","eventSource":"aws:dynamodb","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/t/stream/s","dynamodb":{"Keys":{"pk":{"S":"e"}},"SequenceNumber":"1","SizeBytes":3000}}]}` + "\n"
	appendFile(t, filepath.Join(dir, "lambda.log"), lambda)
	h.waitPKs("a", "b", "c", "d", "e")
	appendFile(t, filepath.Join(dir, "access.log"), lines("f"))
	h.waitPKs("a", "b", "c", "d", "e", "f")
	// A rotated archive is read whole, once. It appears whole (written
	// beside and renamed into place): the follower reads a finished file
	// once two polls found it unchanged, and a file written in place can
	// stay empty or cut short for two of this test's 2 ms polls when the
	// machine is loaded.
	var gz strings.Builder
	zw := gzip.NewWriter(&gz)
	fmt.Fprint(zw, kinesisLine("u9", "g"))
	zw.Close()
	tmp := filepath.Join(t.TempDir(), "firehose-0.gz")
	if err := os.WriteFile(tmp, []byte(gz.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "firehose-0.gz")); err != nil {
		t.Fatal(err)
	}
	h.waitPKs("a", "b", "c", "d", "e", "f", "g")

	evs := h.sink.snapshot()
	if e := evs[4]; e.Table != "t" || e.Units != 3 || e.Source != SourceName {
		t.Errorf("lambda record: %+v", e)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.rejects) != 1 || rec.rejects[0].reason != traffic.ReasonBadType || !strings.Contains(rec.rejects[0].err.Error(), "firehose-1: line 4") {
		t.Errorf("rejects %+v, want one bad_type on line 4", rec.rejects)
	}
}
