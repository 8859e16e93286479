package streams

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/internal/awslog"
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

// newClients builds the SDK clients from the default credential chain,
// cfg.Region and cfg.Endpoint. The SDK's own retries are turned off: the
// reader retries every call itself, with backoff per error kind, so that a
// throttled or unreachable endpoint shows in its metrics and readiness at
// once instead of after the SDK's hidden attempts.
//
// The SDK's own log lines go to log at debug level (package awslog).
func newClients(ctx context.Context, cfg Config, log *zap.Logger) (*dynamodbstreams.Client, *dynamodb.Client, error) {
	awsCfg, err := shards.AWSConfig(ctx, cfg.Region, awsconfig.WithLogger(awslog.New(log)))
	if err != nil {
		return nil, nil, err
	}
	sc := dynamodbstreams.NewFromConfig(awsCfg, func(o *dynamodbstreams.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	dc := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return sc, dc, nil
}
