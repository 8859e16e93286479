package daemon

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/forecast"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Options are what the daemon takes from the process besides its
// configuration: the flags' settings, the standard streams and how to
// read the configuration again.
type Options struct {
	// Log is the daemon's logger; each component logs under a name of it.
	Log *zap.Logger
	// Demo runs the built-in synthetic workload instead of the
	// configuration's sources (hotkeyd demo).
	Demo bool
	// Load reads the configuration again, with the flags applied over
	// it, for a reload (SIGHUP, POST /-/reload).
	Load func() (config.Config, error)
	// Stdin is what a source reading "-" reads; Stdout gets the demo's
	// help once the address is bound.
	Stdin  io.Reader
	Stdout io.Writer
	// Version is the version hotkeyd_build_info and the pages report.
	Version string
	// Web is the HTTP server's settings.
	Web Web
}

// Web is the HTTP server's settings (the --web.* flags).
type Web struct {
	// ConfigFile is the exporter-toolkit web configuration (TLS, basic
	// auth); empty for none.
	ConfigFile string
	// MaxConnections, MaxConnectionsPerClient and the timeouts are
	// export.ServerConfig's.
	MaxConnections, MaxConnectionsPerClient int
	ReadTimeout, WriteTimeout, IdleTimeout  time.Duration
	// Lifecycle enables POST /-/reload.
	Lifecycle bool
	// Ingest enables POST /api/v1/events, at most IngestRate requests
	// per second (0 or less: no limit) with bursts of IngestBurst.
	Ingest      bool
	IngestRate  float64
	IngestBurst int
}

// errNoSources refuses a configuration with nothing to read.
var errNoSources = errors.New("no sources: list some under sources: in the config file, or pass --web.enable-ingest")

// Daemon is the wired pipeline: sources → checked sink → counting sink →
// window (the sketch store); detector tick → live state; HTTP server over
// the live state and the registry. What a reload may replace is reached
// through a switch or an atomic pointer (switches.go); the rest, with every
// counter, lives as long as the process.
type Daemon struct {
	log  *zap.Logger
	opts Options

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
	// hist is the history on disk, open from Run on; it lives as long as
	// the process, through reloads.
	hist atomic.Pointer[history.Store]
	// histMetrics are its series, registered with the others in New.
	histMetrics *history.Metrics
	// forecasts are the judged keys' hourly series the tracker forecasts
	// from, refreshed from hist by an actor of their own (forecast.go).
	forecasts *forecast.Cache
	// pipe runs the sources; running is the generation it runs (the
	// first, until Run starts it).
	pipe    *pipeline
	running *generation

	// cfg is the running configuration and listener the open listener;
	// after Run has started, only the reload loop touches them.
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

// New builds every component of cfg, and so runs every check the daemon
// makes before it reads anything (--config.check stops there); it starts
// nothing.
func New(cfg config.Config, opts Options) (*Daemon, error) {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	d := &Daemon{
		log: opts.Log, opts: opts, cfg: cfg,
		reloads: make(chan reloadRequest, 1), stopping: make(chan struct{}),
	}
	if opts.Web.ConfigFile != "" {
		if err := web.Validate(opts.Web.ConfigFile); err != nil {
			return nil, fmt.Errorf("web config %s: %w", opts.Web.ConfigFile, err)
		}
	}
	if err := d.newRegistry(cfg); err != nil {
		return nil, err
	}
	store, err := d.newWindow(cfg)
	if err != nil {
		return nil, err
	}
	if d.running, err = d.newGeneration(cfg, d.log); err != nil {
		return nil, err
	}
	d.sink = newSwitchSink(d.checkedSink(cfg, d.running.sources))
	events := d.newIngest()
	if len(d.running.sources) == 0 && events == nil {
		return nil, errNoSources
	}
	tracker := detect.NewTracker(cfg.Pipeline().Detect)
	d.forecasts = forecast.NewCache()
	if cfg.History.Path != "" {
		// The tracker lives through reloads (they change its settings):
		// its series are set once.
		tracker.SetForecastSeries(detect.CachedSeries(d.forecasts))
	}
	c, err := d.newCore(cfg, store, tracker, d.running)
	if err != nil {
		return nil, err
	}
	d.core.Store(c)
	if err := d.newExposition(); err != nil {
		return nil, err
	}
	if d.server, err = d.newServer(cfg, c.recent, events); err != nil {
		return nil, err
	}
	return d, nil
}

// newRegistry builds the registry with the daemon's own metrics, the key
// masker and the reporter of rejected input.
func (d *Daemon) newRegistry(cfg config.Config) error {
	reg, err := export.NewRegistry(export.BuildInfo{Version: d.opts.Version})
	if err != nil {
		return err
	}
	d.reg = reg
	if d.reloadOK, d.reloadAt, err = newReloadMetrics(reg); err != nil {
		return err
	}
	if d.histMetrics, err = history.NewMetrics(reg); err != nil {
		return fmt.Errorf("register history metrics: %w", err)
	}
	if d.masker, err = export.NewKeyMasker(cfg.Keys, cfg.KeyHashSecret); err != nil {
		return err
	}
	d.reporter, err = export.NewReporter(d.log.Named("ingest"), reg, export.ReporterConfig{Masker: d.masker})
	return err
}

// newWindow builds the sketch store of cfg's shape, judged by the
// sources' progress, behind the window switch and the counting sink; it
// sets the process's GC for a daemon and logs the memory budget.
func (d *Daemon) newWindow(cfg config.Config) (*sketch.Store, error) {
	shape := cfg.Pipeline().Sketch
	store, err := sketch.NewStore(shape, time.Now)
	if err != nil {
		return nil, fmt.Errorf("sketch store: %w", err)
	}
	d.progress = traffic.NewProgress(time.Now)
	store.SetWatermarks(d.progress)
	store.Declare(cfg.DeclaredTables())
	d.gogc = config.SetDaemonGC()
	config.LogMemoryBudget(d.log, shape, d.gogc)
	d.window = newWindow(store)
	if d.counting, err = export.NewCountingSink(d.window, d.reg, time.Now, d.log.Named("ingest")); err != nil {
		return nil, err
	}
	return store, nil
}

// newIngest returns the handler of POST /api/v1/events into the daemon's
// sink, nil unless HTTP ingest is on (--web.enable-ingest).
func (d *Daemon) newIngest() http.Handler {
	if !d.opts.Web.Ingest {
		return nil
	}
	rate := d.opts.Web.IngestRate
	if rate <= 0 {
		rate = -1 // no limit
	}
	events := jsonl.NewHandler(d.sink, d.reporter, jsonl.HandlerConfig{RequestsPerSecond: rate, Burst: d.opts.Web.IngestBurst}, d.log)
	d.reporter.InitSource(jsonl.HTTPSourceName)
	d.counting.InitSource(jsonl.HTTPSourceName)
	// An event without ts carries its arrival time; one with ts is
	// taken as it comes: HTTP ingest holds nothing back.
	d.progress.Declare(jsonl.HTTPSourceName, 0)
	return events
}

// newExposition builds what /metrics serves: the registry, the running
// sources' registry, the counting sink's per-table counters (kept between
// scrapes while no batch is counted) and the report's series, each
// table's kept between scrapes while its report stays as it was; and the
// live state the collector reads.
func (d *Daemon) newExposition() error {
	d.live = export.NewLive(time.Now)
	if err := d.reg.Register(export.NewProgressCollector(d.progress, d.window)); err != nil {
		return fmt.Errorf("register progress collector: %w", err)
	}
	d.gathered = &gatherers{main: d.reg}
	d.gathered.sources.Store(d.running.reg)
	d.exposition = export.NewExposition(d.gathered, d.newCollector(d.running), d.counting)
	d.ready = export.NewReadiness()
	d.ready.Watch(d.running.sources...)
	return nil
}

// newServer builds the HTTP server: /metrics, the API, the live page, the
// probes, HTTP ingest (events) and the reload endpoint.
func (d *Daemon) newServer(cfg config.Config, recent *export.Recent, events http.Handler) (*export.Server, error) {
	systemd := false
	w := d.opts.Web
	return export.NewServer(d.log.Named("web"), export.ServerConfig{
		Gatherer: d.exposition, Registerer: d.reg, Live: d.live, Recent: recent, Masker: d.masker, Readiness: d.ready, Events: events,
		Recorded: recorded{d}, ReadyNotes: d.readyNotes,
		EventsHint:     "HTTP ingest is disabled; start hotkeyd with --web.enable-ingest to POST JSON lines to /api/v1/events",
		Web:            &web.FlagConfig{WebListenAddresses: &[]string{cfg.Listen}, WebSystemdSocket: &systemd, WebConfigFile: &w.ConfigFile},
		Version:        d.opts.Version,
		MaxConnections: w.MaxConnections, MaxConnectionsPerClient: w.MaxConnectionsPerClient,
		ReadTimeout: w.ReadTimeout, WriteTimeout: w.WriteTimeout, IdleTimeout: w.IdleTimeout,
		Reload: d.reloadFunc(w.Lifecycle),
	})
}

// newCollector returns the collector of the report's series (as many keys
// per class as the report's settings say), of the keys g's replica raises
// when it shares a lease table.
func (d *Daemon) newCollector(g *generation) *export.Collector {
	ccfg := export.CollectorConfig{Masker: d.masker}
	if g.replicas != nil {
		ccfg.Replica = g.replicas.Worker()
	}
	return export.NewCollector(d.live, ccfg)
}
