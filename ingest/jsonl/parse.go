package jsonl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Fields names the JSON members of one access-log line, so that logs that
// already exist can be read without rewriting them. The zero value of a
// member means its default name (DefaultFields).
type Fields struct {
	// Time holds an RFC 3339 string or a Unix epoch number (epochTime). Default "ts".
	Time string `yaml:"ts,omitempty" json:"ts,omitempty"`
	// Table holds the table name. Default "table".
	Table string `yaml:"table,omitempty" json:"table,omitempty"`
	// Index holds the secondary index name. Default "index".
	Index string `yaml:"index,omitempty" json:"index,omitempty"`
	// PK holds the partition key value. Default "pk".
	PK string `yaml:"pk,omitempty" json:"pk,omitempty"`
	// SK holds the sort key value. Default "sk".
	SK string `yaml:"sk,omitempty" json:"sk,omitempty"`
	// Op holds the DynamoDB operation name or "read"/"write". Default "op".
	Op string `yaml:"op,omitempty" json:"op,omitempty"`
	// Units holds the consumed capacity units. Default "units".
	Units string `yaml:"units,omitempty" json:"units,omitempty"`
	// Throttled holds true for a call DynamoDB refused by throttling.
	// Default "throttled".
	Throttled string `yaml:"throttled,omitempty" json:"throttled,omitempty"`
	// ThrottleReason holds the reason DynamoDB gave for throttling the
	// call, one of its sixteen ThrottlingReasons. Default "throttle_reason".
	ThrottleReason string `yaml:"throttle_reason,omitempty" json:"throttle_reason,omitempty"`
	// ThrottleResource holds the throttled resource the reason names, the
	// ARN of the table or index. Default "throttle_resource".
	ThrottleResource string `yaml:"throttle_resource,omitempty" json:"throttle_resource,omitempty"`
}

// DefaultFields returns the member names of the JSON-lines contract.
func DefaultFields() Fields { return Fields{}.withDefaults() }

// withDefaults fills empty names with the contract's names.
func (f Fields) withDefaults() Fields {
	for _, c := range contract {
		if v := c.rename(&f); *v == "" {
			*v = c.Name
		}
	}
	return f
}

// MaxDepth is the deepest nesting of objects and arrays accepted inside a
// line (in members the parser skips). Deeper input is rejected as bad_json
// instead of being walked, so a line of 10 000 braces costs nothing.
const MaxDepth = 32

// maxInterned bounds the table/index name cache, so a stream of distinct
// table names cannot grow it without limit.
const maxInterned = 4096

// maxOthers bounds the names of members outside the contract a Parser
// keeps count of; members of other names are counted together, unnamed
// (OtherFields), so a stream of distinct names cannot grow it.
const maxOthers = 256

// OtherFields is the name members outside the contract are counted under
// once a Parser counts maxOthers names.
const OtherFields = "(other names)"

// ParseError is why one line was rejected. Reason is one of the
// traffic.Reason* constants.
type ParseError struct {
	Reason string
	Detail string
}

func (e *ParseError) Error() string { return e.Reason + ": " + e.Detail }

func perr(reason, detail string) *ParseError { return &ParseError{Reason: reason, Detail: detail} }

// Reason returns the traffic.Reason* constant of err, or traffic.ReasonBadJSON
// when err is not a *ParseError.
func Reason(err error) string {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return traffic.ReasonBadJSON
}

// Parser turns one JSON-lines access-log line into an traffic.Event.
//
// It reads the flat shape of the contract over the shared scanner
// (ingest/jsonscan): it checks the whole line as JSON (members it does not
// know are walked and checked, nesting bounded by MaxDepth), takes the
// members it knows without building a tree, and allocates nothing per
// line: table and index names are interned, and key strings are cut from
// an arena (see keyChunk). A line as logs write them (plain names and
// values) takes a fast path that gets
// what the full scan gets (compact.go). A member it does not know costs a map lookup
// of its name, which it counts (Ignored) and, when the name is a near miss
// of a field, may reject the line with. A Parser is not safe for
// concurrent use; give each reader its own.
type Parser struct {
	names   [numFields][]byte
	first   [256]uint16 // by first byte, the fields whose names start with it (bit f)
	now     func() time.Time
	source  string
	intern  map[string]string
	valid   [nameSlots]string        // valid table and index names (validName)
	ops     [opSlots]opMemo          // operation names (lookupOp)
	scratch []byte                   // unescaped key and string values
	vals    [numFields]jsonscan.Span // the members known, by field
	// tokens are the fields' names as compact JSON writes them, which
	// scanCompact looks for.
	tokens [numFields]token
	// full reads every line with the full scanner, for the tests that
	// hold the fast path to it.
	full   bool
	minute [minuteSlots]minuteCache
	keys   []byte // arena the key strings are cut from
	mask   traffic.Masker
	// others counts the members outside the contract by name, with the
	// field each name is a near miss of; line holds those of the line
	// being parsed, and pending those counted since Ignored last read
	// them.
	others  map[string]*other
	overall *other // members of names past maxOthers
	line    []*other
	near    bool // a member of line is a near miss of a field
	pending []*other
	// op is the operation of the line being built, and said whether it
	// has throttled (true or false).
	op   traffic.Operation
	said bool
	// recent holds, by its place among the line's members outside the
	// contract, the name the line before had there: a log's lines carry
	// the same members in the same order, so most are found without
	// hashing their names.
	recent [4]*other
}

// other is a name of members outside the contract.
type other struct {
	name string
	// near is the field the name is a near miss of, or -1.
	near int
	// tally is where the lines it is ignored on are counted: itself, or
	// the Parser's overall count past maxOthers names.
	tally *other
	// lines counts the lines the member was ignored on; reported how
	// many of them Ignored has returned.
	lines, reported uint64
}

// keyChunk is the size of the arena chunks key strings are copied into.
// One allocation per chunk instead of one per key: at about 30 bytes a key
// that is one allocation per few hundred lines. A chunk is never written
// again once a string points into it, and it is freed when the last Event
// (or key) pointing into it is; the sketches clone the keys they keep, so
// chunks live about as long as a batch.
const keyChunk = 16 << 10

// key copies b into the arena and returns it as a string.
func (p *Parser) key(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > cap(p.keys)-len(p.keys) {
		if len(b) > keyChunk/4 {
			return string(b) // a big key gets its own allocation
		}
		p.keys = make([]byte, 0, keyChunk)
	}
	start := len(p.keys)
	p.keys = append(p.keys, b...)
	return unsafe.String(&p.keys[start], len(b))
}

// reuseKeys writes the next keys over the current arena chunk: the caller
// holds no string cut from it any more (Options.Recycle).
func (p *Parser) reuseKeys() { p.keys = p.keys[:0] }

// minuteCache remembers a "2006-01-02T15:04" prefix parsed and its
// instant: log lines come in time order, so most lines share the minute of
// the line before and only their seconds need reading. The Parser keeps
// minuteSlots of them, one per minute of the hour modulo minuteSlots, so
// that lines out of order (merged logs) over a quarter of an hour miss
// none either.
// minuteSlots is the number of minutes a Parser remembers.
const minuteSlots = 16

type minuteCache struct {
	prefix [2]uint64 // the prefix's 16 bytes, little-endian
	unix   int64     // its instant, Unix seconds
	ok     bool
}

// NewParser returns a Parser reading fields, stamping lines without a time
// with now() (time.Now when nil) and setting Event.Source to source.
func NewParser(fields Fields, source string, now func() time.Time) *Parser {
	if now == nil {
		now = time.Now
	}
	f := fields.withDefaults()
	p := &Parser{now: now, source: source, intern: make(map[string]string), others: make(map[string]*other)}
	for i, c := range contract {
		p.names[i] = []byte(*c.rename(&f))
		p.first[p.names[i][0]] |= 1 << i
		p.tokens[i] = makeToken(p.names[i])
	}
	return p
}

// Parse reads one line (without its newline) into ev, overwriting every
// field. It returns a *ParseError when the line is not usable. ev keeps no
// reference to line, which the caller may reuse.
func (p *Parser) Parse(line []byte, ev *traffic.Event) error {
	p.vals = [numFields]jsonscan.Span{}
	p.line, p.near = p.line[:0], false
	compact := !p.full && p.scanCompact(line)
	if !compact {
		p.vals = [numFields]jsonscan.Span{}
		p.line, p.near = p.line[:0], false
		if err := p.scanObject(line); err != nil {
			return err
		}
	}
	switch {
	case len(p.line) > 0:
		return p.buildOthers(line, ev)
	case compact && p.buildCompact(line, ev):
		return nil
	}
	return p.build(line, ev)
}

// buildOthers is build for a line with members outside the contract: a
// near miss of a field the line lacks rejects it, and so does what build
// refuses, naming them; otherwise they are counted.
func (p *Parser) buildOthers(line []byte, ev *traffic.Event) error {
	for _, o := range p.line {
		if !p.near {
			break
		}
		if o.near >= 0 && optional(p.vals[o.near]) {
			*ev = traffic.Event{}
			return &ParseError{Reason: traffic.ReasonMisspelledField, Detail: fmt.Sprintf("unknown field %s (did you mean %q?)",
				p.quote([]byte(o.name)), p.names[o.near])}
		}
	}
	if err := p.build(line, ev); err != nil {
		var pe *ParseError
		if errors.As(err, &pe) && (pe.Reason == traffic.ReasonMissingTable || pe.Reason == traffic.ReasonMissingPK || pe == errMissingOp) {
			// The field may be there under another name.
			names := make([]string, len(p.line))
			for i, o := range p.line {
				names[i] = p.quote([]byte(o.name))
			}
			return &ParseError{Reason: pe.Reason, Detail: pe.Detail + "; fields outside the contract: " + strings.Join(names, ", ")}
		}
		return err
	}
	for _, o := range p.line {
		t := o.tally
		if t.lines == t.reported {
			p.pending = append(p.pending, t)
		}
		t.lines++
	}
	return nil
}

// Ignored returns the members outside the contract counted since it was
// last called, by name (OtherFields for the names past the first
// maxOthers): how many accepted lines carried each.
func (p *Parser) Ignored(yield func(name string, lines uint64)) {
	for _, o := range p.pending {
		n := o.lines - o.reported
		o.reported = o.lines
		yield(o.name, n)
	}
	p.pending = p.pending[:0]
}

// noteOther records a member outside the contract on the line.
func (p *Parser) noteOther(name []byte) {
	k := len(p.line)
	if k < len(p.recent) {
		if o := p.recent[k]; o != nil && o.name == string(name) {
			p.near = p.near || o.near >= 0
			p.line = append(p.line, o)
			return
		}
	}
	o := p.others[string(name)]
	if o == nil {
		o = p.learnOther(name)
	}
	if k < len(p.recent) && o.tally == o {
		p.recent[k] = o
	}
	p.near = p.near || o.near >= 0
	p.line = append(p.line, o)
}

// learnOther returns the count of a name not seen before: its own while
// fewer than maxOthers names are counted, else overall, with the field
// the name is a near miss of.
func (p *Parser) learnOther(name []byte) *other {
	near := -1
	for f := range p.names {
		if nearMiss(name, p.names[f]) {
			near = f
			break
		}
	}
	if len(p.others) < maxOthers {
		o := &other{name: string(name), near: near}
		o.tally = o
		p.others[o.name] = o
		return o
	}
	if p.overall == nil {
		p.overall = &other{name: OtherFields, near: -1}
		p.overall.tally = p.overall
	}
	if near < 0 {
		return p.overall
	}
	// Named, since it may reject the line; counted with the others.
	return &other{name: string(name), near: near, tally: p.overall}
}

// nearMiss reports whether name is most likely a misspelling of field:
// the same name in other case ("Units"), or with one letter doubled
// ("pkk"); or, for a field of four letters or more, with one letter
// added, left out or changed, or two neighbours swapped ("unit",
// "tabel"). Shorter names are too close to common members of logs (ip,
// id, ms) for more.
func nearMiss(name, field []byte) bool {
	if bytes.EqualFold(name, field) {
		return true
	}
	n, m := len(name), len(field)
	if n == m+1 {
		for i := 1; i < n; i++ { // a letter doubled
			if lower(name[i]) == lower(name[i-1]) && bytes.EqualFold(name[:i], field[:i]) && bytes.EqualFold(name[i+1:], field[i:]) {
				return true
			}
		}
	}
	if m < 4 || n < m-1 || n > m+1 {
		return false
	}
	return editedOnce(name, field)
}

// editedOnce reports whether a and b, letters compared without case,
// differ by one letter added, left out or changed, or two neighbours
// swapped.
func editedOnce(a, b []byte) bool {
	i := 0
	for i < len(a) && i < len(b) && lower(a[i]) == lower(b[i]) {
		i++
	}
	rest := func(x, y []byte) bool { return bytes.EqualFold(x, y) }
	switch {
	case len(a) == len(b):
		return rest(a[i+1:], b[i+1:]) || // changed
			(i+1 < len(a) && lower(a[i]) == lower(b[i+1]) && lower(a[i+1]) == lower(b[i]) && rest(a[i+2:], b[i+2:])) // swapped
	case len(a) == len(b)+1:
		return rest(a[i+1:], b[i:]) // added
	default:
		return rest(a[i:], b[i+1:]) // left out
	}
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

var (
	errNotObject    = perr(traffic.ReasonBadJSON, "not a JSON object")
	errTruncated    = perr(traffic.ReasonBadJSON, "unexpected end of line")
	errTrailing     = perr(traffic.ReasonBadJSON, "data after the object")
	errTooDeep      = perr(traffic.ReasonBadJSON, fmt.Sprintf("nested deeper than %d", MaxDepth))
	errMissingTable = perr(traffic.ReasonMissingTable, "no table name")
	errMissingPK    = perr(traffic.ReasonMissingPK, "no partition key")
	errMissingOp    = perr(traffic.ReasonBadOp, "no operation")
)

// syntaxErrors are the rejections of the scanner's errors, made once so
// that a bad line costs no allocation.
var syntaxErrors = func() map[error]*ParseError {
	m := map[error]*ParseError{jsonscan.ErrEnd: errTruncated, jsonscan.ErrTooDeep: errTooDeep,
		jsonscan.ErrBadUTF8: perr(traffic.ReasonBadUTF8, jsonscan.ErrBadUTF8.Error())}
	for _, e := range []error{jsonscan.ErrControlChar, jsonscan.ErrBadEscape, jsonscan.ErrBadNumber, jsonscan.ErrBadLiteral,
		jsonscan.ErrExpectName, jsonscan.ErrExpectColon, jsonscan.ErrObjectComma, jsonscan.ErrArrayComma, jsonscan.ErrExpectValue} {
		m[e] = perr(traffic.ReasonBadJSON, e.Error())
	}
	return m
}()

// syntaxError returns the rejection of a scanner error.
func syntaxError(err error) *ParseError {
	if pe, ok := syntaxErrors[err]; ok {
		return pe
	}
	return perr(traffic.ReasonBadJSON, err.Error())
}

// scanObject walks the top-level object, checking all of it, and records
// the spans of the members the parser knows.
func (p *Parser) scanObject(b []byte) error {
	i := jsonscan.Space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errNotObject
	}
	i++
	for first := true; ; first = false {
		name, esc, vi, more, err := jsonscan.Member(b, i, first)
		if err != nil {
			return syntaxError(err)
		}
		if !more {
			i = vi
			break
		}
		if esc {
			p.scratch = jsonscan.Unescape(p.scratch[:0], name)
			name = p.scratch
		}
		v, next, err := jsonscan.ScanValue(b, vi, MaxDepth)
		if err != nil {
			return syntaxError(err)
		}
		if f := p.field(name); f >= 0 {
			if p.vals[f].Kind != jsonscan.None {
				// Which of the two is meant cannot be told.
				return &ParseError{Reason: traffic.ReasonDuplicateField, Detail: fmt.Sprintf("%q given twice", p.names[f])}
			}
			p.vals[f] = v
		} else {
			p.noteOther(name)
		}
		i = next
	}
	if jsonscan.Space(b, i) != len(b) {
		return errTrailing
	}
	return nil
}

// field returns the field a member name is, or -1: the first, in field
// order, whose name it is. Only the names that start with its first byte
// are compared.
func (p *Parser) field(name []byte) int {
	if len(name) == 0 {
		return -1
	}
	for m := p.first[name[0]]; m != 0; m &= m - 1 {
		f := bits.TrailingZeros16(m)
		if string(p.names[f]) == string(name) {
			return f
		}
	}
	return -1
}

// bytesOf returns the content of a string span, unescaped into p.scratch
// when needed. The result is valid until the next call.
func (p *Parser) bytesOf(line []byte, v jsonscan.Span) []byte {
	if !v.Escaped {
		return line[v.Start:v.End]
	}
	p.scratch = jsonscan.Unescape(p.scratch[:0], line[v.Start:v.End])
	return p.scratch
}

func (p *Parser) internBytes(b []byte) string {
	if s, ok := p.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(p.intern) < maxInterned {
		p.intern[s] = s
	}
	return s
}

// aKind names a kind of value with its article: "a string", "an object".
func aKind(k jsonscan.Kind) string {
	switch k {
	case jsonscan.Object, jsonscan.Array:
		return "an " + k.String()
	case jsonscan.Null:
		return "null"
	}
	return "a " + k.String()
}

// optional reports whether a member is absent or null.
func optional(v jsonscan.Span) bool { return v.Kind == jsonscan.None || v.Kind == jsonscan.Null }

// parseTime parses an RFC 3339 time into UTC, as time.Parse with
// time.RFC3339Nano does. Times in UTC ("Z") with at most nanosecond digits
// take a fast path through the minute cache; anything else goes to
// time.Parse.
func (p *Parser) parseTime(s []byte) (time.Time, bool) {
	if n := len(s); n >= 20 && n <= 30 && s[n-1] == 'Z' && s[16] == ':' && isDigit(s[17]) && isDigit(s[18]) {
		sec := int(s[17]-'0')*10 + int(s[18]-'0')
		frac := s[19 : n-1]
		nsec, ok := 0, sec < 60
		if len(frac) > 0 {
			ok = ok && frac[0] == '.' && len(frac) >= 2
			scale := 100_000_000
			for _, c := range frac[min(len(frac), 1):] {
				ok = ok && isDigit(c)
				nsec += int(c-'0') * scale
				scale /= 10
			}
		}
		if ok {
			m := &p.minute[(int(s[14]-'0')*10+int(s[15]-'0'))%minuteSlots]
			prefix := [2]uint64{binary.LittleEndian.Uint64(s), binary.LittleEndian.Uint64(s[8:])}
			if !m.ok || m.prefix != prefix {
				var buf [20]byte
				copy(buf[:16], s[:16])
				copy(buf[16:], ":00Z")
				base, err := time.Parse(time.RFC3339, string(buf[:]))
				if err != nil {
					return time.Time{}, false
				}
				m.prefix, m.unix, m.ok = prefix, base.Unix(), true
			}
			// The same Time, to the bits, as time.Parse's in UTC.
			return time.Unix(m.unix+int64(sec), int64(nsec)).UTC(), true
		}
	}
	tm, err := time.Parse(time.RFC3339Nano, unsafeString(s))
	if err != nil {
		return time.Time{}, false
	}
	return tm.UTC(), true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// Epoch numbers are told apart by their size: from DynamoDB's launch
// (2012) to the last instant RFC 3339 can write (9999-12-31T23:59:59Z),
// seconds, milliseconds, microseconds and nanoseconds since 1970 fall in
// ranges that do not meet, so a number is in one unit's range at most.
// 1795760000 can only be seconds: as milliseconds it would be in 1970.
const (
	minEpochSeconds = 1325376000   // 2012-01-01T00:00:00Z
	maxEpochSeconds = 253402300800 // just past 9999-12-31T23:59:59.999999999Z
)

// epochTime returns the time of a Unix epoch number in the unit its size
// says, or false when it is in no unit's range. A whole number is read
// exactly (nanoseconds need all 19 digits), any other as a float.
func epochTime(s string) (time.Time, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		switch {
		case i >= minEpochSeconds && i < maxEpochSeconds:
			return time.Unix(i, 0).UTC(), true
		case i >= minEpochSeconds*1e3 && i < maxEpochSeconds*1e3:
			return time.UnixMilli(i).UTC(), true
		case i >= minEpochSeconds*1e6 && i < maxEpochSeconds*1e6:
			return time.UnixMicro(i).UTC(), true
		case i >= minEpochSeconds*1e9:
			return time.Unix(0, i).UTC(), true
		}
		return time.Time{}, false
	}
	n, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return time.Time{}, false
	case n >= minEpochSeconds && n < maxEpochSeconds:
		whole := math.Floor(n)
		return time.Unix(int64(whole), int64(math.Round((n-whole)*1e9))).UTC(), true
	case n >= minEpochSeconds*1e3 && n < maxEpochSeconds*1e3:
		whole := math.Floor(n)
		return time.UnixMilli(int64(whole)).Add(time.Duration((n - whole) * 1e6)).UTC(), true
	case n >= minEpochSeconds*1e6 && n < maxEpochSeconds*1e6:
		whole := math.Floor(n)
		return time.UnixMicro(int64(whole)).Add(time.Duration(math.Round((n - whole) * 1e3))).UTC(), true
	case n >= minEpochSeconds*1e9 && n < math.MaxInt64:
		// Nanoseconds reach 2262 only, as an int64 does.
		return time.Unix(0, int64(n)).UTC(), true
	}
	return time.Time{}, false
}

// quote cites a piece of the line in an error, masked as keys are
// (traffic.Quote).
func (p *Parser) quote(b []byte) string { return traffic.Quote(p.mask, b) }

// invalid turns a check's refusal into the line's rejection.
func (*Parser) invalid(e *traffic.Invalid) *ParseError {
	return &ParseError{Reason: e.Reason, Detail: e.Detail}
}

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
