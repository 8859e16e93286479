package detect

import (
	"time"
)

// Time shapes recognised in partition keys, the values of TimeMatch.Shape.
const (
	ShapeDate            = "date"             // 2026-11-22, 2026/11/22
	ShapeMonth           = "month"            // 2026-11
	ShapeDateTime        = "datetime"         // 2026-11-22T10:00:00Z (RFC 3339 and shorter ISO forms)
	ShapeCompactDate     = "compact_date"     // 20261122
	ShapeCompactDateTime = "compact_datetime" // 2026112210, 202611221030, 20261122103000
	ShapeEpochSeconds    = "epoch_seconds"    // 10 digits, 2001-09-09 to 2033-05-18
	ShapeEpochMillis     = "epoch_millis"     // 13 digits, same range
)

// Years a date must fall in to count. Narrow on purpose: outside it an
// eight-digit number is far more likely an id than a date, and a birthday
// is no time-ordered key.
const (
	minYear = 1970
	maxYear = 2100
)

// TimeMatch is a date or timestamp found in a partition key.
type TimeMatch struct {
	// Shape is one of the Shape constants.
	Shape string
	// Start and End are the byte offsets of the time part in the key, so
	// "EVENTS#2026-11-22" has its prefix in key[:Start].
	Start, End int
	// Time is the instant the time part denotes (UTC unless it had an
	// offset; dates are midnight).
	Time time.Time
}

// MatchTime finds the leftmost date or timestamp in a partition key: the
// whole key or a part of it that starts and ends at a boundary (start or
// end of the key, or a character that is neither letter nor digit), so that
// "EVENTS#2026-11-22" matches but "USER#20261122x" does not. Bare numbers
// count only in the epoch ranges of 10 digits (seconds) or 13 (milliseconds)
// from 1e9 to 2e9 seconds (2001 to 2033), and as 8, 10, 12 or 14 digit
// compact dates with a valid calendar date from 1970 to 2100; anything else
// (phone numbers, most ids) does not match.
func MatchTime(key string) (TimeMatch, bool) {
	for i := 0; i < len(key); i++ {
		if !isDigit(key[i]) || (i > 0 && isAlnum(key[i-1])) {
			continue
		}
		if m, ok := matchAt(key, i); ok {
			return m, true
		}
	}
	return TimeMatch{}, false
}

// matchAt tries every shape at key[i:], longest first, and keeps the first
// that ends at a boundary.
func matchAt(key string, i int) (TimeMatch, bool) {
	s := key[i:]
	bounded := func(n int) bool { return n == len(s) || !isAlnum(s[n]) }
	found := func(shape string, n int, t time.Time) (TimeMatch, bool) {
		return TimeMatch{Shape: shape, Start: i, End: i + n, Time: t}, true
	}
	if t, n, ok := isoDateTime(s); ok && bounded(n) {
		return found(ShapeDateTime, n, t)
	}
	if t, ok := isoDate(s); ok && bounded(10) {
		return found(ShapeDate, 10, t)
	}
	// A month must not be the start of a longer date that failed above
	// ("2027-02-29" is no month).
	if len(s) >= 7 && digits(s[:4]) && s[4] == '-' && digits(s[5:7]) && bounded(7) &&
		!(len(s) > 8 && (s[7] == '-' || s[7] == '/') && isDigit(s[8])) {
		if t, ok := calendar(atoi(s[:4]), atoi(s[5:7]), 1); ok {
			return found(ShapeMonth, 7, t)
		}
	}
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	if !bounded(n) {
		return TimeMatch{}, false
	}
	run := s[:n]
	switch n {
	case 10:
		if v := atoi(run); v >= 1e9 && v < 2e9 {
			return found(ShapeEpochSeconds, n, time.Unix(int64(v), 0).UTC())
		}
	case 13:
		if v := atoi(run); v >= 1e12 && v < 2e12 {
			return found(ShapeEpochMillis, n, time.UnixMilli(int64(v)).UTC())
		}
	}
	switch n {
	case 8, 10, 12, 14:
		t, ok := calendar(atoi(run[:4]), atoi(run[4:6]), atoi(run[6:8]))
		if !ok {
			break
		}
		if n == 8 {
			return found(ShapeCompactDate, n, t)
		}
		hms := [3]int{}
		for j := 8; j < n; j += 2 {
			hms[(j-8)/2] = atoi(run[j : j+2])
		}
		if hms[0] > 23 || hms[1] > 59 || hms[2] > 59 {
			break
		}
		return found(ShapeCompactDateTime, n, t.Add(time.Duration(hms[0])*time.Hour+time.Duration(hms[1])*time.Minute+time.Duration(hms[2])*time.Second))
	}
	return TimeMatch{}, false
}

// isoDate matches YYYY-MM-DD or YYYY/MM/DD at the start of s.
func isoDate(s string) (time.Time, bool) {
	if len(s) < 10 || !digits(s[:4]) || !digits(s[5:7]) || !digits(s[8:10]) {
		return time.Time{}, false
	}
	if sep := s[4]; (sep != '-' && sep != '/') || s[7] != sep {
		return time.Time{}, false
	}
	return calendar(atoi(s[:4]), atoi(s[5:7]), atoi(s[8:10]))
}

// isoDateTime matches an ISO date, 'T' or ' ', an hour, optional minutes,
// seconds and fraction, and an optional Z or ±hh:mm offset, at the start of
// s; it returns the length matched.
func isoDateTime(s string) (time.Time, int, bool) {
	d, ok := isoDate(s)
	if !ok || len(s) < 13 || (s[10] != 'T' && s[10] != ' ') || !digits(s[11:13]) {
		return time.Time{}, 0, false
	}
	hms := [3]int{atoi(s[11:13])}
	n := 13
	for j := 1; j < 3 && n+3 <= len(s) && s[n] == ':' && digits(s[n+1:n+3]); j++ {
		hms[j] = atoi(s[n+1 : n+3])
		n += 3
	}
	if hms[0] > 23 || hms[1] > 59 || hms[2] > 60 {
		return time.Time{}, 0, false
	}
	if n+1 < len(s) && s[n] == '.' && isDigit(s[n+1]) {
		n++
		for n < len(s) && isDigit(s[n]) {
			n++
		}
	}
	loc := time.UTC
	switch {
	case n < len(s) && s[n] == 'Z':
		n++
	case n+6 <= len(s) && (s[n] == '+' || s[n] == '-') && digits(s[n+1:n+3]) && s[n+3] == ':' && digits(s[n+4:n+6]):
		off := atoi(s[n+1:n+3])*3600 + atoi(s[n+4:n+6])*60
		if s[n] == '-' {
			off = -off
		}
		loc = time.FixedZone("", off)
		n += 6
	}
	t := time.Date(d.Year(), d.Month(), d.Day(), hms[0], hms[1], min(hms[2], 59), 0, loc)
	return t, n, true
}

// calendar returns midnight UTC of a valid date from minYear to maxYear.
func calendar(y, m, d int) (time.Time, bool) {
	if y < minYear || y > maxYear || m < 1 || m > 12 || d < 1 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if t.Day() != d { // 2026-02-30 normalises to March
		return time.Time{}, false
	}
	return t, true
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isAlnum(b byte) bool {
	return isDigit(b) || (b|0x20 >= 'a' && b|0x20 <= 'z') || b >= 0x80
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return len(s) > 0
}

// atoi parses a short run of ASCII digits already checked by digits.
func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}
