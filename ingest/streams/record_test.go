package streams

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

var record = flag.Bool("record", false, "record testdata/getrecords-1000.json from DynamoDB Local")

// recordedResponse is a raw GetRecords answer of 1000 records recorded from
// DynamoDB Local (NEW_IMAGE view, skewed keys), for the benchmarks.
const recordedResponse = "getrecords-1000.json"

// TestRecordGetRecords records the benchmark's GetRecords answer:
//
//	go test -run TestRecordGetRecords -record ./ingest/streams
func TestRecordGetRecords(t *testing.T) {
	if !*record {
		t.Skip("run with -record to record " + recordedResponse)
	}
	d := testenv.DynamoDBLocal(t)
	ctx := context.Background()
	createTable(t, d, tableSpec{name: "orders", hash: "customer", hashType: ddbtypes.ScalarAttributeTypeS,
		rng: "order", rngType: ddbtypes.ScalarAttributeTypeN, view: ddbtypes.StreamViewTypeNewImage})
	rnd := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rnd, 1.2, 1, 5000)
	for i := range 1000 {
		if _, err := d.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]ddbtypes.AttributeValue{
			"customer":  &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("CUSTOMER#%d", zipf.Uint64())},
			"order":     &ddbtypes.AttributeValueMemberN{Value: fmt.Sprintf("%d.%02d", 1_700_000_000+i, i%100)},
			"status":    &ddbtypes.AttributeValueMemberS{Value: []string{"NEW", "PAID", "SHIPPED"}[i%3]},
			"amount":    &ddbtypes.AttributeValueMemberN{Value: fmt.Sprintf("%d.%d", rnd.IntN(1000), rnd.IntN(100))},
			"updatedAt": &ddbtypes.AttributeValueMemberS{Value: "2026-11-23T10:00:00Z"},
			"lines":     &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{&ddbtypes.AttributeValueMemberS{Value: "SKU-1"}, &ddbtypes.AttributeValueMemberN{Value: "2"}}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	dt, err := d.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	arn := dt.Table.LatestStreamArn
	ds, err := d.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})
	if err != nil {
		t.Fatal(err)
	}
	it, err := d.Streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn,
		ShardId: ds.StreamDescription.Shards[0].ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	// A raw call, to keep the exact bytes DynamoDB Local answered.
	req, _ := http.NewRequest(http.MethodPost, d.Endpoint, strings.NewReader(fmt.Sprintf(`{"ShardIterator":%q,"Limit":1000}`, *it.ShardIterator)))
	req.Header.Set("X-Amz-Target", "DynamoDBStreams_20120810.GetRecords")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=hotkeyd/20261123/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", resp.Status, body)
	}
	if err := os.WriteFile(filepath.Join("testdata", recordedResponse), body, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d bytes", len(body))
}
