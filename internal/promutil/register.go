// Package promutil holds the Prometheus helpers several components share.
package promutil

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it; when an equal collector is
// registered already (several sources of one kind share a registry), it
// returns that one instead, so that both feed the same series. The first
// other error is kept in *errp and c is returned unregistered.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		if *errp == nil {
			*errp = err
		}
	}
	return c
}
