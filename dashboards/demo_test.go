package dashboards

import (
	"slices"
	"testing"

	"github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// startDemo starts `hotkeyd demo`, the daemon on its built-in workload, and
// returns the process and what the workload plants (ingest/demo.Planted):
// the diagnoses the detector must make.
//
// The window is 10 s instead of 60 s: per-key rates are units over the
// window, so until one window has passed a key's units per second read low
// and the planted key near the partition limit (about 920 WCU/s) would only
// be flagged after a minute.
func startDemo(t *testing.T) (*testenv.Hotkeyd, []demo.Plant) {
	t.Helper()
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo", "--window=10s")
	var plants []demo.Plant
	for _, p := range demo.Planted() {
		if p.Cause != "" {
			plants = append(plants, p)
		}
	}
	if !slices.ContainsFunc(plants, func(p demo.Plant) bool { return p.Cause == "hot_key" && p.Severity != "info" && p.Key != "" }) {
		t.Fatalf("the demo plants no hot key: %+v", demo.Planted())
	}
	return h, plants
}
