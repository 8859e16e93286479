package streams

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
)

// The SDK's generic deserializer decodes every attribute of every image
// into interface values: about 6 µs and 50 allocations per record on a
// NEW_IMAGE stream, most of the reader's CPU. The reader needs only the
// keys, the size, the time, the sequence number and the user identity, so
// GetRecords answers are decoded by streamrecord.DecodeGetRecords instead, which skips
// the images, or, for a table with secondary indexes, reads of them only
// the attributes the indexes need (see docs/bench/streams.md for the
// figures). Error answers,
// and any answer the fast decoder does not fully understand, still go
// through the SDK, so the fast path can only be faster, never different:
// TestFastDecodeMatchesSDK checks that both give identical Events.

// withFastGetRecords returns a GetRecords option that installs the fast
// decoder on that one call, for records of table t (nil when nothing is
// known of it: t's indexes say which attributes of the images to read).
func withFastGetRecords(t *streamrecord.Table) func(*dynamodbstreams.Options) {
	return func(o *dynamodbstreams.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error { return addFastGetRecords(stack, t) })
	}
}

// addFastGetRecords adds two middlewares sharing one result: the inner one,
// next to the transport, decodes a 200 answer and leaves the SDK's
// deserializer an empty object; the outer one returns the decoded output in
// place of the SDK's.
func addFastGetRecords(stack *middleware.Stack, t *streamrecord.Table) error {
	var decoded *dynamodbstreams.GetRecordsOutput
	err := stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("HotkeydFastGetRecords",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if err != nil {
				return out, md, err
			}
			resp, ok := out.RawResponse.(*smithyhttp.Response)
			if !ok || resp.StatusCode != 200 {
				return out, md, err
			}
			body, rerr := readBody(resp)
			_ = resp.Body.Close()
			if rerr != nil {
				return out, md, &smithyhttp.ResponseError{Response: resp, Err: rerr}
			}
			if dec, derr := streamrecord.DecodeGetRecords(body, t); derr == nil {
				// Nothing decoded points into body (strings are copies), so
				// its buffer serves the next answer.
				decoded = dec
				putBody(body)
				body = []byte("{}")
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			return out, md, nil
		}), middleware.After)
	if err != nil {
		return err
	}
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("HotkeydFastGetRecordsResult",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if err == nil && decoded != nil {
				out.Result = decoded
			}
			return out, md, err
		}), middleware.Before)
}

// readBody reads the whole answer, in one allocation when its length is
// known.
func readBody(resp *smithyhttp.Response) ([]byte, error) {
	if n := resp.ContentLength; n > 0 && n < 64<<20 {
		buf := getBody(int(n))
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(resp.Body)
}

// bodies recycles answer buffers: a full answer is up to 1 MB, and
// allocating (and zeroing, and collecting) one per call cost about a
// quarter of the reader's CPU.
var bodies sync.Pool

func getBody(n int) []byte {
	if p, ok := bodies.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]byte, n, max(n, 1<<20))
}

func putBody(b []byte) {
	if cap(b) <= 8<<20 {
		bodies.Put(&b)
	}
}
