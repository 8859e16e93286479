package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	oklog "github.com/oklog/run"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/export"
	demosource "github.com/hotkeyd/hotkeyd/ingest/demo"
)

// DrainTimeout bounds how long a shutdown waits for the sources to hand
// over their last batches; a source still running then is left behind.
// With the HTTP server's own 5 s, a stop takes at most 15 s, within
// Kubernetes' default grace period of 30 s.
const DrainTimeout = 10 * time.Second

// Run listens, then runs every actor in one group until a signal of
// signals (SIGINT or SIGTERM; SIGHUP reloads), ctx or an actor ends it.
// The caller catches the signals before Run, so that one sent as soon as
// the process is up is a clean stop too. The shutdown order is: readiness
// false, sources stop, their in-flight batches drain into the store (for
// at most DrainTimeout), the HTTP server stops. A signal is a clean stop:
// Run returns nil. Reloads run beside the group, one at a time, and never
// stop it.
func (d *Daemon) Run(ctx context.Context, signals <-chan os.Signal) error {
	// Listen here rather than in the server, so that the address actually
	// bound (":0" in tests) can be logged and announced.
	var err error
	if d.listener, err = net.Listen("tcp", d.cfg.Listen); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if err := d.openHistory(ctx, d.cfg); err != nil {
		d.listener.Close()
		return err
	}
	d.pipe = newPipeline(d.log, d.sink)
	var g oklog.Group
	d.addSignals(ctx, &g, signals)
	// Sources: each reads until told to stop; what it holds then still
	// lands in the window (ingest.Runner). A reload may replace them.
	first := d.running
	g.Add(func() error { return d.pipe.Run(first) }, func(error) { d.pipe.Cancel() })
	d.addTick(&g)
	d.addHistory(&g)
	d.addForecasts(&g)
	stopHTTP := d.addHTTP(&g)
	defer stopHTTP()
	// Reloads, one at a time, beside the group: a reload never ends it,
	// and a stop does not wait for a reload stuck reading its file.
	go d.reloadLoop()

	d.ready.SetRunning(true, "")
	d.log.Info("hotkeyd started", zap.String("address", d.listener.Addr().String()),
		zap.Duration("window", d.cfg.Window), zap.Float64("threshold", d.cfg.Detector.Threshold), zap.Int("sources", len(first.sources)))
	if d.opts.Demo && d.opts.Stdout != nil {
		fmt.Fprintf(d.opts.Stdout, demosource.Help, export.BrowsableURL(d.listener.Addr()))
	}
	err = g.Run()
	d.reporter.Flush()
	d.closeHistory()
	return d.stopped(err)
}

// addSignals adds the actor of the signals and the caller's context:
// either ends the group. SIGHUP asks the reload loop for a reload and the
// group goes on, as Prometheus does (its default action would kill the
// daemon mid-batch).
func (d *Daemon) addSignals(ctx context.Context, g *oklog.Group, signals <-chan os.Signal) {
	quit := make(chan struct{})
	g.Add(func() error {
		for {
			select {
			case s := <-signals:
				if s != syscall.SIGHUP {
					return &oklog.SignalError{Signal: s}
				}
				select {
				case d.reloads <- reloadRequest{}:
				default: // one is waiting already; it reads the file as it is then
				}
			case <-ctx.Done():
				return ctx.Err()
			case <-quit:
				return nil
			}
		}
	}, func(error) {
		close(quit)
		close(d.stopping) // a reload under way gives up, and no other starts
	})
}

// addTick adds the detector's tick: snapshot what changed → evaluate with
// hysteresis → record the second for the page → publish → log what became
// hot or cooled. Once a second of the clock, and whenever the window moved.
func (d *Daemon) addTick(g *oklog.Group) {
	ctx, stop := context.WithCancel(context.Background())
	ann := export.NewAnnouncer(d.log.Named("detector"), d.masker)
	g.Add(func() error {
		d.tick(ctx, ann)
		return nil
	}, func(error) { stop() })
}

// addHTTP adds the HTTP server: /metrics, the API, health and readiness.
// Its interrupt runs the ordered shutdown: not ready, sources stopped and
// drained, then the server is told to stop. It returns what stops the
// server, for Run to call on its way out.
func (d *Daemon) addHTTP(g *oklog.Group) context.CancelFunc {
	ctx, stop := context.WithCancel(context.Background())
	listener := d.listener
	g.Add(func() error {
		return d.server.Serve(ctx, listener)
	}, func(error) {
		d.ready.SetRunning(false, "shutting down")
		d.pipe.Stop(DrainTimeout)
		stop()
	})
	return stop
}

// stopped logs how the group ended and returns nil for a clean stop (a
// signal, the caller's context), or the actor's error.
func (d *Daemon) stopped(err error) error {
	var sig *oklog.SignalError
	switch {
	case errors.As(err, &sig) && sig.Signal != nil:
		// SignalError's own As method matches without filling the target,
		// so ask for the pointer type.
		d.log.Info("stopped", zap.String("signal", sig.Signal.String()))
	case errors.Is(err, oklog.ErrSignal):
		d.log.Info("stopped", zap.Error(err))
	case err == nil || errors.Is(err, context.Canceled):
		d.log.Info("stopped")
	default:
		return err
	}
	return nil
}
