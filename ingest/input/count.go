package input

import (
	"context"
	"sync/atomic"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// CountingSink counts the Events passed through it to the next Sink, for
// a progress line. It is safe for concurrent use.
type CountingSink struct {
	next traffic.Sink
	n    atomic.Int64
}

// Count returns a CountingSink in front of next.
func Count(next traffic.Sink) *CountingSink { return &CountingSink{next: next} }

// Put counts the batch and hands it on.
func (c *CountingSink) Put(ctx context.Context, batch []traffic.Event) error {
	c.n.Add(int64(len(batch)))
	return c.next.Put(ctx, batch)
}

// Events returns the number of Events passed so far.
func (c *CountingSink) Events() int64 { return c.n.Load() }
