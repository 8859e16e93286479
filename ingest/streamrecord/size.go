package streamrecord

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// The size of an item as DynamoDB counts it for capacity ("DynamoDB item
// sizes and formats", docs/how-it-decides.md): the sum of its attributes'
// names and values, where
//
//   - a string is its UTF-8 bytes; a binary value its raw bytes;
//   - a number is 1 byte per two significant digits (leading and trailing
//     zeroes trimmed) plus 1;
//   - a Boolean or null is 1 byte;
//   - a List or Map is 3 bytes plus its elements, each element 1 byte more
//     (a Map's elements count their names too);
//   - a set is the sum of its elements.
//
// These functions size the values the SDK (or the fallback path) decoded;
// the one-pass decoder sizes the attributes it does not decode as it skips
// them (sizeValue in image.go) by the same rules, and a fuzz test holds the
// two to the same answer.

// attrSize returns the size of one attribute: its name and its value.
func attrSize(name string, v types.AttributeValue) int {
	return len(name) + valueSize(v)
}

// valueSize returns the size of a value.
func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += attrSize(k, e) + 1
		}
		return n
	}
	return 0
}

// imageSize returns the size of an item image: its attributes, plus what
// the decoder sized without decoding (restKey).
func imageSize(img map[string]types.AttributeValue) int {
	n := 0
	for name, v := range img {
		if name == restKey {
			n += restSize(v)
			continue
		}
		n += attrSize(name, v)
	}
	return n
}

// numberSize returns the size of a number's text as DynamoDB stores it: 1
// byte per two significant digits, plus 1. The text is a JSON number
// (sign, digits, fraction, exponent); anything else counts its digits all
// the same.
func numberSize[T string | []byte](s T) int {
	first, last, digits := -1, -1, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 'e' || c == 'E' {
			break
		}
		if c < '0' || c > '9' {
			continue
		}
		if c != '0' {
			if first < 0 {
				first = digits
			}
			last = digits
		}
		digits++
	}
	sig := 0
	if first >= 0 {
		sig = last - first + 1
	}
	return (sig+1)/2 + 1
}

// writeUnitsOf is the write capacity of writing size bytes: one unit per
// started KB, at least 1.
func writeUnitsOf(size int) float64 {
	return writeUnits(int64(size))
}
