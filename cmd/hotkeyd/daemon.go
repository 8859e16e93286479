package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
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
	var reader config.Reader
	cfg, err := loadConfigWith(&reader, f, !demo)
	if err != nil {
		printError(io.stderr, err)
		return 1
	}
	log, err := logging.New(io.stderr, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: %v\n", err)
		return 1
	}
	defer func() { _ = log.Sync() }()
	if f.check {
		log = zap.NewNop() // the sources built say nothing
	}
	d, err := newDaemon(cfg, f, demo, io, log)
	switch {
	case err != nil && f.check:
		printError(io.stderr, err)
		return 1
	case err != nil:
		log.Error("cannot start", zap.Error(err))
		return 1
	case f.check:
		for _, msg := range cfg.Deprecated {
			fmt.Fprintf(io.stderr, "hotkeyd: deprecated: %s\n", msg)
		}
		return printValid(f, !demo, io)
	}
	for _, msg := range cfg.Deprecated {
		log.Warn("deprecated configuration", zap.String("detail", msg))
	}
	d.reader = &reader
	if err := d.run(ctx); err != nil {
		log.Error("stopped on error", zap.Error(err))
		return 1
	}
	return 0
}

// daemon is the wired pipeline: sources → checked sink → counting sink →
// window (the sketch store); detector tick → live state; HTTP server over
// the live state and the registry. What a reload may replace is reached
// through a switch or an atomic pointer (switches.go); the rest, with every
// counter, lives as long as the process.
type daemon struct {
	log    *zap.Logger
	demo   bool
	io     stdio
	flags  *flags
	reader *config.Reader // reads the file again on a reload

	// reg holds the metrics /metrics serves but the sources' and the
	// report's (gathered).
	reg      *export.Registry
	reporter *export.Reporter
	counting *export.CountingSink
	live     *export.Live
	ready    *export.Readiness
	masker   *export.KeyMasker
	server   *export.Server
	// progress is how far each source has read in event time: the
	// Store judges each table's seconds by it.
	progress *traffic.Progress
	gogc     int
	// ingest is set when HTTP ingest is on (--web.enable-ingest).
	ingest bool

	// sink takes what the sources and HTTP ingest read: the running
	// configuration's checks in front of counting.
	sink *switchSink
	// window is the store behind counting.
	window *window
	// gathered is reg and the running sources' registry; exposition is
	// what /metrics serves: them and the report's series.
	gathered   *gatherers
	exposition *export.Exposition
	// core is what the detector's tick evaluates and records.
	core atomic.Pointer[core]
	// pipe runs the sources; running is the generation it runs (the
	// first, until run starts it).
	pipe    *pipeline
	running *generation

	// cfg is the running configuration and listener the open listener;
	// after run has started, only the reload loop touches them.
	cfg      config.Config
	listener net.Listener
	// reloads carries the reloads asked (SIGHUP, POST /-/reload) to the
	// reload loop; stopping is closed when the daemon begins to stop.
	reloads  chan reloadRequest
	stopping chan struct{}
	// reloadOK and reloadAt are hotkeyd_config_last_reload_successful and
	// hotkeyd_config_last_reload_success_timestamp_seconds.
	reloadOK, reloadAt prometheus.Gauge
}

// core is what the detector's tick works with: the store, the tracker
// with its hysteresis, the history of the live page, and the evaluator
// over them (this process's window, or every replica's). A reload replaces
// it whole, sharing what it keeps.
type core struct {
	store   *sketch.Store
	tracker *detect.Tracker
	history *export.History
	judge   judge.Evaluator
	// sources are the running sources, whose notes the report carries.
	sources []traffic.Source
}

// newDaemon builds every component, and so runs every check run makes
// before it reads anything; it starts nothing.
func newDaemon(cfg config.Config, f *flags, demo bool, io stdio, log *zap.Logger) (*daemon, error) {
	d := &daemon{
		log: log, cfg: cfg, demo: demo, io: io, flags: f, ingest: f.enableIngest,
		reloads: make(chan reloadRequest, 1), stopping: make(chan struct{}),
	}
	if f.webConfig != "" {
		if err := web.Validate(f.webConfig); err != nil {
			return nil, fmt.Errorf("web config %s: %w", f.webConfig, err)
		}
	}
	reg, err := export.NewRegistry(export.BuildInfo{Version: buildVersion()})
	if err != nil {
		return nil, err
	}
	d.reg = reg
	if d.reloadOK, d.reloadAt, err = newReloadMetrics(reg); err != nil {
		return nil, err
	}
	if d.masker, err = export.NewKeyMasker(cfg.Keys, cfg.KeyHashSecret); err != nil {
		return nil, err
	}
	pipeline := cfg.Pipeline()
	store, err := sketch.NewStore(pipeline.Sketch, time.Now)
	if err != nil {
		return nil, fmt.Errorf("sketch store: %w", err)
	}
	d.progress = traffic.NewProgress(time.Now)
	store.SetWatermarks(d.progress)
	d.gogc = config.SetDaemonGC()
	config.LogMemoryBudget(log, pipeline.Sketch, d.gogc)
	if d.reporter, err = export.NewReporter(log.Named("ingest"), reg, export.ReporterConfig{Masker: d.masker}); err != nil {
		return nil, err
	}
	d.window = newWindow(store)
	if d.counting, err = export.NewCountingSink(d.window, reg, time.Now, log.Named("ingest")); err != nil {
		return nil, err
	}
	if d.running, err = d.newGeneration(cfg, log); err != nil {
		return nil, err
	}
	d.sink = newSwitchSink(d.checkedSink(cfg, d.running.sources))
	var events http.Handler
	if d.ingest {
		rate := f.ingestRate
		if rate <= 0 {
			rate = -1 // no limit
		}
		events = jsonl.NewHandler(d.sink, d.reporter, jsonl.HandlerConfig{RequestsPerSecond: rate, Burst: f.ingestBurst}, log)
		d.reporter.InitSource(jsonl.HTTPSourceName)
		d.counting.InitSource(jsonl.HTTPSourceName)
		// An event without ts carries its arrival time; one with ts is
		// taken as it comes: HTTP ingest holds nothing back.
		d.progress.Declare(jsonl.HTTPSourceName, 0)
	}
	if len(d.running.sources) == 0 && events == nil {
		return nil, errors.New("no sources: list some under sources: in the config file, or pass --web.enable-ingest")
	}
	tracker := detect.NewTracker(pipeline.Detect)
	c, err := d.newCore(cfg, store, tracker, d.running, log)
	if err != nil {
		return nil, err
	}
	d.core.Store(c)
	d.live = export.NewLive(time.Now)
	if err := reg.Register(export.NewProgressCollector(d.progress, d.window)); err != nil {
		return nil, fmt.Errorf("register progress collector: %w", err)
	}
	// The report's series are served beside the registries', each table's
	// kept between scrapes while its report stays as it was.
	d.gathered = &gatherers{main: reg}
	d.gathered.sources.Store(d.running.reg)
	d.exposition = export.NewExposition(d.gathered, d.newCollector(d.running))
	d.ready = export.NewReadiness()
	d.ready.Watch(d.running.sources...)
	systemd := false
	d.server, err = export.NewServer(log.Named("web"), export.ServerConfig{
		Gatherer: d.exposition, Registerer: reg, Live: d.live, History: c.history, Masker: d.masker, Readiness: d.ready, Events: events,
		EventsHint:     "HTTP ingest is disabled; start hotkeyd with --web.enable-ingest to POST JSON lines to /api/v1/events",
		Web:            &web.FlagConfig{WebListenAddresses: &[]string{cfg.Listen}, WebSystemdSocket: &systemd, WebConfigFile: &f.webConfig},
		Version:        buildVersion(),
		MaxConnections: f.maxConns, MaxConnectionsPerClient: perClient(f.maxConnsPerClient), ReadTimeout: f.readTimeout, WriteTimeout: f.writeTimeout, IdleTimeout: f.idle,
		Reload: d.reloadFunc(f.lifecycle),
	})
	return d, err
}

// newGeneration builds the sources of cfg (the demo's in demo mode), with
// a registry of their own, and the judge across replicas when one shares
// its shards through a lease table. It starts nothing.
func (d *daemon) newGeneration(cfg config.Config, log *zap.Logger) (*generation, error) {
	g := &generation{reg: export.NewSourcesRegistry()}
	env := ingest.Env{Log: log, Reporter: d.reporter, Registerer: g.reg, Tables: cfg.KeySchemas(), Stdin: d.io.stdin, Progress: d.progress, Window: cfg.Window}
	if d.demo {
		// The demo's events carry their arrival time.
		g.sources = []traffic.Source{demosource.New(demosource.Config{})}
		d.progress.Declare(demosource.SourceName, 0)
		return g, nil
	}
	for i, sc := range cfg.Sources {
		src, err := sc.Settings.NewSource(env)
		if err != nil {
			return nil, fmt.Errorf("sources[%d] (%s): %w", i, sc.Type, err)
		}
		g.sources = append(g.sources, src)
	}
	return g, nil
}

// newCore returns the core over store and tracker, with a new history,
// judging with g's replicas when it has a lease table (made here, as they
// need the store).
func (d *daemon) newCore(cfg config.Config, store *sketch.Store, tracker *detect.Tracker, g *generation, log *zap.Logger) (*core, error) {
	c := &core{store: store, tracker: tracker, judge: judge.Alone(store, tracker), sources: g.sources,
		history: export.NewHistory(export.HistoryConfig{Window: cfg.Window, Top: cfg.Detector.Top})}
	var err error
	if g.replicas, err = newReplicas(g.sources, store, tracker, store.Config().Tracked, log); err != nil {
		return nil, err
	}
	if g.replicas != nil {
		c.judge = g.replicas
	}
	return c, nil
}

// newCollector returns the collector of the report's series (as many keys
// per class as the report's settings say), of the keys g's replica raises
// when it shares a lease table.
func (d *daemon) newCollector(g *generation) *export.Collector {
	ccfg := export.CollectorConfig{Masker: d.masker}
	if g.replicas != nil {
		ccfg.Replica = g.replicas.Worker()
	}
	return export.NewCollector(d.live, ccfg)
}

// checkedSink returns the checks of cfg in front of the counting sink:
// every Event is checked once more before it is counted, whatever reader
// made it: names DynamoDB would refuse, units no call consumes and times
// no window can judge (max_future, the input's retention or max_event_age)
// never reach a total or a series.
func (d *daemon) checkedSink(cfg config.Config, sources []traffic.Source) traffic.Sink {
	for _, src := range sources {
		d.reporter.InitSource(src.Name())
		d.counting.InitSource(src.Name())
	}
	return traffic.CheckedTimes(d.counting, d.reporter, traffic.TimeLimits{
		MaxFuture: cfg.MaxFuture, MaxAge: traffic.MaxAges(sources, cfg.MaxEventAge), Now: time.Now,
	})
}

// reloadFunc returns what POST /-/reload calls, nil unless enabled
// (--web.enable-lifecycle): it asks the reload loop to reload and returns
// its answer.
func (d *daemon) reloadFunc(enabled bool) func() (string, error) {
	if !enabled {
		return nil
	}
	return func() (string, error) {
		answer := make(chan reloadResult, 1)
		select {
		case d.reloads <- reloadRequest{answer: answer}:
		case <-d.stopping:
			return "", errStopping
		}
		select {
		case r := <-answer:
			return r.done, r.err
		case <-d.stopping:
			return "", errStopping
		}
	}
}

// run listens, then runs every actor in one group until a signal, ctx or
// an actor ends it. The shutdown order is: readiness false, sources stop,
// their in-flight batches drain into the store (for at most drainTimeout),
// the HTTP server stops. A signal is a clean stop: run returns nil.
// Reloads run beside the group, one at a time, and never stop it.
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
	var err error
	if d.listener, err = net.Listen("tcp", d.cfg.Listen); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	d.pipe = newPipeline(d.log, d.sink)
	var g oklog.Group

	// Signals and the caller's context: either ends the group. SIGHUP
	// asks the reload loop for a reload and the group goes on.
	{
		quit := make(chan struct{})
		g.Add(func() error {
			for {
				select {
				case s := <-sigs:
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

	// Sources: each reads until told to stop; what it holds then still
	// lands in the window (ingest.Runner). A reload may replace them.
	first := d.running
	g.Add(func() error { return d.pipe.Run(first) }, func(error) { d.pipe.Cancel() })

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
					c := d.core.Load() // a reload may replace it
					if now.Unix() == last && !c.judge.Moved() {
						continue
					}
					last = now.Unix()
					j := c.judge.Evaluate()
					c.history.Record(detect.LastSeconds(j.Snapshot, c.history.Keys()))
					j.Report.Rejected = d.reporter.Rejected()
					j.Report.Sources = export.SourcesReport(d.progress.States())
					j.Report.Notes = sourceNotes(c.sources)
					d.live.Publish(j.Report, j.Revisions)
					ann.Announce(j.Changes)
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
		listener := d.listener
		g.Add(func() error {
			return d.server.Serve(httpCtx, listener)
		}, func(error) {
			d.ready.SetRunning(false, "shutting down")
			d.pipe.Stop(drainTimeout)
			stopHTTP()
		})
	}

	// Reloads, one at a time, beside the group: a reload never ends it,
	// and a stop does not wait for a reload stuck reading its file.
	go d.reloadLoop()

	d.ready.SetRunning(true, "")
	d.log.Info("hotkeyd started", zap.String("address", d.listener.Addr().String()),
		zap.Duration("window", d.cfg.Window), zap.Float64("threshold", d.cfg.Detector.Threshold), zap.Int("sources", len(first.sources)))
	if d.demo {
		fmt.Fprintf(d.io.stdout, demosource.Help, export.BrowsableURL(d.listener.Addr()))
	}
	err = g.Run()
	d.reporter.Flush()
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
