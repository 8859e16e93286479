package export

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
)

// TestBuildInfo checks the contract of hotkeyd_build_info: one series of
// value 1 labelled version, revision and goversion, with the overrides
// applied and the Go version of the running binary otherwise.
func TestBuildInfo(t *testing.T) {
	f := func(bi BuildInfo, want map[string]string) {
		t.Helper()
		reg, err := NewRegistry(bi)
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, mf := range mfs {
			if mf.GetName() != "hotkeyd_build_info" {
				continue
			}
			if len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
				t.Fatalf("hotkeyd_build_info: %v, want one series of value 1", mf.GetMetric())
			}
			found = true
			labels := map[string]string{}
			for _, l := range mf.GetMetric()[0].GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for name, v := range want {
				if labels[name] != v {
					t.Errorf("label %s = %q, want %q (all: %v)", name, labels[name], v, labels)
				}
			}
			for _, name := range []string{"version", "revision", "goversion"} {
				if labels[name] == "" {
					t.Errorf("label %s is empty (all: %v)", name, labels)
				}
			}
		}
		if !found {
			t.Error("no hotkeyd_build_info")
		}
		if problems, err := testutil.GatherAndLint(reg, "hotkeyd_build_info"); err != nil || len(problems) > 0 {
			t.Errorf("lint: %v %v", problems, err)
		}
	}
	f(BuildInfo{Version: "v1.2.3"}, map[string]string{"version": "v1.2.3", "goversion": runtime.Version()})
	f(BuildInfo{Version: "v1.2.3", Revision: "deadbeef", GoVersion: "go1.26.8"},
		map[string]string{"version": "v1.2.3", "revision": "deadbeef", "goversion": "go1.26.8"})
}

// TestRegistryNames: Names lists every metric registered, with series or
// not, and forgets an unregistered collector.
func TestRegistryNames(t *testing.T) {
	reg, err := NewRegistry(BuildInfo{})
	if err != nil {
		t.Fatal(err)
	}
	// No rejection yet: the Reporter's counters have no series.
	if _, err := NewReporter(zap.NewNop(), reg, ReporterConfig{}); err != nil {
		t.Fatal(err)
	}
	names := reg.Names()
	for _, want := range []string{"hotkeyd_build_info", "hotkeyd_input_rejected_total", "hotkeyd_source_errors_total", "go_goroutines"} {
		if !slices.Contains(names, want) {
			t.Errorf("Names() = %v, want %s in it", names, want)
		}
	}
	c := NewCollector(NewLive(time.Now), CollectorConfig{})
	reg.MustRegister(c)
	if !slices.Contains(reg.Names(), "hotkeyd_key_share") {
		t.Errorf("Names() lacks the collector's hotkeyd_key_share")
	}
	if !reg.Unregister(c) || slices.Contains(reg.Names(), "hotkeyd_key_share") {
		t.Errorf("Names() keeps an unregistered collector's metrics: %v", reg.Names())
	}
	// A collector served beside the registry (Gatherers) is named too.
	if !slices.Contains(reg.Names(c), "hotkeyd_key_share") {
		t.Errorf("Names(c) lacks the collector's hotkeyd_key_share")
	}
}
