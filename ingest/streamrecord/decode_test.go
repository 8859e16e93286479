package streamrecord

import (
	"strconv"
	"testing"
)

// FuzzWholeSecondsMillis checks the shortcut for whole-second times against
// the SDK's float arithmetic.
func FuzzWholeSecondsMillis(f *testing.F) {
	for _, s := range []string{"1795429020.000", "1795429020", "0", "1.", "999999999999", "1480642020.123", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, ok := wholeSecondsMillis([]byte(s))
		if !ok {
			return
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || int64(v*1000) != ms {
			t.Fatalf("wholeSecondsMillis(%q) = %d; float path %v, %v", s, ms, int64(v*1000), err)
		}
	})
}
