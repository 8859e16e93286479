// Package awsclient builds the AWS SDK configuration every AWS client of
// hotkeyd is made from (DynamoDB Streams, DynamoDB, Kinesis, S3): the
// default credential chain, the source's region, its endpoint, the SDK's
// own retries off and the SDK's log lines through package awslog.
package awsclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/internal/awslog"
)

// Config loads the SDK's configuration from the default credential chain
// and region (region, when set, overrides it). The SDK's retries are off:
// every reader retries its calls itself, with backoff per error kind (the
// stream readers) or at its next poll (S3), so that a throttled or
// unreachable endpoint shows in its metrics and readiness at once instead
// of after the SDK's hidden attempts. The SDK's own log lines go to log at
// debug level (awslog). A client built from it takes the source's
// endpoint with Endpoint.
func Config(ctx context.Context, region string, log *zap.Logger) (aws.Config, error) {
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithLogger(awslog.New(log))}
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS config: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("region: not set in the source nor in AWS_REGION or the shared AWS config")
	}
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	return cfg, nil
}

// Endpoint points a client at a source's endpoint (an emulator, a VPC
// endpoint): set base, its Options' BaseEndpoint, in the client's options,
// where it overrides the environment's AWS_ENDPOINT_URL*. An empty
// endpoint leaves AWS's own (or the environment's).
func Endpoint(base **string, endpoint string) {
	if endpoint != "" {
		*base = aws.String(endpoint)
	}
}
