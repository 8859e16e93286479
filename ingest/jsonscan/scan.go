package jsonscan

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"unicode/utf8"
)

// Kind is the type of a JSON value.
type Kind uint8

// The kinds of value. None is the zero Kind: no value (an absent member).
const (
	None Kind = iota
	String
	Number
	True
	False
	Null
	Object
	Array
)

var kindNames = [...]string{None: "absent", String: "string", Number: "number", True: "boolean", False: "boolean", Null: "null", Object: "object", Array: "array"}

// String returns the kind's name as a message says it: "string",
// "boolean", "object".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Span is one value inside a text: b[Start:End] is the value, and for a
// string the content between its quotes.
type Span struct {
	Start, End int
	Kind       Kind
	// Escaped is set on a string whose content holds backslash escapes
	// (Unescape it before use).
	Escaped bool
}

// Syntax errors. They are fixed values, so that scanning bad input costs no
// allocation; a decoder maps them to its own messages and reasons.
var (
	ErrEnd         = errors.New("unexpected end of input")
	ErrBadUTF8     = errors.New("invalid UTF-8 in a string")
	ErrControlChar = errors.New("control character in a string")
	ErrBadEscape   = errors.New("invalid escape in a string")
	ErrBadNumber   = errors.New("invalid number")
	ErrBadLiteral  = errors.New("invalid literal")
	ErrExpectName  = errors.New("expected a member name")
	ErrExpectColon = errors.New("expected ':'")
	ErrObjectComma = errors.New("expected ',' or '}'")
	ErrArrayComma  = errors.New("expected ',' or ']'")
	ErrExpectValue = errors.New("expected a value")
	ErrTooDeep     = errors.New("nested too deep")
)

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\r' || c == '\n') }

// Space returns the index of the first byte at or after i that is not
// white space (len(b) when there is none).
func Space(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// plain marks the bytes a string can hold without a closer look: not a
// quote, a backslash, a control character or a byte of a multi-byte rune.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// ScanString checks the string whose opening quote is b[i]. It returns the
// index after the closing quote (the content is b[i+1:end-1]) and whether
// the content holds escapes.
func ScanString(b []byte, i int) (end int, escaped bool, err error) {
	j := plainEnd(b, i+1)
	if j < len(b) && b[j] == '"' {
		return j + 1, false, nil
	}
	return scanString(b, i+1, j)
}

// PlainEnd returns the index of the first byte at or after j that is not
// plain ASCII: a quote, a backslash, a control character or a byte of a
// multi-byte rune (len(b) when there is none). A string whose opening
// quote is b[i] and where PlainEnd(b, i+1) is a quote holds neither
// escapes nor anything to check: it is the string ScanString accepts, up
// to that quote. It lets a decoder read the plain strings of its input
// without a call per string.
func PlainEnd(b []byte, j int) int { return plainEnd(b, j) }

// plainEnd is PlainEnd. Eight bytes are looked at a time (see special):
// most strings of the decoders' inputs are short names and values, which
// it passes in one or two words.
func plainEnd(b []byte, j int) int {
	for j+8 <= len(b) {
		if m := special(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	for j < len(b) && plain[b[j]] {
		j++
	}
	return j
}

// Byte-wise constants of special.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special returns w, eight bytes of a string in memory order, with the
// high bit set in the first byte that is not plain (a control character,
// a quote, a backslash, a byte of a multi-byte rune). Bytes after the
// first such byte may be flagged wrongly (a borrow carries upwards), so
// only the lowest flag counts.
func special(w uint64) uint64 {
	// A byte under 0x20 borrows when 0x20 is taken from it; a byte equal
	// to c is zero in w^c, and borrows when 1 is taken from it; either
	// sets its high bit, which is kept only if the byte's own was clear.
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	return ((w-ones*0x20)&^w | (q-ones)&^q | (bs-ones)&^bs | w) & highs
}

// scanString goes on from b[j], the first byte of the string starting at
// b[start] that is not plain ASCII.
func scanString(b []byte, start, j int) (end int, escaped bool, err error) {
	nonASCII := false
	for {
		if j >= len(b) {
			return 0, false, ErrEnd
		}
		c := b[j]
		switch {
		case c == '"':
			if nonASCII && !utf8.Valid(b[start:j]) {
				return 0, false, ErrBadUTF8
			}
			return j + 1, escaped, nil
		case c == '\\':
			escaped = true
			if j+1 >= len(b) {
				return 0, false, ErrEnd
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) {
					return 0, false, ErrEnd
				}
				for k := j + 2; k < j+6; k++ {
					if hexVal(b[k]) < 0 {
						return 0, false, ErrBadEscape
					}
				}
				j += 6
			default:
				return 0, false, ErrBadEscape
			}
		case c < 0x20:
			return 0, false, ErrControlChar
		default: // >= 0x80
			nonASCII = true
			j++
		}
		// Fast path over plain bytes.
		for j < len(b) && plain[b[j]] {
			j++
		}
	}
}

// ScanNumber checks the number starting at b[i] against the JSON grammar
// and returns the index after it.
func ScanNumber(b []byte, i int) (int, error) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i >= len(b) {
		return 0, ErrBadNumber
	}
	if b[i] == '0' {
		i++
	} else if digits() == 0 {
		return 0, ErrBadNumber
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0, ErrBadNumber
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, ErrBadNumber
		}
	}
	return i, nil
}

// ScanLiteral checks that b[i:] starts with lit ("true", "false" or
// "null") and returns the index after it. A text that ends inside the
// literal is ErrEnd.
func ScanLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		if len(b)-i < len(lit) && string(b[i:]) == lit[:len(b)-i] {
			return 0, ErrEnd
		}
		return 0, ErrBadLiteral
	}
	return i + len(lit), nil
}

// ScanValue checks the value starting at b[i] (white space already
// skipped) and returns its span and the index after it. depth is how many
// containers deep the value may nest: 0 accepts scalars only, 1 an object
// or array of scalars.
func ScanValue(b []byte, i, depth int) (Span, int, error) {
	if i >= len(b) {
		return Span{}, 0, ErrEnd
	}
	switch c := b[i]; {
	case c == '"':
		j := plainEnd(b, i+1)
		if j < len(b) && b[j] == '"' {
			return Span{Start: i + 1, End: j, Kind: String}, j + 1, nil
		}
		next, esc, err := scanString(b, i+1, j)
		return Span{Start: i + 1, End: next - 1, Kind: String, Escaped: esc}, next, err
	case c == '-' || ('0' <= c && c <= '9'):
		next, err := ScanNumber(b, i)
		return Span{Start: i, End: next, Kind: Number}, next, err
	case c == 't':
		next, err := ScanLiteral(b, i, "true")
		return Span{Start: i, End: next, Kind: True}, next, err
	case c == 'f':
		next, err := ScanLiteral(b, i, "false")
		return Span{Start: i, End: next, Kind: False}, next, err
	case c == 'n':
		next, err := ScanLiteral(b, i, "null")
		return Span{Start: i, End: next, Kind: Null}, next, err
	case c == '{':
		next, err := Skip(b, i, depth)
		return Span{Start: i, End: next, Kind: Object}, next, err
	case c == '[':
		next, err := Skip(b, i, depth)
		return Span{Start: i, End: next, Kind: Array}, next, err
	}
	return Span{}, 0, ErrExpectValue
}

// Member reads what comes before the value of an object's next member,
// from b[i], just after the opening brace (first set) or after the value
// of the member before: white space, a comma (not before the first
// member), the member name and the colon. It returns the name as it is in
// the text (between its quotes; Unescape it when escaped is set) and the
// index of the value, white space skipped. At the closing brace instead,
// more is unset and next is the index after it.
func Member(b []byte, i int, first bool) (name []byte, escaped bool, next int, more bool, err error) {
	// Compact JSON first: `,"name":` (or `"name":` after the brace).
	if i < len(b) {
		j := i
		if !first && b[j] == ',' {
			j++
		}
		if (first || j > i) && j < len(b) && b[j] == '"' {
			k := plainEnd(b, j+1)
			if k+1 < len(b) && b[k] == '"' && b[k+1] == ':' {
				return b[j+1 : k], false, Space(b, k+2), true, nil
			}
		}
	}
	i = Space(b, i)
	if i >= len(b) {
		return nil, false, 0, false, ErrEnd
	}
	switch c := b[i]; {
	case c == '}':
		return nil, false, i + 1, false, nil
	case !first && c != ',':
		return nil, false, 0, false, ErrObjectComma
	case !first:
		if i = Space(b, i+1); i >= len(b) {
			return nil, false, 0, false, ErrEnd
		}
	}
	if b[i] != '"' {
		return nil, false, 0, false, ErrExpectName
	}
	end, escaped, err := ScanString(b, i)
	if err != nil {
		return nil, false, 0, false, err
	}
	j := Space(b, end)
	if j >= len(b) {
		return nil, false, 0, false, ErrEnd
	}
	if b[j] != ':' {
		return nil, false, 0, false, ErrExpectColon
	}
	return b[i+1 : end-1], escaped, Space(b, j+1), true, nil
}

// fastName returns the index after the colon of a member name at b[i]
// (b[i] is its opening quote) written the way most JSON is, `"name":`
// without escapes or white space, or -1 for any other name. It is small
// enough to be inlined in Skip, and walks the name a byte at a time: the
// names Skip passes over (the attribute names of stream images, "S", "N")
// are shorter than plainEnd's eight bytes at a time pays for; Member, for
// the names a decoder reads ("ApproximateCreationDateTime"), uses
// plainEnd.
func fastName(b []byte, i int) int {
	j := i + 1
	for j < len(b) && plain[b[j]] {
		j++
	}
	if j+1 < len(b) && b[j] == '"' && b[j+1] == ':' {
		return j + 2
	}
	return -1
}

// Element reads what comes before an array's next element, from b[i],
// just after the opening bracket (first set) or after the element before:
// white space and a comma (not before the first element). It returns the
// index of the element, white space skipped. At the closing bracket
// instead, more is unset and next is the index after it.
func Element(b []byte, i int, first bool) (next int, more bool, err error) {
	i = Space(b, i)
	if i >= len(b) {
		return 0, false, ErrEnd
	}
	switch c := b[i]; {
	case c == ']':
		return i + 1, false, nil
	case first:
		return i, true, nil
	case c != ',':
		return 0, false, ErrArrayComma
	}
	return Space(b, i+1), true, nil
}

// maxDepth is the deepest nesting Skip can track (one bit per level).
const maxDepth = 64

// Skip checks the value starting at b[i] and returns the index after it.
// depth bounds the nesting of containers, as in ScanValue; above 64 it
// counts as 64. It walks without recursion, so hostile nesting costs
// nothing but the bytes read.
//
// It is the hot loop of the decoders that skip what they do not need (the
// images of stream records): compact JSON (`,"name":` and plain strings)
// is read on paths inlined here, and anything else by Member, Element and
// scanString, which say what is wrong. It reads better whole (and is one
// of the long scanners docs/architecture.md lists): its state (the level,
// which levels are objects, whether a container just opened) lives in
// locals across one loop, which steps split out would pass back and forth
// on every value.
func Skip(b []byte, i, depth int) (int, error) {
	depth = min(depth, maxDepth)
	var objects uint64 // bit n set: level n+1 is an object
	level := 0
	inObject := false // the innermost container is an object
	opened := false   // the last byte read opened a container
	var err error
	for {
		if !opened {
			// A value at b[i].
			i = Space(b, i)
			if i >= len(b) {
				return 0, ErrEnd
			}
			switch c := b[i]; {
			case c == '"':
				if i = plainEnd(b, i+1); i < len(b) && b[i] == '"' {
					i++
				} else {
					i, _, err = scanString(b, i, i)
				}
			case c == '{' || c == '[':
				if level == depth {
					return 0, ErrTooDeep
				}
				level++
				inObject = c == '{'
				if inObject {
					objects |= 1 << (level - 1)
				} else {
					objects &^= 1 << (level - 1)
				}
				i++
				opened = true
			case c == '-' || ('0' <= c && c <= '9'):
				i, err = ScanNumber(b, i)
			case c == 't':
				i, err = ScanLiteral(b, i, "true")
			case c == 'f':
				i, err = ScanLiteral(b, i, "false")
			case c == 'n':
				i, err = ScanLiteral(b, i, "null")
			default:
				return 0, ErrExpectValue
			}
			if err != nil {
				return 0, err
			}
		}
		// Where the next value starts: past the comma (or the bracket just
		// opened) and, in an object, the member's name; or the end of one
		// or more containers.
		first := opened
		opened = false
		for {
			if level == 0 {
				return i, nil
			}
			var more bool
			if i < len(b) {
				switch c := b[i]; {
				case c == '}' && inObject, c == ']' && !inObject:
					i++
					level--
					inObject = level > 0 && objects&(1<<(level-1)) != 0
					first = false
					continue
				case inObject && (first || c == ','):
					j := i
					if !first {
						j++
					}
					if j < len(b) && b[j] == '"' {
						if v := fastName(b, j); v >= 0 {
							i = v
							more = true
						}
					}
				case !inObject && first && !IsSpace(c):
					more = true
				case !inObject && c == ',':
					i++
					more = true
				}
				if more {
					break
				}
			}
			if inObject {
				_, _, i, more, err = Member(b, i, first)
			} else {
				i, more, err = Element(b, i, first)
			}
			if err != nil {
				return 0, err
			}
			if more {
				break
			}
			level--
			inObject = level > 0 && objects&(1<<(level-1)) != 0
			first = false
		}
	}
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
