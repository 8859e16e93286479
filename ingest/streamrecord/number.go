package streamrecord

import "strings"

// maxExponent bounds the decimal exponent accepted in a number. DynamoDB
// numbers have at most 38 significant digits and exponents between -130 and
// +125, so anything larger is not a DynamoDB number and would only make the
// canonical form huge.
const maxExponent = 400

// canonicalNumber returns the canonical text of a DynamoDB number: plain
// decimal notation without exponent, sign only when negative, no leading
// zeros before the point, no trailing zeros after it, no point when the
// value is whole, and "0" for every zero ("-0", "0.00", "0e5"). Two spellings
// of the same number ("1.50", "1.5", "15E-1") map to one key, as DynamoDB
// itself compares them. ok is false when s is not a decimal number.
func canonicalNumber(s string) (string, bool) {
	if isCanonical(s) {
		return s, true
	}
	return canonicalize(s)
}

// canonicalize computes the canonical form of s digit by digit: its
// significant digits and where the point falls among them (mantissa), moved
// by its exponent (exponent), written out plainly (plainDecimal).
func canonicalize(s string) (string, bool) {
	neg, digits, point, i, ok := mantissa(s)
	if !ok {
		return "", false
	}
	if i < len(s) {
		exp, ok := exponent(s[i:])
		if !ok {
			return "", false
		}
		point += exp
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		return "0", true
	}
	return plainDecimal(neg, digits, point), true
}

// mantissa reads the sign and the digits of s up to its exponent: the
// digits without leading zeros, the place of the point after the first
// point digits (negative: zeros before them), and the index where the
// exponent starts (len(s) without one). ok is false without a digit.
func mantissa(s string) (neg bool, digits []byte, point, i int, ok bool) {
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	seenPoint, seenDigit := false, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			seenDigit = true
			if len(digits) == 0 && c == '0' {
				// A leading zero moves the point only after the decimal point.
				if seenPoint {
					point--
				}
				continue
			}
			digits = append(digits, c)
			if !seenPoint {
				point++
			}
		case c == '.' && !seenPoint:
			seenPoint = true
		default:
			return neg, digits, point, i, seenDigit
		}
	}
	return neg, digits, point, i, seenDigit
}

// exponent reads an exponent, "e" or "E", an optional sign and digits, at
// most maxExponent.
func exponent(s string) (int, bool) {
	if s[0] != 'e' && s[0] != 'E' {
		return 0, false
	}
	i, neg := 1, false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i == len(s) {
		return 0, false
	}
	exp := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		exp = exp*10 + int(c-'0')
		if exp > maxExponent {
			return 0, false
		}
	}
	if neg {
		exp = -exp
	}
	return exp, true
}

// plainDecimal writes digits (no leading or trailing zeros, at least one)
// with the point after the first point of them, in plain notation.
func plainDecimal(neg bool, digits []byte, point int) string {
	var b strings.Builder
	b.Grow(len(digits) + 4)
	if neg {
		b.WriteByte('-')
	}
	switch {
	case point <= 0:
		b.WriteString("0.")
		for range -point {
			b.WriteByte('0')
		}
		b.Write(digits)
	case point >= len(digits):
		b.Write(digits)
		for range point - len(digits) {
			b.WriteByte('0')
		}
	default:
		b.Write(digits[:point])
		b.WriteByte('.')
		b.Write(digits[point:])
	}
	return b.String()
}

// isCanonical reports whether s is already in canonical form, the commonest
// case by far ("42", "-7", "1700000001.01"): an optional minus, an integer
// part without leading zero, and optionally a point followed by digits of
// which the last is not 0; "-0" is not canonical. It saves an allocation
// per record for number keys.
func isCanonical(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intLen := i - intStart
	if intLen == 0 || (intLen > 1 && s[intStart] == '0') {
		return false
	}
	if i == len(s) {
		// An integer: "-0" must become "0".
		return intStart == 0 || intLen > 1 || s[intStart] != '0'
	}
	if s[i] != '.' || i+1 == len(s) {
		return false
	}
	for i++; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s[len(s)-1] != '0'
}
