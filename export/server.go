package export

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/internal/logging"
)

// DefaultEventsHint is what a request to /api/v1/events is told while HTTP
// ingest is disabled.
const DefaultEventsHint = "HTTP ingest is disabled; enable it in the configuration to POST JSON lines to /api/v1/events"

// ServerConfig configures the HTTP server.
type ServerConfig struct {
	// Gatherer is the registry served at /metrics: an *Exposition serves
	// the report's series from the text it keeps per table. Required.
	Gatherer prometheus.Gatherer
	// Registerer, when set, receives the /metrics handler's own metrics
	// (promhttp_metric_handler_requests_total and friends).
	Registerer prometheus.Registerer
	// Live is the state served at /api/v1/hotkeys. Required.
	Live *Live
	// Recent is the per-second traffic served at /api/v1/hotkeys/history;
	// nil serves series without points.
	Recent *Recent
	// Recorded is the history on disk served at /api/v1/history and
	// /api/v1/incidents; nil answers them 503 (no history kept).
	Recorded HistoryReader
	// ReadyNotes, when set, adds lines to /-/ready's body that do not
	// make the daemon unready (history not recorded, and why).
	ReadyNotes func() []string
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
	// Version is written into the page.
	Version string
	// ShutdownTimeout bounds the graceful shutdown; zero means 5 s.
	ShutdownTimeout time.Duration
	// MaxConnections caps the connections held at once; past it, the
	// connection that has gone longest without progress is closed to make
	// room for a new one (capListener). Zero means DefaultMaxConnections.
	MaxConnections int
	// MaxConnectionsPerClient caps the connections one client address
	// holds at once; more are closed as soon as they are accepted. Zero
	// means DefaultMaxConnectionsPerClient, negative no cap.
	MaxConnectionsPerClient int
	// ReadTimeout, WriteTimeout and IdleTimeout bound the reading of a
	// whole request, the writing of its answer and an idle keep-alive
	// connection; zero means DefaultReadTimeout, DefaultWriteTimeout and
	// DefaultIdleTimeout.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Reload, when set, serves POST /-/reload (--web.enable-lifecycle): it
	// reloads the configuration and returns what it changed and restarted,
	// or why the running configuration is kept. When nil the path answers
	// 403, as Prometheus's does.
	Reload func() (string, error)
}

// Limits of the HTTP server. A request's headers must arrive within
// ReadHeaderTimeout and the whole request within the read timeout, its
// answer be written within the write timeout; an idle keep-alive
// connection is closed after the idle timeout. With the connection cap they
// bound what slow or idle clients can hold.
const (
	ReadHeaderTimeout     = 10 * time.Second
	DefaultReadTimeout    = 30 * time.Second
	DefaultWriteTimeout   = time.Minute
	DefaultIdleTimeout    = 2 * time.Minute
	DefaultMaxConnections = 512
)

// probePaths answer without credentials even when the web config sets
// basic auth, so that orchestrator probes (Kubernetes sends none) work;
// they tell only that the process runs and whether it is ready.
var probePaths = []string{"/-/healthy", "/-/ready"}

// ProbePaths returns the paths served without credentials under basic
// auth: the health and readiness probes.
func ProbePaths() []string { return slices.Clone(probePaths) }

// Server is hotkeyd's HTTP surface: /metrics, /-/healthy, /-/ready,
// /api/v1/hotkeys, /api/v1/hotkeys/history, /api/v1/events and the live
// page at /.
type Server struct {
	log     *zap.Logger
	cfg     ServerConfig
	handler http.Handler
	refused *prometheus.CounterVec
	// closed counts the connections closed by the caps, by reason.
	closed *prometheus.CounterVec
	// scrapes serves /metrics.
	scrapes *scrapes
	// cap is the connection cap of the listener served, once Serve runs.
	cap atomic.Pointer[capListener]
	// recent is what /api/v1/hotkeys/history serves (SetRecent).
	recent atomic.Pointer[Recent]
	// moves hands Serve a listener to move to; stopped is closed when
	// Serve returns.
	moves   chan net.Listener
	stopped chan struct{}
}

// NewServer builds the server's routes. It starts nothing.
func NewServer(log *zap.Logger, cfg ServerConfig) (*Server, error) {
	if cfg.Gatherer == nil || cfg.Live == nil || cfg.Readiness == nil {
		return nil, errors.New("web server: Gatherer, Live and Readiness are required")
	}
	if cfg.Recent == nil {
		cfg.Recent = NewRecent(RecentConfig{})
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 5 * time.Second
	}
	if cfg.EventsHint == "" {
		cfg.EventsHint = DefaultEventsHint
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxConnectionsPerClient == 0 {
		cfg.MaxConnectionsPerClient = DefaultMaxConnectionsPerClient
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.ReadTimeout, DefaultReadTimeout}, {&cfg.WriteTimeout, DefaultWriteTimeout}, {&cfg.IdleTimeout, DefaultIdleTimeout}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	refused, err := newRefusedCounter(cfg.Registerer, cfg.Events != nil)
	if err != nil {
		return nil, err
	}
	closed, err := newClosedCounter(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Server{log: log, cfg: cfg, refused: refused, closed: closed, moves: make(chan net.Listener), stopped: make(chan struct{})}
	s.recent.Store(cfg.Recent)
	h, err := s.routes()
	if err != nil {
		return nil, err
	}
	s.handler = h
	return s, nil
}

// SetRecent makes /api/v1/hotkeys/history serve h from now on (a reload
// that changes the window or the top keys kept starts a new Recent).
func (s *Server) SetRecent(h *Recent) { s.recent.Store(h) }

// Handler returns the server's routes, without TLS or authentication.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() (http.Handler, error) {
	mux := http.NewServeMux()

	s.scrapes = newScrapes(s.log, s.cfg.Gatherer, s.cfg.Registerer)
	var metrics http.Handler = s.scrapes
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
		if s.cfg.ReadyNotes != nil {
			for _, n := range s.cfg.ReadyNotes() {
				fmt.Fprintln(w, n)
			}
		}
	})

	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		switch {
		case s.cfg.Reload == nil:
			http.Error(w, "lifecycle API is not enabled: start hotkeyd with --web.enable-lifecycle, or send it SIGHUP", http.StatusForbidden)
		case r.Method != http.MethodPost && r.Method != http.MethodPut:
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "reload with POST", http.StatusMethodNotAllowed)
		default:
			done, err := s.cfg.Reload()
			if err != nil {
				http.Error(w, "configuration reload failed, the running configuration is kept: "+err.Error(), http.StatusInternalServerError)
				return
			}
			fmt.Fprintln(w, done)
		}
	})
	mux.Handle("GET /api/v1/hotkeys", hotkeysHandler{live: s.cfg.Live, masker: s.cfg.Masker, log: s.log})
	mux.Handle("GET /api/v1/hotkeys/history", historyHandler{live: s.cfg.Live, recent: s.recent.Load, masker: s.cfg.Masker, log: s.log})
	mux.Handle("GET /api/v1/history", cellsHandler{hist: s.cfg.Recorded, masker: s.cfg.Masker, log: s.log, now: time.Now})
	mux.Handle("GET /api/v1/incidents", incidentsHandler{hist: s.cfg.Recorded, masker: s.cfg.Masker, log: s.log, now: time.Now})

	if s.cfg.Events != nil {
		// Other methods get 405 with "Allow: POST" from the mux.
		mux.Handle("POST /api/v1/events", s.cfg.Events)
	} else {
		hint := s.cfg.EventsHint
		mux.HandleFunc("/api/v1/events", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, hint, http.StatusNotFound)
		})
	}

	// The page draws heatmaps and incidents where the history is kept:
	// else its paths answer 503, which the page would only log.
	page, csp, err := livePage(s.cfg.Version, s.cfg.Recorded != nil)
	if err != nil {
		return nil, fmt.Errorf("build the page: %w", err)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// The page is the same for every request, but a new binary may
		// serve another: ask the browser to check.
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Security-Policy", csp+"; frame-ancestors 'none'")
		_, _ = w.Write(page)
	})
	return securityHeaders(mux), nil
}

// securityHeaders sets on every answer the headers that keep a browser
// from misreading it or showing it inside another site: no sniffing of
// the content type (the JSON API is never taken for HTML), no framing
// (X-Frame-Options for browsers without CSP frame-ancestors), and no
// Referer leaving the page. Answers other than the page, which sets its
// own, get a policy that runs and loads nothing.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		next.ServeHTTP(w, r)
	})
}

// Run listens on the first address of the web flags and serves until ctx
// is done, then marks the daemon not ready and shuts down gracefully. TLS
// and basic auth come from the web config file, as in every Prometheus
// exporter. It returns nil after a shutdown asked for by ctx.
func (s *Server) Run(ctx context.Context) error {
	if s.cfg.Web == nil || s.cfg.Web.WebListenAddresses == nil || len(*s.cfg.Web.WebListenAddresses) == 0 {
		return errors.New("web server: no listen address configured")
	}
	l, err := net.Listen("tcp", (*s.cfg.Web.WebListenAddresses)[0])
	if err != nil {
		return fmt.Errorf("serve http: %w", err)
	}
	return s.Serve(ctx, l)
}

// Serve is Run on a listener the caller opened (the daemon, tests, socket
// handover); the web config file of the web flags still applies. At most
// MaxConnections of the listener's connections are held at once, at most
// MaxConnectionsPerClient of them from one client address; past the
// first, the connection that has gone longest without progress is closed
// to make room.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	defer close(s.stopped)
	cur := s.start(l)
	var moved sync.WaitGroup // servers of listeners moved from, shutting down
	defer moved.Wait()
	for {
		select {
		case err := <-cur.done:
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return fmt.Errorf("serve http: %w", err)
		case next := <-s.moves:
			old := cur
			cur = s.start(next)
			moved.Add(1)
			go func() {
				defer moved.Done()
				if err := s.shutdown(ctx, old); err != nil {
					s.log.Warn("stopped listening, connections cut", zap.String("address", old.addr), zap.Error(err))
					return
				}
				s.log.Info("stopped listening", zap.String("address", old.addr))
			}()
			continue
		case <-ctx.Done():
		}
		// Not ready first, so that nothing new is routed here while we drain.
		s.cfg.Readiness.SetRunning(false, "shutting down")
		if err := s.shutdown(ctx, cur); err != nil {
			return fmt.Errorf("shut down http server: %w", err)
		}
		s.log.Info("http server stopped")
		return nil
	}
}

// Move makes Serve serve on l from now on, at once; the listener it served
// so far is closed, its connections answered and closed within
// ShutdownTimeout. A reload of the configuration moves the server when the
// listen address changes. It fails once Serve has returned.
func (s *Server) Move(l net.Listener) error {
	select {
	case s.moves <- l:
		return nil
	case <-s.stopped:
		return errors.New("the HTTP server has stopped")
	}
}

// serving is one http.Server on one listener.
type serving struct {
	srv  *http.Server
	addr string
	done chan error // web.Serve's return
}

// start serves l in a new http.Server, with the caps around it.
func (s *Server) start(l net.Listener) *serving {
	flags := s.cfg.Web
	if flags == nil {
		empty := ""
		flags = &web.FlagConfig{WebConfigFile: &empty}
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ErrorLog:          zap.NewStdLog(s.log),
		ConnContext:       withConn,
	}
	sv := &serving{srv: srv, addr: l.Addr().String(), done: make(chan error, 1)}
	// web.Serve wraps srv.Handler in its TLS-and-auth handler and then
	// accepts; the first Accept, in the same goroutine and before any
	// request is served, puts the probes and the refusal count around it.
	var once sync.Once
	if s.cfg.MaxConnectionsPerClient > 0 {
		l = newPerClientListener(l, s.cfg.MaxConnectionsPerClient, s.log, s.closed.WithLabelValues(closedPerClient).Inc)
	}
	capped := newCapListener(l, s.cfg.MaxConnections, s.log, s.closed.WithLabelValues(closedCapFull).Inc)
	s.cap.Store(capped)
	l = acceptHook{Listener: capped, first: func() {
		once.Do(func() { srv.Handler = s.outer(srv.Handler) })
	}}
	go func() { sv.done <- web.Serve(l, srv, flags, logging.Slog(s.log)) }()
	return sv
}

// shutdown stops sv gracefully, within ShutdownTimeout.
func (s *Server) shutdown(ctx context.Context, sv *serving) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	err := sv.srv.Shutdown(sctx)
	if serr := <-sv.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// outer is the handler in front of authed (the routes behind the web
// config's TLS and auth): the probes skip the auth, every refusal is
// counted, and the connection's progress is marked for the cap.
func (s *Server) outer(authed http.Handler) http.Handler {
	return markProgress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := authed
		if slices.Contains(probePaths, r.URL.Path) {
			h = s.handler
		}
		rw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(rw, r)
		if refusedCodes[rw.status] {
			s.refused.WithLabelValues(routeOf(r.URL.Path), strconv.Itoa(rw.status)).Inc()
		}
	}))
}

// acceptHook calls first before each Accept (it is expected to act once).
type acceptHook struct {
	net.Listener
	first func()
}

func (l acceptHook) Accept() (net.Conn, error) {
	l.first()
	return l.Listener.Accept()
}

// statusWriter records the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// refusedCodes are the refusals hotkeyd_http_requests_refused_total counts:
// no or wrong credentials, a body too large, a content type or encoding
// that is not JSON lines, a request over a rate limit.
var refusedCodes = map[int]bool{
	http.StatusUnauthorized: true, http.StatusRequestEntityTooLarge: true,
	http.StatusUnsupportedMediaType: true, http.StatusTooManyRequests: true,
}

// routes are the path label's values; any other path is "other".
var routes = []string{"/", "/metrics", "/api/v1/hotkeys", "/api/v1/hotkeys/history", "/api/v1/history", "/api/v1/incidents", "/api/v1/events", "/-/healthy", "/-/ready", "/-/reload"}

func routeOf(path string) string {
	if slices.Contains(routes, path) {
		return path
	}
	return "other"
}

// BrowsableURL turns a listen address into a URL a browser can open: the
// unspecified address becomes localhost.
func BrowsableURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		if ok {
			return fmt.Sprintf("http://localhost:%d", tcp.Port)
		}
		return "http://" + addr.String()
	}
	return "http://" + net.JoinHostPort(tcp.IP.String(), fmt.Sprint(tcp.Port))
}
