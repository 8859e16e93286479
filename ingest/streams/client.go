package streams

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/internal/awsclient"
)

// StreamsAPI is the part of the DynamoDB Streams client the reader uses.
// *dynamodbstreams.Client implements it; tests wrap it to inject faults.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// TablesAPI is the part of the DynamoDB client the reader uses: finding a
// table's current stream and its key schema.
type TablesAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// newClients builds the SDK clients of cfg.Region and cfg.Endpoint
// (awsclient: the SDK's retries off, its log lines to log).
func newClients(ctx context.Context, cfg Config, log *zap.Logger) (*dynamodbstreams.Client, *dynamodb.Client, error) {
	awsCfg, err := awsclient.Config(ctx, cfg.Region, log)
	if err != nil {
		return nil, nil, err
	}
	sc := dynamodbstreams.NewFromConfig(awsCfg, func(o *dynamodbstreams.Options) { awsclient.Endpoint(&o.BaseEndpoint, cfg.Endpoint) })
	dc := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { awsclient.Endpoint(&o.BaseEndpoint, cfg.Endpoint) })
	return sc, dc, nil
}
