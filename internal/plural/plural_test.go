package plural

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Count(0, "event"), "0 events"},
		{Count(1, "event"), "1 event"},
		{Count(uint64(2), "event"), "2 events"},
		{Count(-1, "second"), "-1 second"},
		{Count(int64(1), "entry", "entries"), "1 entry"},
		{Count(3, "entry", "entries"), "3 entries"},
		{Noun(uint8(1), "key"), "key"},
		{Noun(uint8(255), "key"), "keys"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
