package ingest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
	"go.uber.org/zap"
)

// Runner runs a daemon's sources into one sink with the shutdown the
// daemon promises: Stop stops the sources, the batches they hold when told
// to stop still land in the sink, and the wait is bounded, so that one
// reader stuck in a call that ignores its context (a read from a pipe
// nobody closes) cannot keep the process from exiting. Run is one
// oklog/run actor per source; Stop is the interrupt of the actor that
// shuts the pipeline down.
type Runner struct {
	log     *zap.Logger
	sources []traffic.Source
	sink    traffic.Sink

	ctx      context.Context // the sources'
	cancel   context.CancelFunc
	sinkCtx  context.Context // the sink's; outlives ctx until the drain ends
	stopSink context.CancelFunc

	stopped  []chan struct{} // closed when sources[i].Run has returned
	abandon  chan struct{}   // closed when Stop gives up waiting
	stopOnce sync.Once
}

// NewRunner returns a Runner of sources feeding sink. log names the
// sources in their lines (key "source").
func NewRunner(sources []traffic.Source, sink traffic.Sink, log *zap.Logger) *Runner {
	r := &Runner{log: log, sources: sources, sink: sink, abandon: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.sinkCtx, r.stopSink = context.WithCancel(context.Background())
	for range sources {
		r.stopped = append(r.stopped, make(chan struct{}))
	}
	return r
}

// Run runs source i until Stop or Cancel. A source whose input ends (stdin
// closed) keeps its actor waiting, so that the daemon keeps serving what it
// read. It returns the source's error, or nil once stopped, or nil once
// Stop gave up waiting for it.
func (r *Runner) Run(i int) error {
	src := r.sources[i]
	done := make(chan error, 1)
	go func() {
		defer close(r.stopped[i])
		done <- r.run(src)
	}()
	select {
	case err := <-done:
		return err
	case <-r.abandon:
		return nil
	}
}

func (r *Runner) run(src traffic.Source) error {
	log := r.log.With(zap.String("source", src.Name()))
	err := src.Run(r.ctx, detached{ctx: r.sinkCtx, next: r.sink})
	if err != nil && r.ctx.Err() == nil {
		return fmt.Errorf("source %s: %w", src.Name(), err)
	}
	if r.ctx.Err() == nil {
		log.Info("source finished its input")
		<-r.ctx.Done()
	}
	log.Debug("source stopped")
	return nil
}

// Cancel tells every source to stop, without waiting.
func (r *Runner) Cancel() { r.cancel() }

// Stop tells every source to stop and waits until each has returned (its
// last batches in the sink) or timeout has passed; a source still running
// then is named in the log and left behind, its in-flight events dropped.
// The sink is then closed to late batches. Later calls return at once.
func (r *Runner) Stop(timeout time.Duration) {
	r.stopOnce.Do(func() {
		r.cancel()
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		for i, stopped := range r.stopped {
			select {
			case <-stopped:
				continue
			case <-deadline.C:
			}
			for j := i; j < len(r.stopped); j++ {
				select {
				case <-r.stopped[j]:
				default:
					r.log.Warn("source did not stop in time; leaving it behind, its in-flight events are dropped",
						zap.String("source", r.sources[j].Name()), zap.Duration("timeout", timeout))
				}
			}
			close(r.abandon)
			break
		}
		r.stopSink()
	})
}

// detached hands batches to next under its own context instead of the
// caller's, so a source told to stop can still deliver the batch it holds;
// the Runner cancels ctx once every source has returned (or the wait timed
// out), and only then does Put give up.
type detached struct {
	ctx  context.Context
	next traffic.Sink
}

// Put implements Sink.
func (s detached) Put(_ context.Context, batch []traffic.Event) error {
	return s.next.Put(s.ctx, batch)
}
