package streams

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hotkeyd/hotkeyd/ingest/internal/ingesttest"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// deniedTables is the real DynamoDB Local client with DescribeTable
// refused, as AWS refuses it to a role without dynamodb:DescribeTable:
// DynamoDB Local enforces no permissions, so the fault is made here.
type deniedTables struct{ *dynamodb.Client }

func (deniedTables) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "User: arn:aws:sts::111122223333:assumed-role/hotkeyd/i-1 is not authorized to perform: dynamodb:DescribeTable"}
}

// testDescribeTableRefused reads a stream named by ARN whose table has a
// status index, with DescribeTable refused: the refusal is logged once,
// with what it costs, and counted; the table's writes are read all the
// same. With the index declared in the config, its writes are counted
// too, from the records' images.
func testDescribeTableRefused(t *testing.T, d *testenv.DDBLocal) {
	ctx := context.Background()
	const table = "dt_denied"
	if _, err := d.DB.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("status"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("by-status"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("status"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	}); err != nil {
		t.Fatal(err)
	}
	desc, err := d.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	put := func(from, n int) {
		for i := from; i < from+n; i++ {
			if _, err := d.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
				"pk":     &types.AttributeValueMemberS{Value: "k" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)},
				"status": &types.AttributeValueMemberS{Value: "PENDING"},
			}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 10)
	for _, declared := range []bool{false, true} {
		cfg := fastConfig()
		cfg.StreamARNs = []string{aws.ToString(desc.Table.LatestStreamArn)}
		if declared {
			cfg.Schemas = map[string]traffic.KeySchema{table: {PartitionKey: "pk", Indexes: map[string]traffic.IndexSchema{
				"by-status": {PartitionKey: "status", Projection: traffic.Projection{Type: traffic.ProjectKeysOnly}},
			}}}
		}
		r := start(t, cfg, d.Streams, deniedTables{d.DB})
		tableWrites := func() int {
			n := 0
			for _, e := range r.sink.Events() {
				if e.Table == table && e.Index == "" {
					n++
				}
			}
			return n
		}
		ingesttest.WaitFor(t, ingesttest.Eventually, "the table's 10 writes", func() bool { return tableWrites() == 10 })
		ingesttest.WaitFor(t, ingesttest.Eventually, "the refusal counted", func() bool {
			return testutil.ToFloat64(r.src.known.Describer.Errors("dynamodb-streams", table, "access_denied")) >= 1
		})
		r.stop(t)
		if n := r.logged("describe table refused"); n != 1 {
			t.Errorf("declared %v: %d log lines of the refusal, want one", declared, n)
		}
		msgs := r.logs.FilterMessageSnippet("describe table refused").All()
		if len(msgs) == 1 && !strings.Contains(msgs[0].Message, "reading on") {
			t.Errorf("the refusal's log line does not say reading goes on: %q", msgs[0].Message)
		}
		var index int
		for _, e := range r.sink.Events() {
			if e.Index == "by-status" {
				index++
			}
		}
		if want := map[bool]int{false: 0, true: 10}[declared]; index != want {
			t.Errorf("declared %v: %d index writes, want %d", declared, index, want)
		}
	}
}
