package streams

import (
	"errors"
	"io"

	"github.com/aws/smithy-go"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
)

// Reasons for hotkeyd_source_errors_total{source="dynamodb-streams"}. They
// are few and fixed so that the label set stays bounded.
const (
	ReasonExpiredIterator = shards.ReasonExpiredIterator // a shard iterator older than 15 minutes; re-acquired
	ReasonTrimmed         = shards.ReasonTrimmed         // records older than 24 h were trimmed before they were read
	ReasonThrottled       = shards.ReasonThrottled       // LimitExceeded or throttling; backed off
	ReasonNotFound        = shards.ReasonNotFound        // stream disabled, table deleted, unknown shard
	ReasonNetwork         = shards.ReasonNetwork         // endpoint unreachable, connection reset, timeout
	ReasonNoStream        = "no_stream"                  // a configured table has no stream enabled
	ReasonCheckpoint      = shards.ReasonCheckpoint      // a checkpoint file could not be read or written
	ReasonAPI             = shards.ReasonAPI             // any other AWS error (validation, access denied, internal)
)

// classify maps an AWS SDK error to one of the Reason* values, by its API
// error code: the SDK's exception types carry theirs, and throttling
// errors without a modelled type carry one too.
func classify(err error) string {
	return shards.ByCode(err, isNetwork, func(code string) string {
		if code == "TrimmedDataAccessException" {
			return ReasonTrimmed
		}
		return ""
	})
}

// isNetwork reports whether err means the endpoint could not be reached or
// the connection broke, as opposed to an answer from the service; a
// connection closed before the answer (io.EOF) counts.
func isNetwork(err error) bool {
	return shards.IsNetwork(err) || errors.Is(err, io.EOF)
}

// isValidation reports whether DynamoDB refused the request's parameters
// (ValidationException): retrying the same request cannot succeed.
func isValidation(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException"
}
