package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/judge"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// generation is one set of sources the daemon runs, with their own
// metrics, and, when they share shards with other replicas, the exchange
// of window summaries through their lease table. A reload that changes
// the sources replaces the whole generation.
type generation struct {
	sources []traffic.Source
	// reg holds the sources' own metrics; the daemon's registry and the
	// running generation's are gathered together.
	reg *export.Registry
	// replicas is the judge across replicas, nil without a lease table.
	replicas *judge.Replicas

	runner    *ingest.Runner
	stopBoard context.CancelFunc
	boardDone chan struct{}
}

// start runs every source into sink, and the board; a source's error is
// sent to errs.
func (g *generation) start(sink traffic.Sink, log *zap.Logger, errs chan<- error) {
	g.runner = ingest.NewRunner(g.sources, sink, log)
	for i := range g.sources {
		go func() {
			if err := g.runner.Run(i); err != nil {
				select {
				case errs <- err:
				default: // the daemon stops on the first
				}
			}
		}()
	}
	g.boardDone = make(chan struct{})
	if g.replicas == nil {
		close(g.boardDone)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.stopBoard = cancel
	go func() {
		defer close(g.boardDone)
		if err := g.replicas.Run(ctx); err != nil {
			select {
			case errs <- err:
			default:
			}
		}
	}()
}

// cancel tells the sources to stop, without waiting.
func (g *generation) cancel() {
	if g.runner != nil {
		g.runner.Cancel()
	}
}

// stop stops the board, which takes its summary off the lease table, and
// the sources, their batches in flight landing in the sink for at most
// drain (ingest.Runner.Stop); both at once, so that a stop takes at most
// drain.
func (g *generation) stop(drain time.Duration) {
	if g.runner == nil {
		return
	}
	if g.stopBoard != nil {
		g.stopBoard()
	}
	g.runner.Stop(drain)
	<-g.boardDone
}

// pipeline runs the daemon's sources, one generation at a time: Run is an
// actor of the daemon's group, ended by a source's error or by Stop;
// Replace stops the running generation (drained as on shutdown) and
// starts another; Stop, the shutdown, waits for a Replace under way
// rather than start the new generation.
type pipeline struct {
	log  *zap.Logger
	sink traffic.Sink
	errs chan error

	mu       sync.Mutex
	cur      *generation
	draining chan struct{} // closed when the drain of a Replace ends; nil when none
	stopped  bool
	quit     chan struct{}
	// started is closed once Run started the first generation: a Replace
	// waits for it.
	started chan struct{}
}

// errStopping refuses a Replace once the daemon is stopping.
var errStopping = errors.New("the daemon is stopping")

func newPipeline(log *zap.Logger, sink traffic.Sink) *pipeline {
	return &pipeline{log: log, sink: sink, errs: make(chan error, 1), quit: make(chan struct{}), started: make(chan struct{})}
}

// Run starts g and returns the first error of a source or a board, or
// nil once Stop was called.
func (p *pipeline) Run(g *generation) error {
	p.mu.Lock()
	if !p.stopped {
		p.cur = g
		g.start(p.sink, p.log, p.errs)
	}
	p.mu.Unlock()
	close(p.started)
	select {
	case err := <-p.errs:
		return err
	case <-p.quit:
		return nil
	}
}

// Cancel tells the running sources to stop, without waiting: the
// interrupt of Run's actor, before Stop drains them.
func (p *pipeline) Cancel() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil {
		p.cur.cancel()
	}
}

// Replace stops the running generation, drained for at most drain, then
// calls swap and starts g, unless the daemon began to stop meanwhile. It
// waits for Run to have started the first.
func (p *pipeline) Replace(g *generation, drain time.Duration, swap func()) error {
	select {
	case <-p.started:
	case <-p.quit:
		return errStopping
	}
	p.mu.Lock()
	if p.stopped || p.draining != nil {
		p.mu.Unlock()
		return errStopping
	}
	old := p.cur
	p.cur = nil
	drained := make(chan struct{})
	p.draining = drained
	p.mu.Unlock()

	if old != nil {
		old.stop(drain)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	p.draining = nil
	close(drained)
	if p.stopped {
		return errStopping
	}
	swap()
	p.cur = g
	g.start(p.sink, p.log, p.errs)
	return nil
}

// Stop stops the running generation, drained for at most drain, or waits
// for the drain of a Replace under way; nothing starts afterwards.
func (p *pipeline) Stop(drain time.Duration) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	cur, draining := p.cur, p.draining
	p.cur = nil
	close(p.quit)
	p.mu.Unlock()
	if cur != nil {
		cur.stop(drain)
	}
	if draining != nil {
		<-draining
	}
}
