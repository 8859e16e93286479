package shards

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Reasons for hotkeyd_source_errors_total that the engine acts on; each
// reader's classifier returns these, or another reason of its own, for an
// error of its API. They are few and fixed so that the label set stays
// bounded.
const (
	ReasonExpiredIterator = "expired_iterator" // a shard iterator too old; re-acquired
	ReasonTrimmed         = "trimmed"          // records trimmed before they were read; skipped and counted
	ReasonThrottled       = "throttled"        // throttling; backed off, the iterator kept
	ReasonNotFound        = "not_found"        // stream or shard gone; the shard given up
	ReasonNetwork         = "network"          // endpoint unreachable, connection reset, timeout
	ReasonCheckpoint      = "checkpoint"       // a checkpoint could not be read or written
	ReasonAPI             = "api"              // any other answer of the service
)

// ByCode classifies an AWS error by its API error code (the SDK's
// generated exception types carry theirs): the SDK's throttling codes
// first, then the codes the engine acts on, then other (a reader's own
// codes, "" for none); an error that is no answer of the service is
// ReasonNetwork when network says so. Anything else is ReasonAPI.
func ByCode(err error, network func(error) bool, other func(code string) string) string {
	var apiErr smithy.APIError
	switch {
	case errors.As(err, &apiErr):
		if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool() {
			return ReasonThrottled
		}
		switch code := apiErr.ErrorCode(); code {
		case "ExpiredIteratorException":
			return ReasonExpiredIterator
		case "ResourceNotFoundException":
			return ReasonNotFound
		case "LimitExceededException", "ThrottlingException", "RequestLimitExceeded", "ProvisionedThroughputExceededException":
			return ReasonThrottled
		default:
			if other != nil {
				if r := other(code); r != "" {
					return r
				}
			}
		}
		return ReasonAPI
	case network(err):
		return ReasonNetwork
	}
	return ReasonAPI
}

// IsNetwork reports whether err means the endpoint could not be reached or
// the connection broke, as opposed to an answer from the service.
func IsNetwork(err error) bool {
	var (
		sendErr *smithyhttp.RequestSendError
		netErr  net.Error
	)
	return errors.As(err, &sendErr) || errors.As(err, &netErr) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}
