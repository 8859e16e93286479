// Package ingesttest holds what the readers' tests share about the ingest
// contract: a Sink that keeps every Event it takes, a Reporter that counts
// what it is told by reason, and a wait on a condition.
package ingesttest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Sink keeps every Event it takes, and the partition keys of each batch.
// The zero value is ready; safe for concurrent use.
type Sink struct {
	mu      sync.Mutex
	events  []traffic.Event
	batches [][]string
}

// Put keeps the batch; it refuses it once ctx is done.
func (s *Sink) Put(ctx context.Context, batch []traffic.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	keys := make([]string, len(batch))
	for i, e := range batch {
		keys[i] = e.PK
	}
	s.mu.Lock()
	s.events = append(s.events, batch...)
	s.batches = append(s.batches, keys)
	s.mu.Unlock()
	return nil
}

// Events returns the Events taken so far.
func (s *Sink) Events() []traffic.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]traffic.Event(nil), s.events...)
}

// LastBatch returns the partition keys of the last batch taken.
func (s *Sink) LastBatch() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.batches) == 0 {
		return nil
	}
	return s.batches[len(s.batches)-1]
}

// CountWhere counts the Events taken for which f holds.
func (s *Sink) CountWhere(f func(traffic.Event) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.events {
		if f(e) {
			n++
		}
	}
	return n
}

// Reporter counts the rejections and errors it is told, by reason, and
// keeps the last of each. The zero value is ready; safe for concurrent
// use.
type Reporter struct {
	mu      sync.Mutex
	errors  map[string]int
	rejects map[string]int
	last    map[string]error
	texts   map[string][]string // the errors' texts, by reason
}

// Reject counts a rejection.
func (r *Reporter) Reject(_, reason string, err error) { r.add(&r.rejects, reason, err) }

// Error counts an error.
func (r *Reporter) Error(_, reason string, err error) {
	r.add(&r.errors, reason, err)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.texts == nil {
		r.texts = map[string][]string{}
	}
	r.texts[reason] = append(r.texts[reason], err.Error())
}

// ErrorsPrefixed returns how many errors of reason were told whose text
// begins with prefix: a test on a loaded machine can tell the error it caused
// from a call that timed out.
func (r *Reporter) ErrorsPrefixed(reason, prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, text := range r.texts[reason] {
		if strings.HasPrefix(text, prefix) {
			n++
		}
	}
	return n
}

func (r *Reporter) add(m *map[string]int, reason string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if *m == nil {
		*m = map[string]int{}
	}
	if r.last == nil {
		r.last = map[string]error{}
	}
	(*m)[reason]++
	r.last[reason] = err
}

// Errors returns how many errors of reason were told.
func (r *Reporter) Errors(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errors[reason]
}

// Rejects returns the rejections told so far, by reason.
func (r *Reporter) Rejects() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.rejects))
	for k, v := range r.rejects {
		out[k] = v
	}
	return out
}

// Last returns the last rejection or error of reason, nil when none.
func (r *Reporter) Last(reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[reason]
}

// Eventually bounds a wait for what must happen and whose length the test
// does not judge: long enough for a machine loaded by other test runs. A
// wait that ends early costs nothing.
const Eventually = 2 * time.Minute

// WaitFor polls cond until it holds, and fails the test when d passes
// first, naming what was awaited.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
