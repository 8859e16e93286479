package traffic

import (
	"context"
	"sync/atomic"
)

// Outcome tallies what became of the events of the Put calls made with a
// context that carries it (WithOutcome): the events a Sink on the way
// refused, and those the window does not track (their table is past
// max_tables). A source that answers for its events — the HTTP ingest
// endpoint — says so in its answer; other sources pass no Outcome, and
// sinks then add to nothing. It is safe for concurrent use.
type Outcome struct {
	// Refused counts events a Sink refused as impossible (traffic.Checked).
	Refused atomic.Int64
	// Untracked counts events of tables that are not tracked.
	Untracked atomic.Int64
}

type outcomeKey struct{}

// WithOutcome returns ctx carrying o, for the sinks that Put is called on.
func WithOutcome(ctx context.Context, o *Outcome) context.Context {
	return context.WithValue(ctx, outcomeKey{}, o)
}

// OutcomeOf returns the Outcome ctx carries, or nil.
func OutcomeOf(ctx context.Context) *Outcome {
	o, _ := ctx.Value(outcomeKey{}).(*Outcome)
	return o
}
