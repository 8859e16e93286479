package config

import (
	"runtime/debug"
	"testing"
)

// TestSetDaemonGC checks the daemon's collector target: DaemonGCPercent
// unless GOGC is set, and whatever GOGC set otherwise, as logged.
func TestSetDaemonGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	cases := []struct {
		name, env string
		inForce   int // the target GOGC put in force at start
		want      int
	}{
		{"unset", "", 100, DaemonGCPercent},
		{"set", "70", 70, 70},
		{"off", "off", -1, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.env)
			debug.SetGCPercent(tc.inForce)
			if got := SetDaemonGC(); got != tc.want {
				t.Errorf("SetDaemonGC() = %d, want %d", got, tc.want)
			}
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("target in force %d, want %d", got, tc.want)
			}
		})
	}
}
