package daemon

import "github.com/prometheus/client_golang/prometheus"

// newReloadMetrics registers on reg the daemon's own metrics, those of its
// configuration's loads, as Prometheus's own: a start is a successful load.
func newReloadMetrics(reg prometheus.Registerer) (ok, at prometheus.Gauge, err error) {
	ok = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hotkeyd_config_last_reload_successful",
		Help: "Whether the last configuration reload (SIGHUP, POST /-/reload) succeeded: 1, or 0 while the running configuration is kept after a failed one.",
	})
	at = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hotkeyd_config_last_reload_success_timestamp_seconds",
		Help: "When the configuration was last loaded, at start or by a reload (Unix seconds).",
	})
	ok.Set(1)
	at.SetToCurrentTime()
	for _, c := range []prometheus.Collector{ok, at} {
		if err := reg.Register(c); err != nil {
			return nil, nil, err
		}
	}
	return ok, at, nil
}
