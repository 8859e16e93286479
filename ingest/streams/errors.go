package streams

import (
	"errors"
	"io"

	"github.com/aws/smithy-go"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
)

// ReasonNoStream is the reason of hotkeyd_source_errors_total{source="dynamodb-streams"}
// for a configured table that has no stream enabled; the others are the
// shard engine's (shards.Reason*).
const ReasonNoStream = "no_stream"

// classify maps an AWS SDK error to one of the shards.Reason* values, by its API
// error code: the SDK's exception types carry theirs, and throttling
// errors without a modelled type carry one too.
func classify(err error) string {
	return shards.ByCode(err, isNetwork, func(code string) string {
		if code == "TrimmedDataAccessException" {
			return shards.ReasonTrimmed
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
