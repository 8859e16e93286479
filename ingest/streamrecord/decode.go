package streamrecord

import (
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
)

// ErrFallback tells the caller to let the SDK decode the answer.
var ErrFallback = errors.New("answer not in the shape the fast decoder knows")

// DecodeGetRecords decodes a GetRecords answer in one pass over the bytes,
// keeping of each record what Map reads: eventID, eventName,
// userIdentity, and of "dynamodb" the Keys, SequenceNumber, SizeBytes,
// ApproximateCreationDateTime and StreamViewType. The records are of table
// t (nil when not known): when it has secondary indexes, the item images
// are read as far as IndexWrites needs them (image.go); otherwise images
// and other members are skipped without building values, but checked as
// JSON (the shared scanner, ingest/jsonscan), so that an answer the SDK
// would refuse is left to it. Anything unexpected returns ErrFallback.
func DecodeGetRecords(body []byte, t *Table) (*dynamodbstreams.GetRecordsOutput, error) {
	d := &decoder{b: body}
	if t.HasIndexes() {
		d.table = t
	}
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
		return nil, ErrFallback
	}
	if jsonscan.Space(d.b, d.i) != len(d.b) {
		return nil, ErrFallback
	}
	return out, nil
}

// maxNesting bounds the nesting of a skipped value. DynamoDB nests
// documents 32 levels deep, two JSON levels each ({"M": {...}}); an answer
// deeper than that is left to the SDK.
const maxNesting = 64

// decoder reads a GetRecords answer over the shared scanner. Every method
// leaves d.i after what it read.
type decoder struct {
	b      []byte
	i      int
	blk    recordBlock
	arena  strArena
	intern []interned
	// text and name hold unescaped string values and member names.
	text, name []byte
	// dump, when set, reads records as users keep them (see dump.go)
	// rather than as GetRecords answers them, into cur.
	dump *dumpRecord
	// payload is the record a dump's base64 envelope holds.
	payload types.Record
	// table, when set, is the table of a GetRecords answer whose images
	// are read for its indexes; scratch holds binary values sized.
	table   *Table
	scratch []byte
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
// names, view types) and returns one shared copy.
func (d *decoder) internStr() (string, error) {
	b, err := d.string(&d.text)
	if err != nil {
		return "", err
	}
	return d.internBytes(b), nil
}

func (d *decoder) internBytes(b []byte) string {
	// A handful of distinct values repeat (INSERT, NEW_IMAGE, the key
	// names): comparing against each is cheaper than hashing for a map.
	for _, e := range d.intern {
		if e.s == string(b) {
			return e.s
		}
	}
	s := string(b)
	if len(d.intern) < 16 {
		d.intern = append(d.intern, interned{s: s})
	}
	return s
}

type interned struct{ s string }

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

// at skips white space and reports whether the next byte is c.
func (d *decoder) at(c byte) bool {
	d.i = jsonscan.Space(d.b, d.i)
	return d.i < len(d.b) && d.b[d.i] == c
}

// null consumes a null.
func (d *decoder) null() bool {
	if d.at('n') {
		if i, err := jsonscan.ScanLiteral(d.b, d.i, "null"); err == nil {
			d.i = i
			return true
		}
	}
	return false
}

// object calls member for each member name, unescaped (valid during the
// call); member must consume the value.
func (d *decoder) object(member func(key []byte) error) error {
	if !d.at('{') {
		return ErrFallback
	}
	i := d.i + 1
	for first := true; ; first = false {
		key, esc, value, more, err := jsonscan.Member(d.b, i, first)
		if err != nil {
			return ErrFallback
		}
		if !more {
			d.i = value
			return nil
		}
		if esc {
			d.name = jsonscan.Unescape(d.name[:0], key)
			key = d.name
		}
		d.i = value
		if err := member(key); err != nil {
			return err
		}
		i = d.i
	}
}

// array calls element for each element; element must consume it.
func (d *decoder) array(element func() error) error {
	if !d.at('[') {
		return ErrFallback
	}
	i := d.i + 1
	for first := true; ; first = false {
		next, more, err := jsonscan.Element(d.b, i, first)
		if err != nil {
			return ErrFallback
		}
		d.i = next
		if !more {
			return nil
		}
		if err := element(); err != nil {
			return err
		}
		i = d.i
	}
}

// string reads a string value and returns its text: the bytes of the
// answer, or, when it holds escapes, the text unescaped into *buf. The
// result is valid until *buf is used again.
func (d *decoder) string(buf *[]byte) ([]byte, error) {
	if !d.at('"') {
		return nil, ErrFallback
	}
	end, esc, err := jsonscan.ScanString(d.b, d.i)
	if err != nil {
		return nil, ErrFallback
	}
	b := d.b[d.i+1 : end-1]
	d.i = end
	if esc {
		*buf = jsonscan.Unescape((*buf)[:0], b)
		b = *buf
	}
	return b, nil
}

// str reads a string value into the arena.
func (d *decoder) str() (string, error) {
	b, err := d.string(&d.text)
	if err != nil {
		return "", err
	}
	return d.arena.str(b), nil
}

// number returns the bytes of a number value.
func (d *decoder) number() ([]byte, error) {
	d.i = jsonscan.Space(d.b, d.i)
	start := d.i
	end, err := jsonscan.ScanNumber(d.b, d.i)
	if err != nil {
		return nil, ErrFallback
	}
	d.i = end
	return d.b[start:end], nil
}

// skip passes over one value of any type, checking it.
func (d *decoder) skip() error {
	end, err := jsonscan.Skip(d.b, d.i, maxNesting)
	if err != nil {
		return ErrFallback
	}
	d.i = end
	return nil
}

func (d *decoder) records(out *dynamodbstreams.GetRecordsOutput) error {
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
	return d.array(func() error {
		out.Records = append(out.Records, types.Record{})
		return d.record(&out.Records[len(out.Records)-1])
	})
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
				if d.dump != nil {
					return d.dumpIdentity(k, id)
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
		if d.dump != nil {
			return d.dumpMember(key, r)
		}
		return d.skip()
	})
}

func (d *decoder) streamRecord(sr *types.StreamRecord) error {
	b := &d.blk
	return d.object(func(key []byte) error {
		switch string(key) {
		case "ApproximateCreationDateTime":
			if d.dump != nil {
				return d.dumpTime(sr)
			}
			num, err := d.number()
			if err != nil {
				return err
			}
			ms, ok := wholeSecondsMillis(num)
			if !ok {
				f, err := strconv.ParseFloat(string(num), 64)
				if err != nil {
					return ErrFallback
				}
				ms = epochMillis(f)
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
				return ErrFallback
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
		case "NewImage", "OldImage":
			return d.imageMember(key[0] == 'N', sr)
		case "Keys":
			if d.null() {
				return nil
			}
			sr.Keys = make(map[string]types.AttributeValue, 2)
			return d.object(func(name []byte) error {
				n := d.internBytes(name)
				v, err := d.keyValue()
				if err != nil && d.dump != nil {
					return badKey(n, err)
				}
				sr.Keys[n] = v
				return err
			})
		default:
			return d.skip()
		}
		return nil
	})
}

// imageMember reads an image member of a stream record: for a table with
// indexes, decoded as far as they need it (image.go); in a dump, whose
// table may be named after it, kept as a span to be read once the table is
// known; otherwise skipped.
func (d *decoder) imageMember(isNew bool, sr *types.StreamRecord) error {
	switch {
	case d.dump != nil:
		start := jsonscan.Space(d.b, d.i)
		if err := d.skip(); err != nil {
			return err
		}
		span := d.b[start:d.i]
		if string(span) == "null" {
			span = nil
		}
		if isNew {
			d.dump.newImage = span
		} else {
			d.dump.oldImage = span
		}
		return nil
	case d.table == nil:
		return d.skip()
	case d.null():
		return nil
	}
	img, err := d.image(d.table)
	if isNew {
		sr.NewImage = img
	} else {
		sr.OldImage = img
	}
	return err
}

// epochMillis converts epoch seconds to milliseconds as the SDK does
// (smithy-go's ParseEpochSeconds): a correctly rounded float64 product,
// truncated, saturating at the limits of int64 (big.Float.Int64) rather
// than wrapping as a plain conversion does.
func epochMillis(sec float64) int64 {
	switch p := sec * 1000; {
	case p >= math.MaxInt64:
		return math.MaxInt64
	case p <= math.MinInt64:
		return math.MinInt64
	default:
		return int64(p)
	}
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
				return ErrFallback
			}
			v = &types.AttributeValueMemberB{Value: raw}
		default:
			return ErrFallback
		}
		return nil
	})
	if err != nil || count != 1 {
		return nil, ErrFallback
	}
	return v, nil
}
