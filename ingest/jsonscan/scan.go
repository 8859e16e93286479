package jsonscan

import (
	"errors"
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
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

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

// plainEnd returns the index of the first byte at or after j that is not
// plain ASCII. It is small enough to be inlined: most strings of the
// decoders' inputs are short names and values, where a call would cost as
// much as the scan.
func plainEnd(b []byte, j int) int {
	for j < len(b) && plain[b[j]] {
		j++
	}
	return j
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
		next, esc, err := ScanString(b, i)
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

// Open reads the opening bracket of the object or array at b[i] and the
// white space after it. It returns the index of the first member or
// element, or, when the container is empty, the index after its closing
// bracket with empty set.
func Open(b []byte, i int) (next int, empty bool) {
	closer := byte('}')
	if b[i] == '[' {
		closer = ']'
	}
	i = Space(b, i+1)
	if i < len(b) && b[i] == closer {
		return i + 1, true
	}
	return i, false
}

// Name reads a member name at b[i] and the colon after it. It returns the
// index after the name's closing quote (the name is b[i+1:end-1]), whether
// the name holds escapes, and the index of the member's value, white space
// skipped.
func Name(b []byte, i int) (end int, escaped bool, value int, err error) {
	if i >= len(b) {
		return 0, false, 0, ErrEnd
	}
	if b[i] != '"' {
		return 0, false, 0, ErrExpectName
	}
	if end, escaped, err = ScanString(b, i); err != nil {
		return 0, false, 0, err
	}
	if value, err = colon(b, end); err != nil {
		return 0, false, 0, err
	}
	return end, escaped, value, nil
}

// Next reads what follows a member or an element at b[i] (white space
// first): a comma, after which more is set and next is the next member or
// element, white space skipped; or the closing bracket closer ('}' or
// ']'), after which next is the index after it.
func Next(b []byte, i int, closer byte) (next int, more bool, err error) {
	i = Space(b, i)
	if i >= len(b) {
		return 0, false, ErrEnd
	}
	switch b[i] {
	case ',':
		return Space(b, i+1), true, nil
	case closer:
		return i + 1, false, nil
	}
	if closer == '}' {
		return 0, false, ErrObjectComma
	}
	return 0, false, ErrArrayComma
}

// maxDepth is the deepest nesting Skip can track (one bit per level).
const maxDepth = 64

// Skip checks the value starting at b[i] and returns the index after it.
// depth bounds the nesting of containers, as in ScanValue; above 64 it
// counts as 64. It walks without recursion, so hostile nesting costs
// nothing but the bytes read, and in one loop without a call per token: it
// is the hot path of the decoders that skip what they do not need (the
// images of stream records).
func Skip(b []byte, i, depth int) (int, error) {
	depth = min(depth, maxDepth)
	var objects uint64 // bit n set: level n+1 is an object
	level := 0
	var err error
	for {
		// A value at b[i].
		if i >= len(b) {
			return 0, ErrEnd
		}
		switch c := b[i]; {
		case c == '"':
			if i = plainEnd(b, i+1); i < len(b) && b[i] == '"' {
				i++
			} else if i, _, err = scanString(b, i, i); err != nil {
				return 0, err
			}
		case c == '{' || c == '[':
			if level == depth {
				return 0, ErrTooDeep
			}
			var empty bool
			if i, empty = Open(b, i); empty {
				break
			}
			level++
			if c == '[' {
				objects &^= 1 << (level - 1)
				continue
			}
			objects |= 1 << (level - 1)
			if i, err = skipName(b, i); err != nil {
				return 0, err
			}
			continue
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
		// After a value: the next member or element, or the end of one or
		// more containers.
		for {
			if level == 0 {
				return i, nil
			}
			i = Space(b, i)
			if i >= len(b) {
				return 0, ErrEnd
			}
			inObject := objects&(1<<(level-1)) != 0
			if b[i] == ',' {
				if i = Space(b, i+1); inObject {
					if i, err = skipName(b, i); err != nil {
						return 0, err
					}
				}
				break
			}
			switch {
			case inObject && b[i] == '}', !inObject && b[i] == ']':
				i++
				level--
			case inObject:
				return 0, ErrObjectComma
			default:
				return 0, ErrArrayComma
			}
		}
	}
}

// skipName checks a member name at b[i] and the colon after it, and
// returns the index of the value.
func skipName(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, ErrEnd
	}
	if b[i] != '"' {
		return 0, ErrExpectName
	}
	j := plainEnd(b, i+1)
	if j < len(b) && b[j] == '"' {
		j++
	} else {
		var err error
		if j, _, err = scanString(b, i+1, j); err != nil {
			return 0, err
		}
	}
	return colon(b, j)
}

// colon reads the colon after a member name at b[i], white space around,
// and returns the index of the value.
func colon(b []byte, i int) (int, error) {
	i = Space(b, i)
	if i >= len(b) {
		return 0, ErrEnd
	}
	if b[i] != ':' {
		return 0, ErrExpectColon
	}
	return Space(b, i+1), nil
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
