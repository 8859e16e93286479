package detect

import (
	"testing"
	"time"
)

func TestMatchTime(t *testing.T) {
	utc := func(y, mo, d, h, mi, s int) time.Time { return time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC) }
	for _, tc := range []struct {
		key   string
		shape string // "" for no match
		part  string
		when  time.Time
	}{
		// Dates and timestamps, bare and behind prefixes.
		{"2026-11-22", ShapeDate, "2026-11-22", utc(2026, 11, 22, 0, 0, 0)},
		{"EVENTS#2026-11-22", ShapeDate, "2026-11-22", utc(2026, 11, 22, 0, 0, 0)},
		{"EVENTS#2026-11-22#eu-west-1", ShapeDate, "2026-11-22", utc(2026, 11, 22, 0, 0, 0)},
		{"logs/2026/11/22", ShapeDate, "2026/11/22", utc(2026, 11, 22, 0, 0, 0)},
		{"METRICS#2026-11", ShapeMonth, "2026-11", utc(2026, 11, 1, 0, 0, 0)},
		{"20261122", ShapeCompactDate, "20261122", utc(2026, 11, 22, 0, 0, 0)},
		{"DAY_20261122", ShapeCompactDate, "20261122", utc(2026, 11, 22, 0, 0, 0)},
		{"2026112210", ShapeCompactDateTime, "2026112210", utc(2026, 11, 22, 10, 0, 0)},
		{"H#202611221030", ShapeCompactDateTime, "202611221030", utc(2026, 11, 22, 10, 30, 0)},
		{"20261122103059", ShapeCompactDateTime, "20261122103059", utc(2026, 11, 22, 10, 30, 59)},
		{"2026-11-22T10:00:00Z", ShapeDateTime, "2026-11-22T10:00:00Z", utc(2026, 11, 22, 10, 0, 0)},
		{"2026-11-22T10:00:00.123Z", ShapeDateTime, "2026-11-22T10:00:00.123Z", utc(2026, 11, 22, 10, 0, 0)},
		{"2026-11-22T11:00:00+01:00", ShapeDateTime, "2026-11-22T11:00:00+01:00", utc(2026, 11, 22, 10, 0, 0)},
		{"TS#2026-11-22T10:15", ShapeDateTime, "2026-11-22T10:15", utc(2026, 11, 22, 10, 15, 0)},
		{"2026-11-22 10:15:00", ShapeDateTime, "2026-11-22 10:15:00", utc(2026, 11, 22, 10, 15, 0)},
		{"1795341600", ShapeEpochSeconds, "1795341600", utc(2026, 11, 22, 10, 0, 0)},
		{"BUCKET#1795341600", ShapeEpochSeconds, "1795341600", utc(2026, 11, 22, 10, 0, 0)},
		{"1795341600000", ShapeEpochMillis, "1795341600000", utc(2026, 11, 22, 10, 0, 0)},
		{"1795341600.5", ShapeEpochSeconds, "1795341600", utc(2026, 11, 22, 10, 0, 0)},
		{"2028-02-29", ShapeDate, "2028-02-29", utc(2028, 2, 29, 0, 0, 0)},

		// Not times.
		{"USER#20261122x", "", "", time.Time{}},
		{"USER#x20261122", "", "", time.Time{}},
		{"99999999", "", "", time.Time{}},
		{"12345678", "", "", time.Time{}},
		{"20261322", "", "", time.Time{}}, // month 13
		{"20261131", "", "", time.Time{}}, // 31 November
		{"2027-02-29", "", "", time.Time{}},
		{"2026-11-22x", "", "", time.Time{}},
		{"2026-11-22T25:00", "", "", time.Time{}}, // hour 25, and not a bare date either
		{"+14155552671", "", "", time.Time{}},
		{"4155552671", "", "", time.Time{}},
		{"+1-415-555-2671", "", "", time.Time{}},
		{"(415) 555-2671", "", "", time.Time{}},
		{"07700900123", "", "", time.Time{}},
		{"+442071838750", "", "", time.Time{}},
		{"4915123456789", "", "", time.Time{}}, // 13 digits, beyond 2e12
		{"999999999", "", "", time.Time{}},     // 9 digits
		{"USER#123", "", "", time.Time{}},
		{"PENDING", "", "", time.Time{}},
		{"550e8400-e29b-41d4-a716-446655440000", "", "", time.Time{}},
		{"1965-03-02", "", "", time.Time{}}, // before 1970: a birthday, not a time key
		{"", "", "", time.Time{}},
		{"v2026-11-22", "", "", time.Time{}},
	} {
		m, ok := MatchTime(tc.key)
		if ok != (tc.shape != "") {
			t.Errorf("MatchTime(%q) = %+v, %v; want match %v", tc.key, m, ok, tc.shape != "")
			continue
		}
		if !ok {
			continue
		}
		if m.Shape != tc.shape || tc.key[m.Start:m.End] != tc.part || !m.Time.Equal(tc.when) {
			t.Errorf("MatchTime(%q) = %s %q %v; want %s %q %v", tc.key, m.Shape, tc.key[m.Start:m.End], m.Time, tc.shape, tc.part, tc.when)
		}
	}
}

func FuzzMatchTime(f *testing.F) {
	for _, s := range []string{
		"2026-11-22", "EVENTS#2026-11-22", "20261122", "1795341600", "1795341600000",
		"2026-11-22T10:00:00.123+01:00", "USER#20261122x", "99999999", "+14155552671",
		"2026-11-22T", "2026-11-22T1", "2026-11-22T10:", "2026-11-22T10:00:00.", "2026-1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		m, ok := MatchTime(key)
		if !ok {
			if m != (TimeMatch{}) {
				t.Fatalf("no match but %+v", m)
			}
			return
		}
		if m.Start < 0 || m.End > len(key) || m.Start >= m.End {
			t.Fatalf("bounds %d..%d of %d", m.Start, m.End, len(key))
		}
		part := key[m.Start:m.End]
		if !isDigit(part[0]) {
			t.Fatalf("part %q does not start with a digit", part)
		}
		if (m.Start > 0 && isAlnum(key[m.Start-1])) || (m.End < len(key) && isAlnum(key[m.End])) {
			t.Fatalf("part %q of %q is not at a boundary", part, key)
		}
		if y := m.Time.UTC().Year(); y < minYear-1 || y > maxYear+1 {
			t.Fatalf("year %d out of range for %q", y, key)
		}
		// The match depends on the part and its boundaries only.
		again, ok := MatchTime("X#" + part + "#Y")
		if !ok || again.Shape != m.Shape || !again.Time.Equal(m.Time) {
			t.Fatalf("%q matched as %s but not again behind a prefix: %+v", part, m.Shape, again)
		}
	})
}
