package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	oklog "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest"
	demosource "github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/internal/logging"
	"github.com/hotkeyd/hotkeyd/judge"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// tickEvery is how often the detector's tick looks for something to judge:
// a table's second that closed, a window that moved. A look that finds
// nothing costs the same however many tables there are
// (judge.Evaluator.Moved); the tick evaluates once in each second of the
// clock and whenever a look finds something, and an evaluation copies out
// and judges only the tables that changed. So a verdict follows its
// table's second within a tenth of a second, and an idle daemon does
// next to nothing.
const tickEvery = 100 * time.Millisecond

// drainTimeout bounds how long a shutdown waits for the sources to hand
// over their last batches; a source still running then is left behind.
// With the HTTP server's own 5 s, a stop takes at most 15 s, within
// Kubernetes' default grace period of 30 s.
const drainTimeout = 10 * time.Second

// runDaemon runs the long-lived daemon (run), or the same daemon on the demo
// workload (demo), until ctx is done or SIGINT/SIGTERM arrives. With
// --config.check it builds everything, starts nothing and says so.
func runDaemon(ctx context.Context, f *flags, demo bool, io stdio) int {
	for {
		code, reload := runDaemonOnce(ctx, f, demo, io)
		if !reload {
			return code
		}
	}
}

// runDaemonOnce builds the daemon from the configuration file and runs it
// until it stops (the exit status) or stops to reload: then it returns
// reload, and runDaemon builds it again from the file.
func runDaemonOnce(ctx context.Context, f *flags, demo bool, io stdio) (code int, reload bool) {
	cfg, err := loadConfig(f, !demo)
	if err != nil {
		printError(io.stderr, err)
		return 1, false
	}
	log, err := logging.New(io.stderr, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: %v\n", err)
		return 1, false
	}
	defer func() { _ = log.Sync() }()
	if f.check {
		log = zap.NewNop() // the sources built say nothing
	}
	d, err := newDaemon(cfg, f, demo, io, log)
	switch {
	case err != nil && f.check:
		printError(io.stderr, err)
		return 1, false
	case err != nil:
		log.Error("cannot start", zap.Error(err))
		return 1, false
	case f.check:
		for _, msg := range cfg.Deprecated {
			fmt.Fprintf(io.stderr, "hotkeyd: deprecated: %s\n", msg)
		}
		return printValid(f, !demo, io), false
	}
	for _, msg := range cfg.Deprecated {
		log.Warn("deprecated configuration", zap.String("detail", msg))
	}
	err = d.run(ctx)
	switch {
	case errors.Is(err, errReload):
		return 0, true
	case err != nil:
		log.Error("stopped on error", zap.Error(err))
		return 1, false
	}
	return 0, false
}

// daemon is the wired pipeline: sources → counting sink → store; detector
// tick → live state; HTTP server over the live state and the registry.
type daemon struct {
	log      *zap.Logger
	cfg      config.Config
	demo     bool
	io       stdio
	store    *sketch.Store
	sink     traffic.Sink
	reporter *export.Reporter
	live     *export.Live
	history  *export.History
	ready    *export.Readiness
	masker   *export.KeyMasker
	tracker  *detect.Tracker
	server   *export.Server
	// progress is how far each source has read in event time: the
	// Store judges each table's seconds by it.
	progress *traffic.Progress
	sources  []traffic.Source
	// judge is what the detector's tick evaluates: this process's window,
	// or, when a source shares its shards through a lease table (replicas
	// is then set), every replica's.
	judge    judge.Evaluator
	replicas *judge.Replicas
	// flags are the command line's, to load the configuration again.
	flags *flags
	// reloads carries a reload asked over HTTP (POST /-/reload) to the
	// signal actor, with where to answer.
	reloads chan chan error
	// reloadOK and reloadAt are hotkeyd_config_last_reload_successful and
	// hotkeyd_config_last_reload_success_timestamp_seconds.
	reloadOK, reloadAt prometheus.Gauge
}

// newDaemon builds every component, and so runs every check run makes
// before it reads anything; it starts nothing.
func newDaemon(cfg config.Config, f *flags, demo bool, io stdio, log *zap.Logger) (*daemon, error) {
	d := &daemon{log: log, cfg: cfg, demo: demo, io: io, flags: f, reloads: make(chan chan error)}
	if f.webConfig != "" {
		if err := web.Validate(f.webConfig); err != nil {
			return nil, fmt.Errorf("web config %s: %w", f.webConfig, err)
		}
	}
	reg, err := export.NewRegistry(export.BuildInfo{Version: buildVersion()})
	if err != nil {
		return nil, err
	}
	// As Prometheus's own: a start is a successful load.
	d.reloadOK = prometheus.NewGauge(prometheus.GaugeOpts{Name: "hotkeyd_config_last_reload_successful", Help: "Whether the last configuration reload (SIGHUP, POST /-/reload) succeeded: 1, or 0 while the running configuration is kept after a failed one."})
	d.reloadAt = prometheus.NewGauge(prometheus.GaugeOpts{Name: "hotkeyd_config_last_reload_success_timestamp_seconds", Help: "When the configuration was last loaded, at start or by a reload (Unix seconds)."})
	d.reloadOK.Set(1)
	d.reloadAt.SetToCurrentTime()
	if err := reg.Register(d.reloadOK); err != nil {
		return nil, err
	}
	if err := reg.Register(d.reloadAt); err != nil {
		return nil, err
	}
	if d.masker, err = export.NewKeyMasker(cfg.Keys, cfg.KeyHashSecret); err != nil {
		return nil, err
	}
	settings := cfg.DetectSettings()
	d.tracker = detect.NewTracker(settings)
	scfg := sketch.DefaultConfig()
	scfg.Window = cfg.Window
	scfg.Tracked = max(scfg.Tracked, settings.Top)
	scfg.MaxTables = cfg.MaxTables
	if d.store, err = sketch.NewStore(scfg, time.Now); err != nil {
		return nil, fmt.Errorf("sketch store: %w", err)
	}
	d.progress = traffic.NewProgress(time.Now)
	d.store.SetWatermarks(d.progress)
	config.LogMemoryBudget(log, scfg, config.SetDaemonGC())
	if d.reporter, err = export.NewReporter(log.Named("ingest"), reg, export.ReporterConfig{Masker: d.masker}); err != nil {
		return nil, err
	}
	counting, err := export.NewCountingSink(d.store, reg, time.Now, log.Named("ingest"))
	if err != nil {
		return nil, err
	}
	env := ingest.Env{Log: log, Reporter: d.reporter, Registerer: reg, Tables: cfg.KeySchemas(), Stdin: io.stdin, Progress: d.progress, Window: cfg.Window}
	sourceConfigs := cfg.Sources
	if demo {
		// The demo's events carry their arrival time.
		d.sources, sourceConfigs = []traffic.Source{demosource.New(demosource.Config{})}, nil
		d.progress.Declare(demosource.SourceName, 0)
	}
	for i, sc := range sourceConfigs {
		src, err := sc.Settings.NewSource(env)
		if err != nil {
			return nil, fmt.Errorf("sources[%d] (%s): %w", i, sc.Type, err)
		}
		d.sources = append(d.sources, src)
	}
	for _, src := range d.sources {
		d.reporter.InitSource(src.Name())
		counting.InitSource(src.Name())
	}
	// Every Event is checked once more before it is counted, whatever
	// reader made it: names DynamoDB would refuse, units no call consumes
	// and times no window can judge (max_future, the input's retention or
	// max_event_age) never reach a total or a series.
	d.sink = traffic.CheckedTimes(counting, d.reporter, traffic.TimeLimits{
		MaxFuture: cfg.MaxFuture, MaxAge: traffic.MaxAges(d.sources, cfg.MaxEventAge), Now: time.Now,
	})
	var events http.Handler
	if f.enableIngest {
		rate := f.ingestRate
		if rate <= 0 {
			rate = -1 // no limit
		}
		events = jsonl.NewHandler(d.sink, d.reporter, jsonl.HandlerConfig{RequestsPerSecond: rate, Burst: f.ingestBurst}, log)
		d.reporter.InitSource(jsonl.HTTPSourceName)
		counting.InitSource(jsonl.HTTPSourceName)
		// An event without ts carries its arrival time; one with ts is
		// taken as it comes: HTTP ingest holds nothing back.
		d.progress.Declare(jsonl.HTTPSourceName, 0)
	}
	if len(d.sources) == 0 && events == nil {
		return nil, errors.New("no sources: list some under sources: in the config file, or pass --web.enable-ingest")
	}

	if d.replicas, err = newReplicas(d.sources, d.store, d.tracker, scfg.Tracked, log); err != nil {
		return nil, err
	}
	ccfg := export.CollectorConfig{TopN: settings.Top, Masker: d.masker}
	d.judge = judge.Alone(d.store, d.tracker)
	if d.replicas != nil {
		ccfg.Replica, d.judge = d.replicas.Worker(), d.replicas
	}
	d.live = export.NewLive(time.Now)
	d.history = export.NewHistory(export.HistoryConfig{Window: cfg.Window, Top: settings.Top})
	// The report's series are served beside the registry's, each table's
	// kept between scrapes while its report stays as it was.
	gatherer := export.Gatherers(reg, export.NewCollector(d.live, ccfg))
	if err := reg.Register(export.NewProgressCollector(d.progress, d.store)); err != nil {
		return nil, fmt.Errorf("register progress collector: %w", err)
	}
	d.ready = export.NewReadiness()
	d.ready.Watch(d.sources...)
	systemd := false
	d.server, err = export.NewServer(log.Named("web"), export.ServerConfig{
		Gatherer: gatherer, Registerer: reg, Live: d.live, History: d.history, Masker: d.masker, Readiness: d.ready, Events: events,
		EventsHint:     "HTTP ingest is disabled; start hotkeyd with --web.enable-ingest to POST JSON lines to /api/v1/events",
		Web:            &web.FlagConfig{WebListenAddresses: &[]string{cfg.Listen}, WebSystemdSocket: &systemd, WebConfigFile: &f.webConfig},
		Version:        buildVersion(),
		MaxConnections: f.maxConns, MaxConnectionsPerClient: perClient(f.maxConnsPerClient), ReadTimeout: f.readTimeout, WriteTimeout: f.writeTimeout, IdleTimeout: f.idle,
		Reload: d.reloadFunc(f.lifecycle),
	})
	return d, err
}

// errReload ends the run group when the configuration is to be loaded
// again: runDaemon then builds the daemon anew.
var errReload = errors.New("reloading the configuration")

// reloadFunc returns what POST /-/reload calls, nil unless enabled
// (--web.enable-lifecycle): it asks the signal actor to reload and
// returns its answer.
func (d *daemon) reloadFunc(enabled bool) func() error {
	if !enabled {
		return nil
	}
	return func() error {
		answer := make(chan error, 1)
		select {
		case d.reloads <- answer:
			return <-answer
		case <-time.After(5 * time.Second):
			return errors.New("the daemon is stopping or busy; try again")
		}
	}
}

// checkReload loads the configuration file again and builds every
// component from it without starting any, as --config.check does: a
// configuration that would not start is found while the running one is
// still there. On failure the running configuration is kept, and said.
func (d *daemon) checkReload() error {
	cfg, err := loadConfig(d.flags, !d.demo)
	if err == nil {
		_, err = newDaemon(cfg, d.flags, d.demo, d.io, zap.NewNop())
	}
	if err != nil {
		d.reloadOK.Set(0)
		d.log.Error("configuration reload failed; keeping the running configuration", zap.Error(err))
		return err
	}
	d.log.Info("reloading the configuration: stopping the pipeline to start it again from the file")
	return nil
}

// run listens, then runs every actor in one group until a signal, ctx or
// an actor ends it. The shutdown order is: readiness false, sources stop,
// their in-flight batches drain into the store (for at most drainTimeout),
// the HTTP server stops. A signal is a clean stop: run returns nil.
func (d *daemon) run(ctx context.Context) error {
	// Signals are caught from here on, before the address is announced
	// and readiness set: a SIGTERM sent as soon as the process is up is a
	// clean stop too, not the default action's kill. SIGHUP reloads the
	// configuration, as Prometheus does (its default action would kill
	// the daemon mid-batch).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	// Listen here rather than in the server, so that the address actually
	// bound (":0" in tests) can be logged and announced.
	listener, err := net.Listen("tcp", d.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var g oklog.Group

	// Signals and the caller's context: either ends the group.
	{
		quit := make(chan struct{})
		// A reload (SIGHUP, POST /-/reload) that checks out stops the
		// group as cleanly as SIGTERM, with errReload; one that does not
		// keeps everything running.
		g.Add(func() error {
			for {
				select {
				case s := <-sigs:
					if s != syscall.SIGHUP {
						return &oklog.SignalError{Signal: s}
					}
					if d.checkReload() == nil {
						return errReload
					}
				case answer := <-d.reloads:
					err := d.checkReload()
					answer <- err
					if err == nil {
						return errReload
					}
				case <-ctx.Done():
					return ctx.Err()
				case <-quit:
					return nil
				}
			}
		}, func(error) { close(quit) })
	}

	// Sources: each reads until told to stop; what it holds then still
	// lands in the window (ingest.Runner).
	sources := ingest.NewRunner(d.sources, d.sink, d.log)
	for i := range d.sources {
		g.Add(func() error { return sources.Run(i) }, func(error) { sources.Cancel() })
	}

	// Detector tick: snapshot what changed → evaluate with hysteresis →
	// record the second for the page → publish → log what became hot or
	// cooled. Once a second of the clock, and whenever the window moved.
	{
		tickCtx, stopTick := context.WithCancel(context.Background())
		ann := export.NewAnnouncer(d.log.Named("detector"), d.masker)
		// The looks fall on the clock's tenths of a second, so that the
		// first look of a second comes as it begins: a second that closes
		// on the clock is judged at once.
		nextLook := func() time.Duration {
			now := time.Now()
			return now.Truncate(tickEvery).Add(tickEvery).Sub(now)
		}
		g.Add(func() error {
			t := time.NewTimer(nextLook())
			defer t.Stop()
			var last int64 // the clock's second of the last evaluation
			for {
				select {
				case <-tickCtx.Done():
					return nil
				case now := <-t.C:
					t.Reset(nextLook())
					if now.Unix() == last && !d.judge.Moved() {
						continue
					}
					last = now.Unix()
					j := d.judge.Evaluate()
					d.history.Record(detect.LastSeconds(j.Snapshot, d.history.Keys()))
					j.Report.Rejected = d.reporter.Rejected()
					j.Report.Sources = export.SourcesReport(d.progress.States())
					j.Report.Notes = sourceNotes(d.sources)
					d.live.Publish(j.Report, j.Revisions)
					ann.Announce(j.Changes)
				}
			}
		}, func(error) { stopTick() })
	}

	// Summaries shared with the other replicas, in the lease table.
	if d.replicas != nil {
		boardCtx, stopBoard := context.WithCancel(context.Background())
		g.Add(func() error { return d.replicas.Run(boardCtx) }, func(error) { stopBoard() })
	}

	// HTTP: /metrics, the API, health and readiness. Its interrupt runs the
	// ordered shutdown: not ready, sources stopped and drained, then the
	// server is told to stop (httpCtx).
	{
		httpCtx, stopHTTP := context.WithCancel(context.Background())
		defer stopHTTP()
		g.Add(func() error {
			return d.server.Serve(httpCtx, listener)
		}, func(error) {
			d.ready.SetRunning(false, "shutting down")
			sources.Stop(drainTimeout)
			stopHTTP()
		})
	}

	d.ready.SetRunning(true, "")
	d.log.Info("hotkeyd started", zap.String("address", listener.Addr().String()),
		zap.Duration("window", d.cfg.Window), zap.Float64("threshold", d.cfg.Threshold), zap.Int("sources", len(d.sources)))
	if d.demo {
		fmt.Fprintf(d.io.stdout, demosource.Help, export.BrowsableURL(listener.Addr()))
	}
	err = g.Run()
	d.reporter.Flush()
	var sig *oklog.SignalError
	switch {
	case errors.As(err, &sig) && sig.Signal != nil:
		// SignalError's own As method matches without filling the target,
		// so ask for the pointer type.
		d.log.Info("stopped", zap.String("signal", sig.Signal.String()))
	case errors.Is(err, errReload):
		d.log.Info("stopped to reload the configuration")
		return errReload
	case errors.Is(err, oklog.ErrSignal):
		d.log.Info("stopped", zap.Error(err))
	case err == nil || errors.Is(err, context.Canceled):
		d.log.Info("stopped")
	default:
		return err
	}
	return nil
}

// sourceNotes gathers what the sources say a report must know of how
// their input was counted (traffic.Noter).
func sourceNotes(sources []traffic.Source) []string {
	var notes []string
	for _, src := range sources {
		if n, ok := src.(traffic.Noter); ok {
			notes = append(notes, n.Notes()...)
		}
	}
	return notes
}

// perClient turns the --web.max-connections-per-client flag, where 0 means
// no cap, into export.ServerConfig's, where 0 means the default.
func perClient(flag int) int {
	if flag <= 0 {
		return -1
	}
	return flag
}
