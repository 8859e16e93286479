package kinesis

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/smithy-go"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/internal/awsclient"
)

// API is the part of the Kinesis client the reader uses. *kinesis.Client
// implements it; tests wrap it to inject the faults the emulator cannot
// make.
type API interface {
	DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, opts ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
	ListShards(ctx context.Context, in *kinesis.ListShardsInput, opts ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)
	GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, opts ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

// newClients builds the Kinesis client of cfg.Region and cfg.Endpoint, and
// with a lease table or describe_tables the DynamoDB client of
// cfg.DynamoDBEndpoint (awsclient: the SDK's retries off, its log lines to
// log).
func newClients(ctx context.Context, cfg Config, log *zap.Logger) (*kinesis.Client, *dynamodb.Client, error) {
	awsCfg, err := awsclient.Config(ctx, cfg.Region, log)
	if err != nil {
		return nil, nil, err
	}
	kc := kinesis.NewFromConfig(awsCfg, func(o *kinesis.Options) { awsclient.Endpoint(&o.BaseEndpoint, cfg.Endpoint) })
	var dc *dynamodb.Client
	if cfg.LeaseTable != "" || cfg.DescribeTables {
		dc = dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { awsclient.Endpoint(&o.BaseEndpoint, cfg.DynamoDBEndpoint) })
	}
	return kc, dc, nil
}

// Reasons for hotkeyd_source_errors_total{source="kinesis"}: few and fixed.
const (
	ReasonExpiredIterator = shards.ReasonExpiredIterator // an iterator older than 5 minutes; re-acquired
	ReasonThrottled       = shards.ReasonThrottled       // ProvisionedThroughputExceeded, LimitExceeded; backed off
	ReasonNotFound        = shards.ReasonNotFound        // stream deleted, unknown shard
	ReasonNetwork         = shards.ReasonNetwork         // endpoint unreachable, connection reset, timeout
	ReasonKMS             = "kms"                        // the stream's KMS key cannot be used
	ReasonCheckpoint      = shards.ReasonCheckpoint      // a checkpoint file could not be read or written
	ReasonAPI             = shards.ReasonAPI             // any other AWS error (validation, access denied, internal)
)

// classify maps an AWS error to one of the Reason* values, by its error
// code (the SDK's exception types carry theirs): a KMS code is ReasonKMS.
func classify(err error) string {
	return shards.ByCode(err, isNetwork, func(code string) string {
		if len(code) > 3 && strings.HasPrefix(code, "KMS") {
			return ReasonKMS
		}
		return ""
	})
}

// isRefused reports whether Kinesis refused a request's parameters:
// InvalidArgumentException (a sequence number of no shard of the stream)
// or ValidationException (one that is not a sequence number). Retrying the
// same request cannot succeed; for an iterator taken at a checkpoint, the
// checkpoint is then moved aside and the shard read from its start.
func isRefused(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "InvalidArgumentException", "ValidationException":
		return true
	}
	return false
}

// isNetwork reports whether err means the endpoint could not be reached or
// the connection broke, as opposed to an answer from the service.
func isNetwork(err error) bool { return shards.IsNetwork(err) }
