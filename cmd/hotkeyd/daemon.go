package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	oklog "github.com/oklog/run"
	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest"
	demosource "github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/internal/logging"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// tickEvery is the detector's pace: one snapshot, one evaluation and one
// published report per tick. The Tracker counts evaluations, so its hold
// (HoldEvaluations) is this many seconds.
const tickEvery = time.Second

// drainTimeout bounds how long a shutdown waits for the sources to hand
// over their last batches.
const drainTimeout = 10 * time.Second

// runDaemon runs the long-lived daemon (run), or the same daemon on the demo
// workload (demo), until ctx is done or SIGINT/SIGTERM arrives.
func runDaemon(ctx context.Context, f *flags, demo bool, io stdio) int {
	if f.configCheck {
		return checkConfig(f, io)
	}
	cfg, err := loadConfig(f, !demo)
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: %v\n", err)
		return 1
	}
	log, err := logging.New(io.stderr, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: %v\n", err)
		return 1
	}
	defer func() { _ = log.Sync() }()

	d, err := newDaemon(cfg, f, demo, io, log)
	if err != nil {
		log.Error("cannot start", zap.Error(err))
		return 1
	}
	if err := d.run(ctx); err != nil {
		log.Error("stopped on error", zap.Error(err))
		return 1
	}
	return 0
}

// daemon is the wired pipeline: sources → counting sink → store; detector
// tick → live state; HTTP server over the live state and the registry.
type daemon struct {
	log      *zap.Logger
	cfg      Config
	demo     bool
	io       stdio
	store    *sketch.Store
	sink     ingest.Sink
	reporter *export.Reporter
	live     *export.Live
	ready    *export.Readiness
	masker   *export.KeyMasker
	tracker  *detect.Tracker
	server   *export.Server
	sources  []ingest.Source
	listener net.Listener
}

func newDaemon(cfg Config, f *flags, demo bool, io stdio, log *zap.Logger) (*daemon, error) {
	d := &daemon{log: log, cfg: cfg, demo: demo, io: io}

	reg, err := export.NewRegistry(export.BuildInfo{Version: buildVersion()})
	if err != nil {
		return nil, err
	}
	d.masker, err = export.NewKeyMasker(cfg.Keys, cfg.KeyHashSecret)
	if err != nil {
		return nil, err
	}
	settings := cfg.detectSettings()
	d.tracker = detect.NewTracker(settings)

	scfg := sketch.DefaultConfig()
	scfg.Window = cfg.Window
	scfg.Tracked = max(scfg.Tracked, settings.Top)
	if d.store, err = sketch.NewStore(scfg, time.Now); err != nil {
		return nil, fmt.Errorf("sketch store: %w", err)
	}
	if d.reporter, err = export.NewReporter(log.Named("ingest"), reg, export.ReporterConfig{}); err != nil {
		return nil, err
	}
	if d.sink, err = export.NewCountingSink(d.store, reg, time.Now); err != nil {
		return nil, err
	}

	deps := sourceDeps{log: log, reporter: d.reporter, reg: reg, tables: cfg.Tables, stdin: io.stdin}
	if demo {
		d.sources = []ingest.Source{demosource.New(demosource.Config{})}
	} else {
		for i, sc := range cfg.Sources {
			src, err := newSource(sc, deps)
			if err != nil {
				return nil, fmt.Errorf("sources[%d] (%s): %w", i, sc.Type, err)
			}
			d.sources = append(d.sources, src)
		}
	}
	for _, src := range d.sources {
		d.reporter.InitSource(src.Name())
	}
	var events http.Handler
	if f.enableIngest {
		events = jsonl.NewHandler(d.sink, d.reporter, jsonl.HandlerConfig{}, log)
		d.reporter.InitSource(jsonl.HTTPSourceName)
	}
	if len(d.sources) == 0 && events == nil {
		return nil, errors.New("no sources: list some under sources: in the config file, or pass --web.enable-ingest")
	}

	d.live = export.NewLive(time.Now)
	if err := reg.Register(export.NewCollector(d.live, export.CollectorConfig{TopN: settings.Top, Masker: d.masker})); err != nil {
		return nil, fmt.Errorf("register collector: %w", err)
	}
	d.ready = export.NewReadiness()
	d.ready.Watch(d.sources...)

	webConfig := f.webConfig
	systemd := false
	d.server, err = export.NewServer(log.Named("web"), export.ServerConfig{
		Gatherer:   reg,
		Registerer: reg,
		Live:       d.live,
		Masker:     d.masker,
		Readiness:  d.ready,
		Events:     events,
		EventsHint: "HTTP ingest is disabled; start hotkeyd with --web.enable-ingest to POST JSON lines to /api/v1/events",
		Web:        &web.FlagConfig{WebListenAddresses: &[]string{cfg.Listen}, WebSystemdSocket: &systemd, WebConfigFile: &webConfig},
		Version:    buildVersion(),
	})
	if err != nil {
		return nil, err
	}
	if webConfig != "" {
		if err := web.Validate(webConfig); err != nil {
			return nil, fmt.Errorf("web config %s: %w", webConfig, err)
		}
	}
	// Listen here rather than in the server, so that the address actually
	// bound (":0" in tests) can be logged and announced.
	if d.listener, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return d, nil
}

// run runs every actor in one group until a signal, ctx or an actor ends
// it. The shutdown order is: readiness false, sources stop, their in-flight
// batches drain into the store, the HTTP server stops. A signal is a clean
// stop: run returns nil.
func (d *daemon) run(ctx context.Context) error {
	var g oklog.Group

	// Signals and the caller's context: either ends the group.
	{
		execute, interrupt := oklog.SignalHandler(ctx, syscall.SIGINT, syscall.SIGTERM)
		g.Add(execute, interrupt)
	}

	// Sources: each reads until stopSources. Their batches go to the store
	// under sinkCtx, which outlives stopSources so that what a source has
	// read when told to stop still lands in the window.
	sourceCtx, stopSources := context.WithCancel(context.Background())
	defer stopSources()
	sinkCtx, stopSink := context.WithCancel(context.Background())
	defer stopSink()
	sink := drainSink{ctx: sinkCtx, next: d.sink}
	var sourcesRunning sync.WaitGroup
	for _, src := range d.sources {
		log := d.log.With(zap.String("source", src.Name()))
		sourcesRunning.Add(1)
		g.Add(func() error {
			defer sourcesRunning.Done()
			err := src.Run(sourceCtx, sink)
			if err != nil && sourceCtx.Err() == nil {
				return fmt.Errorf("source %s: %w", src.Name(), err)
			}
			if sourceCtx.Err() == nil {
				// The input ended (stdin closed): keep serving what was read.
				log.Info("source finished its input")
				<-sourceCtx.Done()
			}
			log.Debug("source stopped")
			return nil
		}, func(error) { stopSources() })
	}

	// Detector tick: snapshot → evaluate with hysteresis → publish → log
	// what became hot or cooled.
	{
		tickCtx, stopTick := context.WithCancel(context.Background())
		ann := export.NewAnnouncer(d.log.Named("detector"), d.masker)
		g.Add(func() error {
			t := time.NewTicker(tickEvery)
			defer t.Stop()
			for {
				select {
				case <-tickCtx.Done():
					return nil
				case <-t.C:
					ann.Announce(d.tick())
				}
			}
		}, func(error) { stopTick() })
	}

	// HTTP: /metrics, the API, health and readiness. Its interrupt runs the
	// ordered shutdown: not ready, sources stopped and drained, then the
	// server is told to stop (httpCtx).
	{
		httpCtx, stopHTTP := context.WithCancel(context.Background())
		defer stopHTTP()
		g.Add(func() error {
			return d.server.Serve(httpCtx, d.listener)
		}, func(error) {
			d.ready.SetRunning(false, "shutting down")
			stopSources()
			drained := make(chan struct{})
			go func() { sourcesRunning.Wait(); close(drained) }()
			select {
			case <-drained:
			case <-time.After(drainTimeout):
				d.log.Warn("sources did not stop in time; dropping their in-flight events", zap.Duration("timeout", drainTimeout))
			}
			stopSink()
			stopHTTP()
		})
	}

	d.ready.SetRunning(true, "")
	d.log.Info("hotkeyd started", zap.String("address", d.listener.Addr().String()),
		zap.Duration("window", d.cfg.Window), zap.Float64("threshold", d.cfg.Threshold), zap.Int("sources", len(d.sources)))
	if d.demo {
		d.printDemoHelp()
	}
	err := g.Run()
	d.reporter.Flush()
	switch {
	case errors.Is(err, oklog.ErrSignal):
		// SignalHandler returns a *SignalError; SignalError's own As method
		// matches without filling the target, so ask for the pointer type.
		var sig *oklog.SignalError
		if errors.As(err, &sig) && sig.Signal != nil {
			d.log.Info("stopped", zap.String("signal", sig.Signal.String()))
		} else {
			d.log.Info("stopped", zap.Error(err))
		}
		return nil
	case err == nil || errors.Is(err, context.Canceled):
		d.log.Info("stopped")
		return nil
	}
	return err
}

// tick evaluates the current window once, publishes the report and
// returns what was raised and cleared.
func (d *daemon) tick() []report.Change {
	rep, changes := d.tracker.Evaluate(d.store.Snapshot())
	rep.Rejected = d.reporter.Rejected()
	d.live.Update(rep)
	return changes
}

// printDemoHelp tells a newcomer where to look.
func (d *daemon) printDemoHelp() {
	base := "http://" + browsable(d.listener.Addr())
	fmt.Fprintf(d.io.stdout, `hotkeyd demo: synthetic traffic on several tables, with planted hot keys and key-design mistakes.
  metrics:   %s/metrics   (try: curl -s %s/metrics | grep hotkeyd_hot_key)
  hot keys:  %s/api/v1/hotkeys
  and watch the log below for 'hot key' lines; they appear within seconds. Ctrl-C stops.
`, base, base, base)
}

// browsable turns a listen address into one a browser can open: the
// unspecified address becomes localhost.
func browsable(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	host := tcp.IP.String()
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, fmt.Sprint(tcp.Port))
}

// drainSink hands batches to next under its own context instead of the
// caller's, so a source told to stop can still deliver the batch it holds;
// the pipeline cancels ctx once every source has returned (or the drain
// timed out), and only then does Put give up.
type drainSink struct {
	ctx  context.Context
	next ingest.Sink
}

// Put implements ingest.Sink.
func (s drainSink) Put(_ context.Context, batch []ingest.Event) error {
	return s.next.Put(s.ctx, batch)
}
