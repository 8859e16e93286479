// Package plural writes counts with their nouns in the right number, for
// every output a person reads ("1 event", "2 events"), so that no report,
// log line or error says "1 events".
package plural

import "fmt"

// Integer is any integer type a count comes in.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Noun returns the singular for a count of 1 (or -1), else the plural:
// many when given, else the singular with an "s".
func Noun[N Integer](n N, singular string, many ...string) string {
	if n == 1 || n == ^N(0) && n < 0 {
		return singular
	}
	if len(many) > 0 {
		return many[0]
	}
	return singular + "s"
}

// Count returns n and its noun: "1 event", "2 events".
func Count[N Integer](n N, singular string, many ...string) string {
	return fmt.Sprint(n) + " " + Noun(n, singular, many...)
}
