package streams

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/valyala/fastjson"
)

// The SDK's generic deserializer decodes every attribute of every image
// into interface values: about 6 µs and 50 allocations per record on a
// NEW_IMAGE stream, most of the reader's CPU. The reader needs only the
// keys, the size, the time, the sequence number and the user identity, so
// GetRecords answers are decoded by decodeGetRecords instead, which skips
// the images (see docs/bench/streams.md for the figures). Error answers,
// and any answer the fast decoder does not fully understand, still go
// through the SDK, so the fast path can only be faster, never different:
// TestFastDecodeMatchesSDK checks that both give identical Events.

// withFastGetRecords is a GetRecords option that installs the fast decoder
// on that one call.
func withFastGetRecords(o *dynamodbstreams.Options) {
	o.APIOptions = append(o.APIOptions, addFastGetRecords)
}

// addFastGetRecords adds two middlewares sharing one result: the inner one,
// next to the transport, decodes a 200 answer and leaves the SDK's
// deserializer an empty object; the outer one returns the decoded output in
// place of the SDK's.
func addFastGetRecords(stack *middleware.Stack) error {
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
			body, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if rerr != nil {
				return out, md, &smithyhttp.ResponseError{Response: resp, Err: rerr}
			}
			if dec, derr := decodeGetRecords(body); derr == nil {
				decoded = dec
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

// errFallback tells the caller to let the SDK decode the answer.
var errFallback = errors.New("answer not in the shape the fast decoder knows")

// parsers are reused: a fastjson Parser keeps its arena between answers.
var parsers fastjson.ParserPool

// decodeGetRecords decodes a GetRecords answer, keeping of each record what
// mapRecord reads: eventID, eventName, userIdentity, and of "dynamodb" the
// Keys, SequenceNumber, SizeBytes, ApproximateCreationDateTime and
// StreamViewType. Images are parsed (fastjson validates the whole answer in
// one pass) but never turned into Go values. Anything unexpected returns
// errFallback.
func decodeGetRecords(body []byte) (*dynamodbstreams.GetRecordsOutput, error) {
	p := parsers.Get()
	defer parsers.Put(p)
	root, err := p.ParseBytes(body)
	if err != nil || root.Type() != fastjson.TypeObject {
		return nil, errFallback
	}
	out := &dynamodbstreams.GetRecordsOutput{}
	if it := root.Get("NextShardIterator"); it != nil && it.Type() != fastjson.TypeNull {
		s, err := str(it)
		if err != nil {
			return nil, err
		}
		out.NextShardIterator = &s
	}
	rv := root.Get("Records")
	if rv == nil || rv.Type() == fastjson.TypeNull {
		return out, nil
	}
	arr, err := rv.Array()
	if err != nil {
		return nil, errFallback
	}
	n := len(arr)
	blk := &recordBlock{
		srs:   make([]types.StreamRecord, 0, n),
		strs:  make([]string, 0, 2*n),
		times: make([]time.Time, 0, n),
		sizes: make([]int64, 0, n),
		ss:    make([]types.AttributeValueMemberS, 0, 2*n),
		ns:    make([]types.AttributeValueMemberN, 0, n),
	}
	out.Records = make([]types.Record, n)
	for i, v := range arr {
		if err := blk.record(v, &out.Records[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// recordBlock allocates the parts of many records at once.
type recordBlock struct {
	srs   []types.StreamRecord
	strs  []string
	times []time.Time
	sizes []int64
	ss    []types.AttributeValueMemberS
	ns    []types.AttributeValueMemberN
}

func (b *recordBlock) str(s string) *string {
	b.strs = append(b.strs, s)
	return &b.strs[len(b.strs)-1]
}

func (b *recordBlock) record(v *fastjson.Value, r *types.Record) error {
	o, err := v.Object()
	if err != nil {
		return errFallback
	}
	var ferr error
	o.Visit(func(key []byte, v *fastjson.Value) {
		if ferr != nil {
			return
		}
		switch string(key) {
		case "eventID":
			var s string
			s, ferr = str(v)
			r.EventID = b.str(s)
		case "eventName":
			var s string
			s, ferr = str(v)
			r.EventName = types.OperationType(s)
		case "userIdentity":
			if v.Type() == fastjson.TypeNull {
				return
			}
			if v.Type() != fastjson.TypeObject {
				ferr = errFallback
				return
			}
			id := &types.Identity{}
			r.UserIdentity = id
			if p := v.Get("PrincipalId"); p != nil {
				var s string
				s, ferr = str(p)
				id.PrincipalId = b.str(s)
			}
			if t := v.Get("Type"); t != nil && ferr == nil {
				var s string
				s, ferr = str(t)
				id.Type = b.str(s)
			}
		case "dynamodb":
			b.srs = append(b.srs, types.StreamRecord{})
			sr := &b.srs[len(b.srs)-1]
			r.Dynamodb = sr
			ferr = b.streamRecord(v, sr)
		}
	})
	return ferr
}

func (b *recordBlock) streamRecord(v *fastjson.Value, sr *types.StreamRecord) error {
	o, err := v.Object()
	if err != nil {
		return errFallback
	}
	var ferr error
	o.Visit(func(key []byte, v *fastjson.Value) {
		if ferr != nil {
			return
		}
		switch string(key) {
		case "ApproximateCreationDateTime":
			f, err := v.Float64()
			if err != nil {
				ferr = errFallback
				return
			}
			// As the SDK does (smithy-go's ParseEpochSeconds): milliseconds,
			// truncated, after a correctly rounded float64 product.
			b.times = append(b.times, time.Unix(0, int64(f*1000)*1e6).UTC())
			sr.ApproximateCreationDateTime = &b.times[len(b.times)-1]
		case "SequenceNumber":
			var s string
			s, ferr = str(v)
			sr.SequenceNumber = b.str(s)
		case "SizeBytes":
			n, err := v.Int64()
			if err != nil {
				ferr = errFallback
				return
			}
			b.sizes = append(b.sizes, n)
			sr.SizeBytes = &b.sizes[len(b.sizes)-1]
		case "StreamViewType":
			var s string
			s, ferr = str(v)
			sr.StreamViewType = types.StreamViewType(s)
		case "Keys":
			keys, err := v.Object()
			if err != nil {
				ferr = errFallback
				return
			}
			sr.Keys = make(map[string]types.AttributeValue, keys.Len())
			keys.Visit(func(name []byte, av *fastjson.Value) {
				if ferr != nil {
					return
				}
				var kv types.AttributeValue
				if kv, ferr = b.keyValue(av); ferr == nil {
					sr.Keys[string(name)] = kv
				}
			})
		}
	})
	return ferr
}

// keyValue decodes a key attribute value: {"S": ...}, {"N": ...} or
// {"B": ...}. Any other type is left to the SDK.
func (b *recordBlock) keyValue(v *fastjson.Value) (types.AttributeValue, error) {
	o, err := v.Object()
	if err != nil || o.Len() != 1 {
		return nil, errFallback
	}
	var out types.AttributeValue
	var ferr error
	o.Visit(func(typ []byte, val *fastjson.Value) {
		var s string
		if s, ferr = str(val); ferr != nil {
			return
		}
		switch string(typ) {
		case "S":
			b.ss = append(b.ss, types.AttributeValueMemberS{Value: s})
			out = &b.ss[len(b.ss)-1]
		case "N":
			b.ns = append(b.ns, types.AttributeValueMemberN{Value: s})
			out = &b.ns[len(b.ns)-1]
		case "B":
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				ferr = errFallback
				return
			}
			out = &types.AttributeValueMemberB{Value: raw}
		default:
			ferr = errFallback
		}
	})
	return out, ferr
}

// str returns a JSON string value as a Go string (a copy: nothing may point
// into the parser's arena once it is reused).
func str(v *fastjson.Value) (string, error) {
	b, err := v.StringBytes()
	if err != nil {
		return "", errFallback
	}
	return string(b), nil
}
