package export

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
)

// BuildInfo overrides labels of hotkeyd_build_info. The metric comes from
// client_golang's version collector, which reads
// github.com/prometheus/common/version (stamped at link time with -ldflags
// -X, the revision read from the binary's VCS information otherwise); a
// non-empty field here replaces what that package says, for a version known
// another way (the module version of go install) and for tests.
type BuildInfo struct {
	Version, Revision, GoVersion string
}

// NewRegistry returns a new registry holding the Go runtime and process
// collectors and hotkeyd_build_info, labelled version, revision and
// goversion (the contract), and branch, goos, goarch and tags (as every
// Prometheus exporter's build_info). The daemon's other collectors
// (CountingSink, Reporter, Collector, the stream readers) register on it.
func NewRegistry(bi BuildInfo) (*prometheus.Registry, error) {
	labels := prometheus.Labels{}
	for name, value := range map[string]string{"version": bi.Version, "revision": bi.Revision, "goversion": bi.GoVersion} {
		if value != "" {
			labels[name] = value
		}
	}
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector("hotkeyd", versioncollector.WithExtraConstLabels(labels)),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
