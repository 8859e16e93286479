package jsonl

import (
	"encoding/binary"
	"math/bits"

	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// This file is the parser's fast path, for the lines logs write: plain
// names and values, the same table, index and operation names over and
// over. It changes how fast a line is read,
// never what it gets: a line the fast path is not sure of is read by the
// full scanner (scanObject), as every line was before, and what the fast
// path takes from a line is what the full scanner takes from it
// (TestCompactAsFull and FuzzCompactAsFull hold it to that).

// scanCompact is scanObject for a line written the way logs write them:
// every value a plain string (printable ASCII, no escapes), a number or a
// literal, every name plain, every field of the contract given once and
// its name followed by its colon. It
// records the spans and notes the members outside the contract as
// scanObject does for such a line, and reports false on anything else (an
// escape, a byte outside printable ASCII, an object or array, a field
// given twice, a syntax error), with some spans perhaps recorded: the
// caller then clears them and reads the line with scanObject, which
// accepts or rejects it as it always did. A member outside the contract
// is noted once its value is read, as scanObject notes it, so that a line
// read twice leaves the names counted as one read would.
func (p *Parser) scanCompact(b []byte) bool {
	i := jsonscan.Space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	for {
		// Past the brace or a comma: the member's name.
		if i = jsonscan.Space(b, i+1); i >= len(b) || b[i] != '"' {
			return false
		}
		f, j := p.known(b, i)
		if f < 0 {
			if j = jsonscan.PlainEnd(b, i+1); j+1 >= len(b) || b[j] != '"' || b[j+1] != ':' {
				return false
			}
			f = p.field(b[i+1 : j])
		}
		name := b[i+1 : j]
		if f >= 0 && p.vals[f].Kind != jsonscan.None {
			return false
		}
		v, ok := plainValue(b, jsonscan.Space(b, j+2))
		if !ok {
			return false
		}
		if f >= 0 {
			p.vals[f] = v.Span
		} else {
			p.noteOther(name)
		}
		switch i = jsonscan.Space(b, v.next); {
		case i >= len(b):
			return false
		case b[i] == '}':
			return jsonscan.Space(b, i+1) == len(b)
		case b[i] != ',':
			return false
		}
	}
}

// span is a value's span and the index after it.
type span struct {
	jsonscan.Span
	next int
}

// plainValue reads the value at b[i] when it is a plain string, a number
// or a literal, as jsonscan.ScanValue does.
func plainValue(b []byte, i int) (span, bool) {
	if i < len(b) && b[i] == '"' {
		j := jsonscan.PlainEnd(b, i+1)
		if j >= len(b) || b[j] != '"' {
			return span{}, false
		}
		return span{jsonscan.Span{Start: i + 1, End: j, Kind: jsonscan.String}, j + 1}, true
	}
	// Depth 0 refuses an object or array.
	v, next, err := jsonscan.ScanValue(b, i, 0)
	return span{v, next}, err == nil
}

// token is a member name as compact JSON writes it, `"name":`, to be
// compared with a line a word at a time: word holds its first eight
// bytes (those it has, the rest masked out by mask), rest the others.
type token struct {
	word, mask uint64
	rest       string
	plain      bool // the name is plain ASCII: scanCompact may find it
}

func makeToken(name []byte) token {
	t := []byte(`"` + string(name) + `":`)
	var w [8]byte
	n := copy(w[:], t)
	return token{
		word:  binary.LittleEndian.Uint64(w[:]),
		mask:  ^uint64(0) >> (64 - 8*n),
		rest:  string(t[n:]),
		plain: jsonscan.PlainEnd(name, 0) == len(name),
	}
}

// known returns the field whose name, written `"name":`, starts at b[i]
// (its opening quote), and the index of the name's closing quote; or -1.
// The names of the fields that start with the name's first byte are
// compared a word at a time.
func (p *Parser) known(b []byte, i int) (f, end int) {
	if i+8 > len(b) {
		return -1, 0
	}
	w := binary.LittleEndian.Uint64(b[i:])
	for m := p.first[byte(w>>8)]; m != 0; m &= m - 1 {
		f := bits.TrailingZeros16(m)
		t := &p.tokens[f]
		if w&t.mask != t.word || !t.plain {
			continue
		}
		if n := i + 8 + len(t.rest); len(t.rest) > 0 && (n > len(b) || string(b[i+8:n]) != t.rest) {
			continue
		}
		return f, i + 1 + len(p.names[f])
	}
	return -1, 0
}

// nameSlots is the number of table and index names a Parser remembers by
// their bytes, to find them without a map lookup; opSlots the number of
// operation names. (len*11 + first byte) mod 32 tells the twelve
// operation names apart.
const (
	nameSlots = 64
	opSlots   = 32
)

// opMemo is an operation name remembered with its Operation.
type opMemo struct {
	name string
	op   traffic.Operation
}

// validName returns the name b holds, interned, and whether it is one
// DynamoDB accepts (traffic.ValidName). b is not empty. The names found
// valid are remembered in one slot each, by their length and three of
// their bytes, so that a log's few names are found by one comparison.
func (p *Parser) validName(b []byte) (string, bool) {
	n := len(b)
	slot := &p.valid[(uint(n)*31^uint(b[0])*7^uint(b[n/2])*3^uint(b[n-1]))%nameSlots]
	if *slot == string(b) {
		return *slot, true
	}
	s := p.internBytes(b)
	if !traffic.ValidName(s) {
		return s, false
	}
	*slot = s
	return s, true
}

// lookupOp is traffic.LookupOperation of b, with the names found
// remembered (interned) in one slot each, so that a log's operations are
// found by one comparison.
func (p *Parser) lookupOp(b []byte) (traffic.Operation, bool) {
	if len(b) == 0 {
		return traffic.LookupOperation("")
	}
	m := &p.ops[(uint(len(b))*11+uint(b[0]))%opSlots]
	if m.name == string(b) {
		return m.op, true
	}
	op, ok := traffic.LookupOperation(unsafeString(b))
	if ok {
		m.name, m.op = p.internBytes(b), op
	}
	return op, ok
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// plainNumber returns the value of a number (checked as JSON) written as
// digits with perhaps a fraction, 15 digits at most ("2", "0.5"), or
// false for any other: what strconv.ParseFloat returns for it, since the
// digits and the power of ten are both exact in a float64 and a division
// of exact values is rounded correctly, as ParseFloat's result is.
func plainNumber(u []byte) (float64, bool) {
	var m uint64
	digits, frac := 0, -1
	for _, c := range u {
		switch {
		case isDigit(c):
			m = m*10 + uint64(c-'0')
			digits++
		case c == '.' && frac < 0:
			frac = digits
		default:
			return 0, false
		}
	}
	if digits > 15 {
		return 0, false
	}
	if frac < 0 {
		return float64(m), true
	}
	return float64(m) / pow10[digits-frac], true
}

// buildCompact is build for a line scanCompact read, when it holds what
// most lines hold: a table, an operation and a key, perhaps an index, a
// sort key, units and a time (RFC 3339 or epoch), no throttling, and
// nothing wrong.
// It sets ev as build would and reports true; for any other line it
// reports false having set nothing build does not set again (names and
// operations are remembered as build remembers them), and the caller
// builds the line with build, which accepts or rejects it as it always
// did. It reads the fields without the readings' loop, which costs a
// check and a call a field.
func (p *Parser) buildCompact(line []byte, ev *traffic.Event) bool {
	const throttling = 1<<fThrottled | 1<<fThrottleReason | 1<<fThrottleResource
	present := uint16(0)
	for f, v := range p.vals {
		if v.Kind != jsonscan.None && v.Kind != jsonscan.Null {
			present |= 1 << f
		}
	}
	str := func(f int) []byte { v := p.vals[f]; return line[v.Start:v.End] }
	if present&throttling != 0 || present&(1<<fTable|1<<fOp|1<<fPK) != 1<<fTable|1<<fOp|1<<fPK ||
		p.vals[fTable].Kind != jsonscan.String || p.vals[fOp].Kind != jsonscan.String || p.vals[fPK].Kind != jsonscan.String ||
		len(str(fTable)) == 0 || len(str(fPK)) == 0 {
		return false
	}
	table, ok := p.validName(str(fTable))
	if !ok {
		return false
	}
	op, ok := p.lookupOp(str(fOp))
	if !ok {
		return false
	}
	e := traffic.Event{Source: p.source, Table: table, Class: op.Class, Units: op.DefaultUnits}
	if present&(1<<fIndex) != 0 {
		if p.vals[fIndex].Kind != jsonscan.String {
			return false
		}
		if ix := str(fIndex); len(ix) > 0 {
			if e.Index, ok = p.validName(ix); !ok {
				return false
			}
		}
	}
	if present&(1<<fSK) != 0 && p.vals[fSK].Kind != jsonscan.String {
		return false
	}
	if present&(1<<fUnits) != 0 {
		if p.vals[fUnits].Kind != jsonscan.Number {
			return false
		}
		if e.Units, ok = plainNumber(str(fUnits)); !ok || e.Units > op.MaxUnits {
			return false
		}
	}
	if present&(1<<fTime) != 0 {
		switch p.vals[fTime].Kind {
		case jsonscan.String:
			e.Time, ok = p.parseTime(str(fTime))
		case jsonscan.Number:
			e.Time, ok = epochTime(unsafeString(str(fTime)))
		default:
			return false
		}
		if !ok || e.Time.Before(traffic.DynamoDBLaunch) {
			return false
		}
	}
	// Nothing is wrong: the keys are copied and the clock read last.
	e.PK = p.key(str(fPK))
	if present&(1<<fSK) != 0 {
		e.SK = p.key(str(fSK))
	}
	if present&(1<<fTime) == 0 {
		if e.Time = p.now(); e.Time.Before(traffic.DynamoDBLaunch) {
			return false
		}
	}
	p.op, p.said = op, false
	*ev = e
	return true
}
