package parallel

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest/formats"
	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// DefaultMinPart is the smallest part a plain file is cut into: merging a
// part costs about what reading a few megabytes does (a millisecond or so
// per busy table), so parts are kept well above that.
const DefaultMinPart = 16 << 20

// GCPercent is the garbage collector's percent a program reading with Read
// runs best with (runtime/debug.SetGCPercent), unless its user set GOGC:
// the sinks, alive to the end, are almost all of the heap, and reading
// into them with recycled batches makes little garbage, so collecting at
// 25 % growth instead of Go's 100 % keeps peak memory near the sinks' size
// for about 1 % more CPU time (docs/bench/jsonl.md).
const GCPercent = 25

// Config says how to read and what into. S is the sink every part counts
// into (a *sketch.Store).
type Config[S traffic.Sink] struct {
	// Formats reads the inputs. Its decoders are used from every worker at
	// once.
	Formats *formats.Set
	// New returns an empty sink, for the result and for each part.
	New func() (S, error)
	// Merge adds what src counted into dst, as if dst had been given src's
	// events after its own. src is not used afterwards.
	Merge func(dst, src S) error
	// Reorder is how many seconds events may run behind the newest one
	// and still count in their own second in a sink's per-key rings
	// (sketch.Config.RecentSeconds): an input that goes back further is
	// not in order (Outcome.InOrder).
	Reorder int
	// Workers is the number of parts read at once; 0 means GOMAXPROCS.
	Workers int
	// MinPart is the smallest part a plain file is cut into, in bytes; 0
	// means DefaultMinPart.
	MinPart int64
	// Stdin is read for the input named "-".
	Stdin io.Reader
	// Paths maps an input's name to the file it is read from, for inputs
	// copied to a file so that they can be read twice and in parts
	// (standard input, a pipe); the name is still the one reported. Names
	// not in it are read from themselves.
	Paths map[string]string
	// Progress, when set, gets a progress line every ProgressEvery while
	// the inputs are read: the events and bytes of every part so far.
	Progress io.Writer
	// ProgressEvery is the interval of the progress line; 0 means
	// input.ProgressEvery.
	ProgressEvery time.Duration
	// Failed is told, in input order, about every input that could not be
	// opened or read to its end (the error is input.Open's or the
	// decoder's); what was read of it is counted. nil ignores them.
	Failed func(name string, err error)
}

// Outcome says how the inputs of a Read ran in time.
type Outcome struct {
	// InOrder says that every event had a time and none ran more than
	// Config.Reorder seconds behind the newest event read before it, in
	// input order: the merged sink then holds what one sink reading the
	// inputs one after the other holds, second by second, for keys too.
	// Otherwise the sums are the same, and per-second counts the sink
	// keeps by key (which a sink keeps for the last few seconds only)
	// may be lower than the truth (see sketch.Store.Merge).
	InOrder bool
}

// Read reads the inputs names ("-" for Config.Stdin) into one sink and
// returns it: what reading them one after the other into one sink gives
// (see the package doc for how). The error is ctx's, New's or Merge's;
// errors of single inputs go to Config.Failed and the other inputs are
// still read.
func Read[S traffic.Sink](ctx context.Context, cfg Config[S], names ...string) (S, Outcome, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.MinPart <= 0 {
		cfg.MinPart = DefaultMinPart
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = input.ProgressEvery
	}
	var zero S
	result, err := cfg.New()
	if err != nil {
		return zero, Outcome{}, err
	}
	r := &reader[S]{cfg: cfg, ctx: ctx, result: result}
	r.cond = sync.NewCond(&r.mu)
	r.plan(names)
	defer r.closeAll()
	if cfg.Progress != nil {
		name := fmt.Sprintf("%d inputs", len(names))
		if len(names) == 1 {
			name = names[0]
		}
		stop := input.StartProgress(cfg.Progress, name, r.bytesRead, r.events.Load, cfg.ProgressEvery)
		defer stop()
	}
	stop := context.AfterFunc(ctx, func() {
		r.mu.Lock()
		r.fail(ctx.Err())
		r.mu.Unlock()
	})
	defer stop()
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work()
		}()
	}
	wg.Wait()
	if r.err != nil {
		return zero, Outcome{}, r.err
	}
	return r.result, Outcome{InOrder: !r.unordered}, nil
}

// reader is one Read: its inputs, their parts and the merge frontier.
type reader[S traffic.Sink] struct {
	cfg    Config[S]
	ctx    context.Context
	result S
	// partSize is the size plain files are cut into parts of.
	partSize int64
	// events counts the Events put by every part, for the progress line.
	events atomic.Int64

	mu   sync.Mutex
	cond *sync.Cond
	err  error
	// units are the inputs in order; opened counts those opened so far,
	// in order, one at a time (opening says how an input is read).
	units   []*unit
	opened  int
	opening bool
	// parts are the parts of the opened inputs in input order; merged
	// counts those merged into the result: the frontier.
	parts   []*part[S]
	merged  int
	merging bool
	// pending counts the parts started and not merged that count into a
	// sink of their own.
	pending int
	// prefix is what the events merged so far span in time.
	prefix span
	// unordered is set once a part merged did not follow the prefix in
	// time (Outcome.InOrder).
	unordered bool
}

// state is where a part stands.
type state uint8

const (
	waiting state = iota
	running
	ended
	merged
)

// fail records the first error and wakes every worker. r.mu is held.
func (r *reader[S]) fail(err error) {
	if r.err == nil && err != nil {
		r.err = err
	}
	r.cond.Broadcast()
}

// done reports whether every input is opened and every part merged. r.mu
// is held.
func (r *reader[S]) done() bool {
	return r.opened == len(r.units) && r.merged == len(r.parts)
}

// work is one worker: it merges what can be merged, else reads the next
// part that may be read, else opens the next input, until every part is
// merged.
func (r *reader[S]) work() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.err == nil && !r.done() {
		if r.canMerge() {
			r.merging = true
			r.mu.Unlock()
			err := r.mergeReady()
			r.mu.Lock()
			r.merging = false
			r.fail(err)
			continue
		}
		if p := r.next(); p != nil {
			r.start(p)
			r.mu.Unlock()
			r.read(p)
			r.mu.Lock()
			p.state = ended
			if p.fatal != nil {
				r.fail(p.fatal)
			}
			r.cond.Broadcast()
			continue
		}
		if !r.opening && r.opened < len(r.units) {
			r.opening = true
			u := r.units[r.opened]
			r.mu.Unlock()
			parts := r.open(u)
			r.mu.Lock()
			r.parts = append(r.parts, parts...)
			r.opened++
			r.opening = false
			r.cond.Broadcast()
			continue
		}
		r.cond.Wait()
	}
	r.cond.Broadcast()
}

// canMerge reports whether the part at the frontier waits for the
// merger: it ended, it is read in order, or an earlier part of its input
// failed. r.mu is held.
func (r *reader[S]) canMerge() bool {
	return !r.merging && r.frontierReady()
}

// frontierReady is canMerge whoever merges. r.mu is held.
func (r *reader[S]) frontierReady() bool {
	if r.merged == len(r.parts) {
		return false
	}
	p := r.parts[r.merged]
	return p.state == ended || (p.state == waiting && (p.inOrder || p.unit.failed))
}

// next returns the first part a worker may start, or nil: the part at the
// frontier, or a later one while fewer than 2×Workers parts count into
// sinks of their own. r.mu is held.
func (r *reader[S]) next() *part[S] {
	for i := r.merged; i < len(r.parts); i++ {
		p := r.parts[i]
		if p.state != waiting || p.inOrder || p.unit.failed {
			continue
		}
		if i > r.merged && r.pending >= 2*r.cfg.Workers {
			return nil
		}
		return p
	}
	return nil
}

// start marks p running: at the frontier it counts straight into the
// result, else into a sink of its own. r.mu is held.
func (r *reader[S]) start(p *part[S]) {
	p.state = running
	p.direct = r.parts[r.merged] == p
	if !p.direct {
		r.pending++
	}
}

// read reads p into its sink, the result when it is at the frontier.
func (r *reader[S]) read(p *part[S]) {
	sink := r.result
	if !p.direct {
		s, err := r.cfg.New()
		if err != nil {
			p.fatal = err
			return
		}
		p.sink, p.own = s, true
		sink = s
	}
	p.err = r.decode(p, &p.span, sink)
}

// mergeReady merges the parts at the frontier while it can: ended parts
// are merged, parts read in order are read into the result. One worker at
// a time runs it.
func (r *reader[S]) mergeReady() error {
	for {
		r.mu.Lock()
		if r.err != nil || !r.frontierReady() {
			r.mu.Unlock()
			return nil
		}
		p := r.parts[r.merged]
		skip := p.unit.failed
		if p.state == waiting {
			p.state = running // read in order, below
		}
		r.mu.Unlock()

		err := r.mergePart(p, skip)

		r.mu.Lock()
		if p.own {
			r.pending--
			var zero S
			p.sink, p.own = zero, false
		}
		p.state = merged
		r.merged++
		if !skip {
			if !p.span.follows(r.prefix) {
				r.unordered = true
			}
			r.prefix.add(p.span)
			if p.err != nil {
				p.unit.failed = true
			}
		}
		if p.last {
			p.unit.close()
		}
		r.cond.Broadcast()
		r.mu.Unlock()
		if err != nil {
			return err
		}
		if !skip && p.err != nil && r.cfg.Failed != nil {
			r.cfg.Failed(p.unit.name, p.err)
		}
		if err := r.ctx.Err(); err != nil {
			return err
		}
	}
}

// mergePart brings the part at the frontier into the result: skip drops
// it (an earlier part of its input failed).
func (r *reader[S]) mergePart(p *part[S], skip bool) error {
	switch {
	case skip || p.direct:
	case p.inOrder:
		p.err = r.decode(p, &p.span, r.result)
	case p.own:
		if err := r.cfg.Merge(r.result, p.sink); err != nil {
			return fmt.Errorf("merge %s: %w", p.unit.name, err)
		}
	}
	return nil
}

// bytesRead is the progress line's byte count: the bytes of the inputs
// read so far, compressed where they are.
func (r *reader[S]) bytesRead() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, p := range r.parts {
		n += p.bytesRead()
	}
	return n
}

// closeAll closes the inputs left open (after an error).
func (r *reader[S]) closeAll() {
	for _, u := range r.units {
		u.close()
	}
}
