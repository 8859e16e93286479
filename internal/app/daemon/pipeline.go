package daemon

import (
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/traffic"
)

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
