package streams

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// faultStreams wraps the real DynamoDB Streams client of DynamoDB Local and
// makes chosen calls fail. It exists only for the faults the emulator cannot
// produce on demand: an expired iterator (15 minutes), trimmed data (24
// hours) and throttling. Every other call, and every other fault, is real.
type faultStreams struct {
	StreamsAPI
	mu         sync.Mutex
	records    []error // returned by the next GetRecords calls, in order
	afterCalls int     // GetRecords calls that succeed before records start failing
	calls      int
}

// failGetRecords makes the GetRecords calls after the next `after`
// successful ones return errs, one per call.
func (f *faultStreams) failGetRecords(after int, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.afterCalls = after
	f.records = append(f.records, errs...)
}

func (f *faultStreams) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.records)
}

func (f *faultStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.mu.Lock()
	f.calls++
	var err error
	if f.afterCalls > 0 {
		f.afterCalls--
	} else if len(f.records) > 0 {
		err, f.records = f.records[0], f.records[1:]
	}
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.StreamsAPI.GetRecords(ctx, in, opts...)
}
