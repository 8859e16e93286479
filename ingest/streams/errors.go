package streams

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Reasons for hotkeyd_source_errors_total{source="dynamodb-streams"}. They
// are few and fixed so that the label set stays bounded.
const (
	ReasonExpiredIterator = "expired_iterator" // a shard iterator older than 15 minutes; re-acquired
	ReasonTrimmed         = "trimmed"          // records older than 24 h were trimmed before they were read
	ReasonThrottled       = "throttled"        // LimitExceeded or throttling; backed off
	ReasonNotFound        = "not_found"        // stream disabled, table deleted, unknown shard
	ReasonNetwork         = "network"          // endpoint unreachable, connection reset, timeout
	ReasonNoStream        = "no_stream"        // a configured table has no stream enabled
	ReasonCheckpoint      = "checkpoint"       // a checkpoint file could not be read or written
	ReasonAPI             = "api"              // any other AWS error (validation, access denied, internal)
)

// classify maps an AWS SDK error to one of the Reason* values. Errors are
// matched by type first (errors.As on the generated exception types), then
// by the API error code, which is what throttling errors without a
// modelled type carry.
func classify(err error) string {
	var (
		expired   *types.ExpiredIteratorException
		trimmed   *types.TrimmedDataAccessException
		limit     *types.LimitExceededException
		notFound  *types.ResourceNotFoundException
		tNotFound *ddbtypes.ResourceNotFoundException
		apiErr    smithy.APIError
	)
	switch {
	case errors.As(err, &expired):
		return ReasonExpiredIterator
	case errors.As(err, &trimmed):
		return ReasonTrimmed
	case errors.As(err, &limit):
		return ReasonThrottled
	case errors.As(err, &notFound), errors.As(err, &tNotFound):
		return ReasonNotFound
	case errors.As(err, &apiErr):
		if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool() {
			return ReasonThrottled
		}
		switch apiErr.ErrorCode() {
		case "ExpiredIteratorException":
			return ReasonExpiredIterator
		case "TrimmedDataAccessException":
			return ReasonTrimmed
		case "ResourceNotFoundException":
			return ReasonNotFound
		case "LimitExceededException", "ThrottlingException", "RequestLimitExceeded", "ProvisionedThroughputExceededException":
			return ReasonThrottled
		}
		return ReasonAPI
	case isNetwork(err):
		return ReasonNetwork
	}
	return ReasonAPI
}

// isNetwork reports whether err means the endpoint could not be reached or
// the connection broke, as opposed to an answer from the service.
func isNetwork(err error) bool {
	var (
		sendErr *smithyhttp.RequestSendError
		netErr  net.Error
		opErr   *net.OpError
	)
	return errors.As(err, &sendErr) || errors.As(err, &netErr) || errors.As(err, &opErr) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, context.DeadlineExceeded)
}

// isValidation reports whether DynamoDB refused the request's parameters
// (ValidationException): retrying the same request cannot succeed.
func isValidation(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException"
}
