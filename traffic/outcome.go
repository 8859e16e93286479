package traffic

import (
	"context"
	"sync"
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
	// KeepRefusals is how many refusals (which event, and why) the
	// Outcome keeps until TakeRefusals; zero keeps none, only the count.
	KeepRefusals int

	mu       sync.Mutex
	refusals []Refusal
}

// Refusal is one event a Sink refused: its index in the batch given to
// that Sink's Put, and why.
type Refusal struct {
	Index int
	Why   *Invalid
}

// Refuse counts a refused event, and keeps why while fewer than
// KeepRefusals are kept. A nil Outcome counts nothing.
func (o *Outcome) Refuse(index int, why *Invalid) {
	if o == nil {
		return
	}
	o.Refused.Add(1)
	if o.KeepRefusals <= 0 {
		return
	}
	o.mu.Lock()
	if len(o.refusals) < o.KeepRefusals {
		o.refusals = append(o.refusals, Refusal{Index: index, Why: why})
	}
	o.mu.Unlock()
}

// TakeRefusals returns the refusals kept since the last call, in the order
// they were made, and forgets them.
func (o *Outcome) TakeRefusals() []Refusal {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.refusals
	o.refusals = nil
	return r
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
