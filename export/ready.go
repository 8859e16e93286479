package export

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Readiness decides what /-/ready answers: ready while the pipeline is
// running and every watched source says it is working. It is safe for
// concurrent use.
type Readiness struct {
	mu      sync.Mutex
	running bool
	reason  string
	sources []namedReadier
}

type namedReadier struct {
	name string
	r    traffic.Readier
}

// NewReadiness returns a Readiness that is not ready until SetRunning(true).
func NewReadiness() *Readiness {
	return &Readiness{reason: "pipeline not started"}
}

// Watch adds the sources that implement traffic.Readier; the others are
// ready whenever the pipeline runs.
func (r *Readiness) Watch(sources ...traffic.Source) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range sources {
		if rd, ok := s.(traffic.Readier); ok {
			r.sources = append(r.sources, namedReadier{name: s.Name(), r: rd})
		}
	}
}

// WatchOnly replaces the watched sources with sources (those that
// implement traffic.Readier), for a reload that restarts the sources.
func (r *Readiness) WatchOnly(sources ...traffic.Source) {
	r.mu.Lock()
	r.sources = nil
	r.mu.Unlock()
	r.Watch(sources...)
}

// SetRunning marks the pipeline running, or stopped with a reason ("shutting
// down"). The daemon marks it stopped before the HTTP server begins to shut
// down, so that load balancers and Prometheus stop sending first.
func (r *Readiness) SetRunning(running bool, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running = running
	r.reason = reason
}

// Check returns nil when ready, or why not.
func (r *Readiness) Check() error {
	r.mu.Lock()
	running, reason := r.running, r.reason
	sources := r.sources
	r.mu.Unlock()
	if !running {
		if reason == "" {
			reason = "pipeline not running"
		}
		return errors.New(reason)
	}
	var errs []error
	for _, s := range sources {
		if err := s.r.Ready(); err != nil {
			errs = append(errs, fmt.Errorf("source %s: %w", s.name, err))
		}
	}
	return errors.Join(errs...)
}
