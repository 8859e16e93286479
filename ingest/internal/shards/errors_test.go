package shards

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

// TestByCode classifies the exceptions of both readers' SDKs, as the SDK
// returns them and wrapped, and errors that are no answer.
func TestByCode(t *testing.T) {
	other := func(code string) string {
		if code == "TrimmedDataAccessException" {
			return ReasonTrimmed
		}
		return ""
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&streamtypes.ExpiredIteratorException{}, ReasonExpiredIterator},
		{&kinesistypes.ExpiredIteratorException{}, ReasonExpiredIterator},
		{&streamtypes.TrimmedDataAccessException{}, ReasonTrimmed},
		{&streamtypes.LimitExceededException{}, ReasonThrottled},
		{&kinesistypes.LimitExceededException{}, ReasonThrottled},
		{&kinesistypes.ProvisionedThroughputExceededException{}, ReasonThrottled},
		{&streamtypes.ResourceNotFoundException{}, ReasonNotFound},
		{&ddbtypes.ResourceNotFoundException{}, ReasonNotFound},
		{&kinesistypes.ResourceNotFoundException{}, ReasonNotFound},
		{&smithy.GenericAPIError{Code: "ThrottlingException"}, ReasonThrottled},
		{&smithy.GenericAPIError{Code: "RequestLimitExceeded"}, ReasonThrottled},
		{&smithy.GenericAPIError{Code: "ValidationException"}, ReasonAPI},
		{&smithy.GenericAPIError{Code: "AccessDeniedException"}, ReasonAPI},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, ReasonNetwork},
		{io.ErrUnexpectedEOF, ReasonNetwork},
		{errors.New("something else"), ReasonAPI},
	} {
		for _, err := range []error{tc.err, fmt.Errorf("get records: %w", tc.err)} {
			if got := ByCode(err, IsNetwork, other); got != tc.want {
				t.Errorf("%v (%T): %q, want %q", err, tc.err, got, tc.want)
			}
		}
	}
}
