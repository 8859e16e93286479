package streams

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// replayServer is a DynamoDB Streams endpoint that answers from recorded
// bodies, so that the real SDK client (serializer, deserializer, error
// decoding) runs against shapes the emulator cannot produce: several shards
// with a lineage, AWS's own sample records.
type replayServer struct {
	*httptest.Server
	// describe maps ExclusiveStartShardId ("" for the first page) to a
	// DescribeStream body.
	describe map[string][]byte
	// records answers GetRecords for an iterator.
	records func(iterator string) []byte
	// iterator answers GetShardIterator.
	iterator func(in map[string]string) string

	mu    sync.Mutex
	calls map[string]int
}

func newReplayServer(t testing.TB) *replayServer {
	rs := &replayServer{calls: map[string]int{}}
	rs.Server = httptest.NewServer(http.HandlerFunc(rs.serve))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *replayServer) serve(w http.ResponseWriter, req *http.Request) {
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDBStreams_20120810.")
	rs.mu.Lock()
	rs.calls[op]++
	rs.mu.Unlock()
	body, _ := io.ReadAll(req.Body)
	var in map[string]string
	_ = json.Unmarshal(body, &in) // Limit is a number and lands as ""; unused
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	switch op {
	case "DescribeStream":
		b, ok := rs.describe[in["ExclusiveStartShardId"]]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"no such page"}`)
			return
		}
		_, _ = w.Write(b)
	case "GetShardIterator":
		fmt.Fprintf(w, `{"ShardIterator":%q}`, rs.iterator(in))
	case "GetRecords":
		_, _ = w.Write(rs.records(in["ShardIterator"]))
	default:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"com.amazon.coral.validate#ValidationException","message":"unknown operation %s"}`, op)
	}
}

// client returns a real SDK client for the server, without retries.
func (rs *replayServer) client() *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(rs.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("hotkeyd", "hotkeyd", ""),
		Retryer:      aws.NopRetryer{},
		HTTPClient:   rs.Client(),
	})
}
