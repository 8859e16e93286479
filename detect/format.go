package detect

import (
	"math"
	"strconv"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// pct formats a fraction as a percentage with at most one decimal; a
// positive fraction too small to show is "under 0.1%", not "0%".
func pct(f float64) string {
	r := math.Round(f*1000) / 10
	if r == 0 && f > 0 {
		return "under 0.1%"
	}
	return strconv.FormatFloat(r, 'f', -1, 64) + "%"
}

// num formats a rate or count with at most two decimals.
func num(f float64) string {
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// quoteKey quotes a key for a sentence.
func quoteKey(k string) string { return strconv.Quote(k) }

// unitName is RCU or WCU.
func unitName(c traffic.Class) string {
	if c == traffic.Write {
		return "WCU"
	}
	return "RCU"
}

// ceilInt is ceil(f) as an int, saturating on huge or invalid values.
func ceilInt(f float64) int {
	switch {
	case f != f || f <= 0:
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	}
	// The epsilon keeps float noise (2.0000000001) from adding a shard.
	return int(math.Ceil(f - 1e-9))
}

// allKeys is "both keys" or "all N keys".
func allKeys(n int) string {
	if n == 2 {
		return "both keys"
	}
	return "all " + strconv.Itoa(n) + " keys"
}

// capitalize upper-cases the first letter of an ASCII sentence.
func capitalize(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

// count formats an exact count with its digits grouped by three
// ("16,920").
func count(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// about words a sort key count, which stores estimate: exact up to 2,
// "about N" below 100, "more than 100" beyond, where estimates saturate.
func about(n uint64) string {
	switch {
	case n <= 2:
		return strconv.FormatUint(n, 10)
	case n < 100:
		return "about " + strconv.FormatUint(n, 10)
	}
	return "more than 100"
}
