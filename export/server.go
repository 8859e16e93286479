package export

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"
)

// DefaultEventsHint is what a request to /api/v1/events is told while HTTP
// ingest is disabled.
const DefaultEventsHint = "HTTP ingest is disabled; enable it in the configuration to POST JSON lines to /api/v1/events"

// ServerConfig configures the HTTP server.
type ServerConfig struct {
	// Gatherer is the registry served at /metrics. Required.
	Gatherer prometheus.Gatherer
	// Registerer, when set, receives the /metrics handler's own metrics
	// (promhttp_metric_handler_requests_total and friends).
	Registerer prometheus.Registerer
	// Live is the state served at /api/v1/hotkeys. Required.
	Live *Live
	// Masker masks the keys of the API; nil shows them as they are.
	Masker *KeyMasker
	// Readiness answers /-/ready. Required.
	Readiness *Readiness
	// Events, when set, serves POST /api/v1/events (HTTP ingest). When nil
	// the path answers 404 with EventsHint.
	Events http.Handler
	// EventsHint tells a client of the disabled /api/v1/events how to
	// enable it; empty means DefaultEventsHint.
	EventsHint string
	// Web holds the listen addresses and the web config file (TLS, basic
	// auth), as kingpinflag.AddFlags makes them. Required by Run only.
	Web *web.FlagConfig
	// Version is shown on the landing page.
	Version string
	// ShutdownTimeout bounds the graceful shutdown; zero means 5 s.
	ShutdownTimeout time.Duration
}

// Server is hotkeyd's HTTP surface: /metrics, /-/healthy, /-/ready,
// /api/v1/hotkeys, /api/v1/events and a landing page at /.
type Server struct {
	log     *zap.Logger
	cfg     ServerConfig
	handler http.Handler
}

// NewServer builds the server's routes. It starts nothing.
func NewServer(log *zap.Logger, cfg ServerConfig) (*Server, error) {
	if cfg.Gatherer == nil || cfg.Live == nil || cfg.Readiness == nil {
		return nil, errors.New("web server: Gatherer, Live and Readiness are required")
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 5 * time.Second
	}
	if cfg.EventsHint == "" {
		cfg.EventsHint = DefaultEventsHint
	}
	s := &Server{log: log, cfg: cfg}
	h, err := s.routes()
	if err != nil {
		return nil, err
	}
	s.handler = h
	return s, nil
}

// Handler returns the server's routes, without TLS or authentication.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() (http.Handler, error) {
	mux := http.NewServeMux()

	var metrics http.Handler = promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		Registry:          s.cfg.Registerer,
		ErrorLog:          zap.NewStdLog(s.log),
	})
	if s.cfg.Registerer != nil {
		metrics = promhttp.InstrumentMetricHandler(s.cfg.Registerer, metrics)
	}
	mux.Handle("GET /metrics", metrics)

	mux.HandleFunc("GET /-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "hotkeyd is healthy.")
	})
	mux.HandleFunc("GET /-/ready", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := s.cfg.Readiness.Check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "hotkeyd is not ready: %v\n", err)
			return
		}
		fmt.Fprintln(w, "hotkeyd is ready.")
	})

	mux.Handle("GET /api/v1/hotkeys", hotkeysHandler{live: s.cfg.Live, masker: s.cfg.Masker, log: s.log})

	if s.cfg.Events != nil {
		// Other methods get 405 with "Allow: POST" from the mux.
		mux.Handle("POST /api/v1/events", s.cfg.Events)
	} else {
		hint := s.cfg.EventsHint
		mux.HandleFunc("/api/v1/events", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, hint, http.StatusNotFound)
		})
	}

	landing, err := web.NewLandingPage(web.LandingConfig{
		Name:        "hotkeyd",
		Description: "Hot partition keys in Amazon DynamoDB tables, and how to fix the key design",
		Version:     s.cfg.Version,
		Links: []web.LandingLinks{
			{Address: "metrics", Text: "Metrics"},
			{Address: "api/v1/hotkeys", Text: "Hot keys", Description: "the live report (JSON)"},
			{Address: "-/healthy", Text: "Health"},
			{Address: "-/ready", Text: "Readiness"},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("build landing page: %w", err)
	}
	mux.Handle("GET /{$}", landing)
	return mux, nil
}

// Run listens on the addresses of the web flags and serves until ctx is
// done, then marks the daemon not ready and shuts down gracefully. TLS and
// basic auth come from the web config file, as in every Prometheus
// exporter. It returns nil after a shutdown asked for by ctx.
func (s *Server) Run(ctx context.Context) error {
	if s.cfg.Web == nil {
		return errors.New("web server: no listen address configured")
	}
	return s.serve(ctx, func(srv *http.Server) error {
		return web.ListenAndServe(srv, s.cfg.Web, newSlogLogger(s.log))
	})
}

// Serve is Run on a listener the caller opened (tests, socket handover);
// the web config file of the web flags still applies.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	flags := s.cfg.Web
	if flags == nil {
		empty := ""
		flags = &web.FlagConfig{WebConfigFile: &empty}
	}
	return s.serve(ctx, func(srv *http.Server) error {
		return web.Serve(l, srv, flags, newSlogLogger(s.log))
	})
}

func (s *Server) serve(ctx context.Context, listen func(*http.Server) error) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(s.log),
	}
	done := make(chan error, 1)
	go func() { done <- listen(srv) }()

	select {
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	// Not ready first, so that nothing new is routed here while we drain.
	s.cfg.Readiness.SetRunning(false, "shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shut down http server: %w", err)
	}
	s.log.Info("http server stopped")
	return nil
}
