package export

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"go.uber.org/zap"
)

// maxScrapeAnswers bounds the different answers (format, compression,
// name[] filter) made at once; a scrape that would need one more is
// answered 503, to be retried. Prometheus servers ask alike, so they
// share one answer; the bound keeps a client varying its headers from
// paying for an encoding per request.
const maxScrapeAnswers = 8

// scrapes serves /metrics so that its cost does not grow with the
// scrapes in flight: one gathering of the registry and one encoding per
// kind of answer serve every scrape that arrives while they are being
// made, and each such scrape is then written from the same bytes.
//
// An answer of 300 tables (21 000 series) takes 18 MB and over a hundred
// milliseconds of CPU after a new report, when every table's text is
// encoded and compressed again, and 3 ms when no table changed (the
// Exposition keeps their text; BenchmarkScrape). Made per request, 50
// concurrent scrapes held 50 times that and took seconds each. Made once,
// the answer (about 60 KB gzipped, 1.6 MB plain) is all a slow reader
// holds, and it is let go when the last of its scrapes is written.
//
// A scrape that joins an answer being made gets the metrics as they were
// when that answer's gathering began, a moment before it arrived; the
// report they show changes once a second anyway.
type scrapes struct {
	log *zap.Logger
	// encode negotiates, gathers, encodes and compresses an answer, and
	// counts its errors: an Exposition's handler (the report's series
	// from its kept text), or promhttp's (its gatherings coalesced, so
	// that different answers made at once share one gathering too); it
	// writes into a buffer.
	encode http.Handler

	mu     sync.Mutex
	making map[scrapeKind]*scrapeAnswer
	// spare is the body of the last answer whose scrapes were all
	// written, whose array the next answer is made into: an idle
	// daemon's answer (hundreds of kilobytes gzipped with a thousand
	// tables) is not allocated anew, grown by doubling, at every scrape.
	spare []byte
}

// scrapeKind is what makes two scrapes' answers differ: the negotiated
// exposition format (with its escaping scheme), whether the answer is
// gzipped, and the name[] filter of the query.
type scrapeKind struct {
	format expfmt.Format
	gzip   bool
	query  string
}

// scrapeAnswer is one answer, shared by the scrapes of its kind that
// arrived while it was made.
type scrapeAnswer struct {
	scrapes int           // the scrapes waiting for it or writing it, guarded by scrapes.mu
	made    chan struct{} // closed once status, header and body are set
	status  int
	header  http.Header
	body    []byte
}

func newScrapes(log *zap.Logger, g prometheus.Gatherer, reg prometheus.Registerer) *scrapes {
	return &scrapes{
		log: log,
		encode: HandlerFor(g, promhttp.HandlerOpts{
			EnableOpenMetrics: true,
			Registry:          reg,
			ErrorLog:          zap.NewStdLog(log),
			CoalesceGather:    true,
			// What kindOf negotiates: gzip or nothing.
			OfferedCompressions: []promhttp.Compression{promhttp.Identity, promhttp.Gzip},
		}),
		making: map[scrapeKind]*scrapeAnswer{},
	}
}

func (s *scrapes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := kindOf(r)
	s.mu.Lock()
	a, joined := s.making[kind]
	if !joined && len(s.making) >= maxScrapeAnswers {
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many different /metrics answers are being made at once; try again", http.StatusServiceUnavailable)
		return
	}
	if !joined {
		a = &scrapeAnswer{made: make(chan struct{})}
		s.making[kind] = a
	}
	a.scrapes++
	s.mu.Unlock()

	defer s.written(a)
	if joined {
		select {
		case <-a.made:
		case <-r.Context().Done():
			return
		}
	} else {
		s.make(a, kind, r)
	}
	h := w.Header()
	for k, v := range a.header {
		h[k] = v
	}
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// written counts one scrape of a done with it; the last one's done, the
// answer's body is the spare the next answer is made into. Before a is
// made its maker is one of its scrapes, so that its body is not there to
// take.
func (s *scrapes) written(a *scrapeAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.scrapes--
	if a.scrapes == 0 && a.body != nil {
		s.spare, a.body = a.body[:0], nil
	}
}

// make makes the answer of kind into a, for r and the scrapes that join
// it meanwhile, and stops taking scrapes for it once made. It runs to
// the end even when r's client goes away: others may be waiting.
func (s *scrapes) make(a *scrapeAnswer, kind scrapeKind, r *http.Request) {
	s.mu.Lock()
	rec := &recorder{header: http.Header{}, body: *bytes.NewBuffer(s.spare)}
	s.spare = nil
	s.mu.Unlock()
	req := r.Clone(context.WithoutCancel(r.Context()))
	req.Header.Del("Accept-Encoding")
	if kind.gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	defer func() {
		a.status, a.header, a.body = rec.status, rec.header, rec.body.Bytes()
		if a.status == 0 {
			a.status = http.StatusOK
		}
		s.mu.Lock()
		delete(s.making, kind)
		s.mu.Unlock()
		close(a.made)
	}()
	s.encode.ServeHTTP(rec, req)
}

// waiting returns the number of scrapes waiting for an answer being made.
func (s *scrapes) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.making {
		n += a.scrapes
	}
	return n
}

// kindOf returns the kind of answer r asks for: the format promhttp
// negotiates from its Accept header, gzip if its Accept-Encoding takes
// it, and its name[] filter.
func kindOf(r *http.Request) scrapeKind {
	k := scrapeKind{
		format: expfmt.NegotiateAccept(r.Header, expfmt.DefaultOpenMetricsAcceptedFormats()...),
		gzip:   acceptsGzip(r.Header.Values("Accept-Encoding")),
	}
	if names := r.URL.Query()["name[]"]; len(names) > 0 {
		k.query = strings.Join(names, "\xff")
	}
	return k
}

// acceptsGzip reports whether Accept-Encoding values take gzip: named
// with a q-value above zero, or through "*" when gzip is not named.
func acceptsGzip(values []string) bool {
	named, star := false, false
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "x-gzip" && coding != "*" {
				continue
			}
			ok := true
			for _, p := range strings.Split(params, ";") {
				name, value, _ := strings.Cut(p, "=")
				if strings.TrimSpace(name) == "q" {
					q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
					ok = err == nil && q > 0
				}
			}
			if coding == "*" {
				star = ok
				continue
			}
			if !ok {
				return false
			}
			named = true
		}
	}
	return named || star
}

// recorder is the http.ResponseWriter an answer is made into.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}
