package streamrecord

import (
	"strings"
	"testing"
)

func TestCanonicalNumber(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"0", "0", true},
		{"-0", "0", true},
		{"+0", "0", true},
		{"0.000", "0", true},
		{"0e10", "0", true},
		{"123", "123", true},
		{"-123", "-123", true},
		{"+123", "123", true},
		{"007", "7", true},
		{"1.50", "1.5", true},
		{"1.0", "1", true},
		{"-1.500", "-1.5", true},
		{".5", "0.5", true},
		{"5.", "5", true},
		{"0.05", "0.05", true},
		{"000.0500", "0.05", true},
		{"1E+2", "100", true},
		{"1e2", "100", true},
		{"1.5e3", "1500", true},
		{"15E-1", "1.5", true},
		{"1.5e-3", "0.0015", true},
		{"-2.50E-2", "-0.025", true},
		{"123.456e1", "1234.56", true},
		{"9.99999999999999999999999999999999999999E+125", strings.Repeat("9", 39) + strings.Repeat("0", 126-39), true},
		{"1E-130", "0." + strings.Repeat("0", 129) + "1", true},
		{"", "", false},
		{"-", "", false},
		{".", "", false},
		{"abc", "", false},
		{"1.2.3", "", false},
		{"1e", "", false},
		{"1e+", "", false},
		{"1x", "", false},
		{"1e5000", "", false},
		{"--1", "", false},
		{"0x10", "", false},
	} {
		got, ok := canonicalNumber(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("canonicalNumber(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzCanonicalNumber checks that the canonical form is a fixed point: a
// canonical number maps to itself, so two spellings never split one key.
func FuzzCanonicalNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "1.50", "1E+2", "-2.50E-2", ".5", "1e400", "abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := canonicalNumber(s)
		if !ok {
			return
		}
		again, ok := canonicalNumber(c)
		if !ok || again != c {
			t.Fatalf("canonicalNumber(%q) = %q, but canonicalNumber(%q) = %q, %v", s, c, c, again, ok)
		}
	})
}

// FuzzIsCanonical checks the shortcut in canonicalNumber: whatever
// isCanonical accepts, the full computation leaves as it is.
func FuzzIsCanonical(f *testing.F) {
	for _, s := range []string{"0", "-0", "-0.5", "0.50", "1700000001.01", "12", "-12", "012", "1.", ".5", "1e5", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !isCanonical(s) {
			return
		}
		if c, ok := canonicalize(s); !ok || c != s {
			t.Fatalf("isCanonical(%q), but canonicalize gives %q, %v", s, c, ok)
		}
	})
}
