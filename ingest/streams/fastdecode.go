package streams

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
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
			body, rerr := readBody(resp)
			_ = resp.Body.Close()
			if rerr != nil {
				return out, md, &smithyhttp.ResponseError{Response: resp, Err: rerr}
			}
			if dec, derr := decodeGetRecords(body); derr == nil {
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

// errFallback tells the caller to let the SDK decode the answer.
var errFallback = errors.New("answer not in the shape the fast decoder knows")

// decodeGetRecords decodes a GetRecords answer in one pass over the bytes,
// keeping of each record what mapRecord reads: eventID, eventName,
// userIdentity, and of "dynamodb" the Keys, SequenceNumber, SizeBytes,
// ApproximateCreationDateTime and StreamViewType. Images and other members
// are skipped without building values, checking only that brackets match
// and strings end. Anything unexpected returns errFallback.
func decodeGetRecords(body []byte) (*dynamodbstreams.GetRecordsOutput, error) {
	d := &decoder{b: body}
	out := &dynamodbstreams.GetRecordsOutput{}
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "Records":
			if d.null() {
				return nil
			}
			return d.records(out)
		case "NextShardIterator":
			if d.null() {
				return nil
			}
			s, err := d.str()
			out.NextShardIterator = &s
			return err
		}
		return d.skip()
	})
	if err != nil {
		return nil, errFallback
	}
	if d.ws(); d.i != len(d.b) {
		return nil, errFallback
	}
	return out, nil
}

// decoder walks a JSON text. Every method leaves d.i after what it read.
type decoder struct {
	b      []byte
	i      int
	blk    recordBlock
	arena  strArena
	intern []interned
}

// strArena copies the strings of an answer into shared blocks, as the
// SDK's own deserializer does (smithy-go's StringArena): one allocation for
// dozens of strings instead of one each, which was half of the decoder's
// allocations. Bytes are only ever appended, so a string handed out never
// changes. A string kept after the batch (a partition key the sketch admits
// is cloned there; the last sequence number is cloned by the reader) pins
// at most one block.
type strArena struct{ buf []byte }

const arenaBlock = 4096

func (a *strArena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaBlock/16 {
		return string(b)
	}
	if len(b) > cap(a.buf)-len(a.buf) {
		a.buf = make([]byte, 0, arenaBlock)
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return unsafe.String(&a.buf[start], len(b))
}

// internStr reads a string value that repeats from record to record (event
// names, view types, key attribute names) and returns one shared copy.
func (d *decoder) internStr() (string, error) {
	raw, err := d.rawString()
	if err != nil {
		return "", err
	}
	return d.internRaw(raw)
}

func (d *decoder) internRaw(raw []byte) (string, error) {
	// A handful of distinct values repeat (INSERT, NEW_IMAGE, the key
	// names): comparing against each is cheaper than hashing for a map.
	for _, e := range d.intern {
		if e.raw == string(raw) {
			return e.s, nil
		}
	}
	s, err := unescape(raw)
	if err != nil {
		return "", err
	}
	if len(d.intern) < 16 {
		d.intern = append(d.intern, interned{raw: string(raw), s: s})
	}
	return s, nil
}

type interned struct{ raw, s string }

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
	if len(b.strs) == cap(b.strs) {
		b.strs = make([]string, 0, 256)
	}
	b.strs = append(b.strs, s)
	return &b.strs[len(b.strs)-1]
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// expect consumes c after optional white space.
func (d *decoder) expect(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *decoder) null() bool {
	d.ws()
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// object calls member for each key; member must consume the value.
func (d *decoder) object(member func(key []byte) error) error {
	if !d.expect('{') {
		return errFallback
	}
	if d.expect('}') {
		return nil
	}
	for {
		key, err := d.rawString()
		if err != nil {
			return err
		}
		if !d.expect(':') {
			return errFallback
		}
		if err := member(key); err != nil {
			return err
		}
		if d.expect(',') {
			continue
		}
		if d.expect('}') {
			return nil
		}
		return errFallback
	}
}

// rawString returns a string's bytes between the quotes, escapes and all.
// Most strings here are short ("S", key names), where a plain loop beats
// bytes.IndexByte's call overhead.
func (d *decoder) rawString() ([]byte, error) {
	if !d.expect('"') {
		return nil, errFallback
	}
	b := d.b
	start := d.i
	for i := start; i < len(b); i++ {
		switch b[i] {
		case '"':
			d.i = i + 1
			return b[start:i], nil
		case '\\':
			i++ // the escaped byte cannot end the string
		}
	}
	return nil, errFallback
}

// str reads a string value and unescapes it. Plain ASCII strings without
// escapes (nearly all: ids, sequence numbers, most keys) are checked and
// found in one pass and copied into the arena.
func (d *decoder) str() (string, error) {
	if !d.expect('"') {
		return "", errFallback
	}
	b := d.b
	start := d.i
	for i := start; i < len(b); i++ {
		c := b[i]
		if c == '"' {
			d.i = i + 1
			return d.arena.str(b[start:i]), nil
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			break
		}
	}
	d.i = start - 1
	raw, err := d.rawString()
	if err != nil {
		return "", err
	}
	return unescape(raw)
}

// number returns the bytes of a number value.
func (d *decoder) number() ([]byte, error) {
	d.ws()
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			d.i++
			continue
		}
		break
	}
	if d.i == start {
		return nil, errFallback
	}
	return d.b[start:d.i], nil
}

// skip passes over one value of any type.
func (d *decoder) skip() error {
	d.ws()
	if d.i >= len(d.b) {
		return errFallback
	}
	switch c := d.b[d.i]; c {
	case '"':
		_, err := d.rawString()
		return err
	case '{', '[':
		return d.skipNested()
	case 't', 'f', 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
				d.i += len(lit)
				return nil
			}
		}
		return errFallback
	default:
		_, err := d.number()
		return err
	}
}

// skipNested passes over an object or array, matching brackets and
// skipping strings.
func (d *decoder) skipNested() error {
	var stack [64]byte
	depth := 0
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch c {
		case '"':
			// Inline rather than rawString: images are mostly strings.
			j := d.i + 1
			for j < len(d.b) && d.b[j] != '"' {
				if d.b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(d.b) {
				return errFallback
			}
			d.i = j + 1
			continue
		case '{', '[':
			if depth == len(stack) {
				return errFallback
			}
			stack[depth] = c
			depth++
		case '}', ']':
			if depth == 0 || (c == '}') != (stack[depth-1] == '{') {
				return errFallback
			}
			depth--
			if depth == 0 {
				d.i++
				return nil
			}
		}
		d.i++
	}
	return errFallback
}

func (d *decoder) records(out *dynamodbstreams.GetRecordsOutput) error {
	if !d.expect('[') {
		return errFallback
	}
	// A record takes at least ~150 bytes; estimate the count from the size
	// rather than scan for it, and let the blocks grow if wrong.
	n := min((len(d.b)-d.i)/256+1, 1000)
	d.blk = recordBlock{
		srs:   make([]types.StreamRecord, 0, n),
		strs:  make([]string, 0, 2*n),
		times: make([]time.Time, 0, n),
		sizes: make([]int64, 0, n),
		ss:    make([]types.AttributeValueMemberS, 0, 2*n),
		ns:    make([]types.AttributeValueMemberN, 0, n),
	}
	out.Records = make([]types.Record, 0, n)
	if d.expect(']') {
		return nil
	}
	for {
		out.Records = append(out.Records, types.Record{})
		if err := d.record(&out.Records[len(out.Records)-1]); err != nil {
			return err
		}
		if d.expect(',') {
			continue
		}
		if d.expect(']') {
			return nil
		}
		return errFallback
	}
}

func (d *decoder) record(r *types.Record) error {
	b := &d.blk
	return d.object(func(key []byte) error {
		switch string(key) {
		case "eventID":
			s, err := d.str()
			r.EventID = b.str(s)
			return err
		case "eventName":
			s, err := d.internStr()
			r.EventName = types.OperationType(s)
			return err
		case "userIdentity":
			if d.null() {
				return nil
			}
			id := &types.Identity{}
			r.UserIdentity = id
			return d.object(func(k []byte) error {
				switch string(k) {
				case "PrincipalId":
					s, err := d.internStr()
					id.PrincipalId = b.str(s)
					return err
				case "Type":
					s, err := d.internStr()
					id.Type = b.str(s)
					return err
				}
				return d.skip()
			})
		case "dynamodb":
			if d.null() {
				return nil
			}
			if len(b.srs) == cap(b.srs) {
				b.srs = make([]types.StreamRecord, 0, 64)
			}
			b.srs = append(b.srs, types.StreamRecord{})
			sr := &b.srs[len(b.srs)-1]
			r.Dynamodb = sr
			return d.streamRecord(sr)
		}
		return d.skip()
	})
}

func (d *decoder) streamRecord(sr *types.StreamRecord) error {
	b := &d.blk
	return d.object(func(key []byte) error {
		switch string(key) {
		case "ApproximateCreationDateTime":
			num, err := d.number()
			if err != nil {
				return err
			}
			ms, ok := wholeSecondsMillis(num)
			if !ok {
				f, err := strconv.ParseFloat(string(num), 64)
				if err != nil {
					return errFallback
				}
				// As the SDK does (smithy-go's ParseEpochSeconds):
				// milliseconds, truncated, after a correctly rounded
				// float64 product.
				ms = int64(f * 1000)
			}
			if len(b.times) == cap(b.times) {
				b.times = make([]time.Time, 0, 64)
			}
			b.times = append(b.times, time.Unix(0, ms*1e6).UTC())
			sr.ApproximateCreationDateTime = &b.times[len(b.times)-1]
		case "SequenceNumber":
			s, err := d.str()
			sr.SequenceNumber = b.str(s)
			return err
		case "SizeBytes":
			num, err := d.number()
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(string(num), 10, 64)
			if err != nil {
				return errFallback
			}
			if len(b.sizes) == cap(b.sizes) {
				b.sizes = make([]int64, 0, 64)
			}
			b.sizes = append(b.sizes, n)
			sr.SizeBytes = &b.sizes[len(b.sizes)-1]
		case "StreamViewType":
			s, err := d.internStr()
			sr.StreamViewType = types.StreamViewType(s)
			return err
		case "Keys":
			if d.null() {
				return nil
			}
			sr.Keys = make(map[string]types.AttributeValue, 2)
			return d.object(func(name []byte) error {
				n, err := d.internRaw(name)
				if err != nil {
					return err
				}
				v, err := d.keyValue()
				sr.Keys[n] = v
				return err
			})
		default:
			return d.skip()
		}
		return nil
	})
}

// wholeSecondsMillis returns the milliseconds of a time in whole seconds
// ("1795429020", "1795429020.000": DynamoDB Local rounds to the minute),
// which the float path would give exactly too: such a value and its product
// by 1000 are integers well within float64's 53 bits.
func wholeSecondsMillis(num []byte) (int64, bool) {
	var sec int64
	i := 0
	for ; i < len(num) && num[i] >= '0' && num[i] <= '9'; i++ {
		if i == 12 {
			return 0, false
		}
		sec = sec*10 + int64(num[i]-'0')
	}
	if i == 0 {
		return 0, false
	}
	if i < len(num) {
		if num[i] != '.' || i+1 == len(num) {
			return 0, false
		}
		for _, c := range num[i+1:] {
			if c != '0' {
				return 0, false
			}
		}
	}
	return sec * 1000, true
}

// keyValue decodes a key attribute value: {"S": ...}, {"N": ...} or
// {"B": ...}. Any other type is left to the SDK.
func (d *decoder) keyValue() (types.AttributeValue, error) {
	b := &d.blk
	var v types.AttributeValue
	count := 0
	err := d.object(func(typ []byte) error {
		count++
		s, err := d.str()
		if err != nil {
			return err
		}
		switch string(typ) {
		case "S":
			if len(b.ss) == cap(b.ss) {
				b.ss = make([]types.AttributeValueMemberS, 0, 64)
			}
			b.ss = append(b.ss, types.AttributeValueMemberS{Value: s})
			v = &b.ss[len(b.ss)-1]
		case "N":
			if len(b.ns) == cap(b.ns) {
				b.ns = make([]types.AttributeValueMemberN, 0, 64)
			}
			b.ns = append(b.ns, types.AttributeValueMemberN{Value: s})
			v = &b.ns[len(b.ns)-1]
		case "B":
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return errFallback
			}
			v = &types.AttributeValueMemberB{Value: raw}
		default:
			return errFallback
		}
		return nil
	})
	if err != nil || count != 1 {
		return nil, errFallback
	}
	return v, nil
}

// unescape turns the raw bytes of a JSON string into a Go string. Strings
// without a backslash (nearly all) are copied as they are, if valid UTF-8;
// others go through strconv.Unquote, whose escapes are a superset of JSON's
// save for \/ which is handled first.
func unescape(raw []byte) (string, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		for _, c := range raw {
			if c < 0x20 {
				return "", errFallback
			}
		}
		if !utf8.Valid(raw) {
			return "", errFallback
		}
		return string(raw), nil
	}
	q := make([]byte, 0, len(raw)+2)
	q = append(q, '"')
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '\\' && i+1 < len(raw) {
			switch raw[i+1] {
			case '/':
				q = append(q, '/')
				i++
				continue
			case '"', '\\', 'b', 'f', 'n', 'r', 't', 'u':
				q = append(q, c, raw[i+1])
				i++
				continue
			}
			return "", errFallback
		}
		q = append(q, c)
	}
	q = append(q, '"')
	s, err := strconv.Unquote(string(q))
	if err != nil || !utf8.ValidString(s) {
		return "", errFallback
	}
	return s, nil
}
