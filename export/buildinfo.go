package export

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// BuildInfo says which build is running.
type BuildInfo struct {
	Version   string
	Revision  string
	GoVersion string
}

// ReadBuildInfo returns the running binary's build information from
// runtime/debug.ReadBuildInfo (module version, VCS revision, Go version).
// Non-empty fields of override replace what was read, for versions stamped
// with -ldflags -X. Fields still unknown read "unknown".
func ReadBuildInfo(override BuildInfo) BuildInfo {
	bi := BuildInfo{GoVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			bi.Version = v
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				bi.Revision = s.Value
			}
		}
		if info.GoVersion != "" {
			bi.GoVersion = info.GoVersion
		}
	}
	if override.Version != "" {
		bi.Version = override.Version
	}
	if override.Revision != "" {
		bi.Revision = override.Revision
	}
	if override.GoVersion != "" {
		bi.GoVersion = override.GoVersion
	}
	for _, f := range []*string{&bi.Version, &bi.Revision, &bi.GoVersion} {
		if *f == "" {
			*f = "unknown"
		}
	}
	return bi
}

// NewBuildInfoCollector returns the hotkeyd_build_info collector: one series
// of value 1 whose labels say which build is running.
func NewBuildInfoCollector(bi BuildInfo) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "hotkeyd_build_info",
		Help:        "A metric with a constant '1' value labeled by the version, revision and Go version hotkeyd was built from.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.GoVersion},
	}, func() float64 { return 1 })
}

// NewRegistry returns a new registry holding the Go runtime and process
// collectors and hotkeyd_build_info. The daemon's other collectors
// (CountingSink, Reporter, Collector, the stream readers) register on it.
func NewRegistry(bi BuildInfo) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		NewBuildInfoCollector(bi),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
