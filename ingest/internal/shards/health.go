package shards

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// ErrStarting is the health of a configured stream or table before its
// first successful call.
var ErrStarting = errors.New("not read yet")

// Health keeps the last error of each configured stream or table (nil
// once its last call succeeded), for a reader's readiness. Safe for
// concurrent use.
type Health struct {
	service string // names the endpoint in Ready's error
	network func(error) bool
	mu      sync.Mutex
	state   map[string]error
}

// NewHealth returns an empty Health; service names the endpoint ("kinesis"),
// network tells an unreachable endpoint from an answer.
func NewHealth(service string, network func(error) bool) *Health {
	return &Health{service: service, network: network, state: map[string]error{}}
}

// Set records the last error of key, nil for a success.
func (h *Health) Set(key string, err error) {
	h.mu.Lock()
	h.state[key] = err
	h.mu.Unlock()
}

// Ready returns nil while the reader works: not while the endpoint cannot
// be reached (for any key), not while every key fails, not before the
// first success of any. One failing key among working ones is no reason.
func (h *Health) Ready() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(h.state)) {
		err := h.state[key]
		if err == nil {
			continue
		}
		if h.network(err) {
			return fmt.Errorf("%s endpoint unreachable (%s): %w", h.service, key, err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", key, err))
	}
	if len(errs) > 0 && len(errs) == len(h.state) {
		return errors.Join(errs...)
	}
	return nil
}
