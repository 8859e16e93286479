package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Defaults of HandlerConfig.
const (
	// HTTPSourceName is the source label of Events received over HTTP.
	HTTPSourceName = "http"
	// DefaultMaxBodyBytes bounds a request body (after decompression).
	DefaultMaxBodyBytes = 4 << 20
	// DefaultRequestsPerSecond and DefaultBurst bound the request rate.
	DefaultRequestsPerSecond = 100
	DefaultBurst             = 20
	// DefaultMaxErrors is the number of line errors a response lists.
	DefaultMaxErrors = 5
)

// HandlerConfig configures the HTTP ingest handler.
type HandlerConfig struct {
	// Options are the line settings; Source defaults to "http" and Reporter
	// is the constructor's.
	Options
	// MaxBodyBytes bounds a body, decompressed (DefaultMaxBodyBytes when 0).
	MaxBodyBytes int64
	// RequestsPerSecond and Burst size the token bucket every request takes
	// a token from (the defaults when 0; RequestsPerSecond < 0 means no limit).
	RequestsPerSecond float64
	Burst             int
	// MaxErrors is the number of line errors listed in a response
	// (DefaultMaxErrors when 0).
	MaxErrors int
}

// Handler serves POST /api/v1/events: a body of JSON lines (NDJSON), the
// same lines as the file reader's, for applications that report their
// accesses as a sidecar.
//
// A body is all or nothing with respect to size: over MaxBodyBytes the
// request is refused with 413 and nothing is counted. Within the limit,
// each line stands alone: good lines are handed to the Sink, bad ones are
// reported and listed, and so are the events the Sink refuses (the
// daemon's checks behind the reader: traffic.Outcome), in line order. The
// response is JSON
// {"accepted":N,"counted":C,"untracked":U,"rejected":M,"errors":["line K: reason: detail",...]}
// (N = C + U: U events of tables the window does not track) with
// status 200 when at least one line was accepted (check "rejected" and
// "untracked"), 400
// when no line was usable, 413 for a body over the limit, 415 for a content
// type that is not JSON lines (no Content-Type at all is taken for JSON
// lines) or an encoding other than gzip or zstd (in any case), 405
// for another method, 429 over the rate limit (with Retry-After) and 503
// when the pipeline is stopping.
type Handler struct {
	sink    traffic.Sink
	cfg     HandlerConfig
	log     *zap.Logger
	limiter *rate.Limiter
}

// NewHandler returns the ingest handler. Events go to sink, rejected lines
// to rep; log is named by the handler.
func NewHandler(sink traffic.Sink, rep traffic.Reporter, cfg HandlerConfig, log *zap.Logger) *Handler {
	if cfg.Source == "" {
		cfg.Source = HTTPSourceName
	}
	cfg.Reporter = rep
	cfg.Options = cfg.Options.withDefaults()
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.RequestsPerSecond == 0 {
		cfg.RequestsPerSecond = DefaultRequestsPerSecond
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.MaxErrors <= 0 {
		cfg.MaxErrors = DefaultMaxErrors
	}
	lim := rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), cfg.Burst)
	if cfg.RequestsPerSecond < 0 {
		lim = rate.NewLimiter(rate.Inf, 0)
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Handler{sink: sink, cfg: cfg, log: log.Named("http_ingest"), limiter: lim}
}

// Response is the body of every answer of the handler.
type Response struct {
	// Accepted counts the events taken: Counted + Untracked.
	Accepted int64 `json:"accepted"`
	// Counted counts the events counted in the window.
	Counted int64 `json:"counted"`
	// Untracked counts the events of tables the window does not track
	// (past max_tables): taken, counted only in
	// hotkeyd_untracked_events_total.
	Untracked int64 `json:"untracked"`
	// Rejected counts the lines refused, by the reader or by the checks
	// behind it.
	Rejected int64    `json:"rejected"`
	Errors   []string `json:"errors,omitempty"`
	// Error says why the whole request was refused.
	Error string `json:"error,omitempty"`
}

// acceptedTypes are the content types of a JSON-lines body.
var acceptedTypes = map[string]bool{
	"":                        true,
	"application/x-ndjson":    true,
	"application/ndjson":      true,
	"application/jsonl":       true,
	"application/x-jsonlines": true,
	"application/json":        true,
	"text/plain":              true,
}

// ServeHTTP takes one request's body of JSON lines: it admits the
// request (method, content type, rate), reads its body whole, counts its
// lines a batch at a time and answers what became of them.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.admit(w, r) {
		return
	}
	data, ok := h.readRequest(w, r)
	if !ok {
		return
	}
	resp, putErr, err := h.count(r.Context(), data)
	switch {
	case putErr != nil:
		h.log.Warn("events not delivered", zap.Error(putErr))
		h.refuse(w, http.StatusServiceUnavailable, "not accepting events now: "+putErr.Error())
		return
	case err != nil:
		h.refuse(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	status := http.StatusOK
	switch {
	case resp.Accepted == 0 && resp.Rejected == 0:
		status, resp.Error = http.StatusBadRequest, "no events in the body"
	case resp.Accepted == 0:
		status, resp.Error = http.StatusBadRequest, "no line could be used"
	}
	h.write(w, status, resp)
}

// admit refuses, with its answer, a request that is not a POST of JSON
// lines or that comes over the request rate.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.refuse(w, http.StatusMethodNotAllowed, "use POST with a body of JSON lines")
		return false
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !acceptedTypes[mt] {
			// curl -d and --data-binary send a form type unless told otherwise.
			h.refuse(w, http.StatusUnsupportedMediaType, fmt.Sprintf("content type %q is not JSON lines: send Content-Type: application/x-ndjson, or none", ct))
			return false
		}
	}
	if now := time.Now(); !h.limiter.AllowN(now, 1) {
		r := h.limiter.ReserveN(now, 1)
		wait := r.DelayFrom(now)
		r.CancelAt(now)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		h.refuse(w, http.StatusTooManyRequests, "request rate over the limit, retry later")
		return false
	}
	return true
}

// readRequest reads the request's body whole, decompressed, at most
// MaxBodyBytes: a body over the limit counts nothing. It answers a body
// it cannot read, and then returns false.
func (h *Handler) readRequest(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > h.cfg.MaxBodyBytes {
		h.tooLarge(w)
		return nil, false
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes)
	enc := r.Header.Get("Content-Encoding")
	content, ok, err := input.DecompressAs(body, enc)
	switch {
	case !ok:
		h.refuse(w, http.StatusUnsupportedMediaType, fmt.Sprintf("content encoding %q is not supported: send gzip, zstd or nothing", enc))
		return nil, false
	case err != nil:
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.tooLarge(w)
			return nil, false
		}
		h.refuse(w, http.StatusBadRequest, fmt.Sprintf("body is not %s: %v", enc, err))
		return nil, false
	}
	defer content.Close()
	body = content
	length := r.ContentLength
	if content.Codec() != "" {
		body = &limitedReader{r: content, n: h.cfg.MaxBodyBytes}
		length = -1 // the decompressed length is not known
	}
	data, err := readBody(body, length)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || errors.Is(err, errBodyTooLarge) {
			h.tooLarge(w)
			return nil, false
		}
		h.refuse(w, http.StatusBadRequest, "read body: "+err.Error())
		return nil, false
	}
	return data, true
}

// count parses a body's lines and puts them to the sink a batch at a
// time, so that a request holds its body and one batch, not every event
// of the body at once. It returns the answer's counts and errors, and the
// sink's error (putErr) or the reading's.
func (h *Handler) count(ctx context.Context, data []byte) (resp Response, putErr, err error) {
	// The lines refused, by the reader and by the Sinks behind it (the
	// daemon's checks), each list in line order: the answer lists the
	// first MaxErrors of both.
	outcome := traffic.Outcome{KeepRefusals: h.cfg.MaxErrors}
	ctx = traffic.WithOutcome(ctx, &outcome)
	st := newStream(h.cfg.Options, "")
	st.trackLines = true
	var refusals []lineRefusal
	put := traffic.SinkFunc(func(ctx context.Context, b []traffic.Event) error {
		lines := st.takeLines()
		putErr = h.sink.Put(ctx, b)
		for _, rf := range outcome.TakeRefusals() {
			if len(refusals) < h.cfg.MaxErrors && rf.Index < len(lines) {
				refusals = append(refusals, lineRefusal{line: lines[rf.Index], why: rf.Why})
			}
		}
		return putErr
	})
	st.opts.Reporter = traffic.NopReporter{} // reported below; ignored members by the stream
	var lineErrs []*LineError
	st.onError = func(le *LineError) {
		h.cfg.Reporter.Reject(h.cfg.Source, le.Err.Reason, le)
		if len(lineErrs) < h.cfg.MaxErrors {
			lineErrs = append(lineErrs, le)
		}
	}
	err = st.readFrom(ctx, bytes.NewReader(data), put)
	if err == nil {
		st.finish()
		err = st.flush(ctx, put)
	}
	resp.Errors = mergeErrors(lineErrs, refusals, h.cfg.MaxErrors)
	resp.Accepted, resp.Rejected = int64(st.counts.Events), int64(st.counts.Rejected)
	refused := outcome.Refused.Load()
	resp.Accepted -= refused
	resp.Rejected += refused
	resp.Untracked = outcome.Untracked.Load()
	resp.Counted = resp.Accepted - resp.Untracked
	return resp, putErr, err
}

// lineRefusal is a line whose event a Sink behind the reader refused.
type lineRefusal struct {
	line int64
	why  *traffic.Invalid
}

// mergeErrors lists the reader's line errors and the Sinks' refusals, each
// in line order, as one list in line order of at most limit entries.
func mergeErrors(les []*LineError, rfs []lineRefusal, limit int) []string {
	var out []string
	for len(out) < limit && (len(les) > 0 || len(rfs) > 0) {
		if len(rfs) == 0 || (len(les) > 0 && les[0].Line <= rfs[0].line) {
			out = append(out, les[0].Error())
			les = les[1:]
			continue
		}
		why := "refused"
		if rfs[0].why != nil {
			why = rfs[0].why.Error()
		}
		out = append(out, "line "+strconv.FormatInt(rfs[0].line, 10)+": "+why)
		rfs = rfs[1:]
	}
	return out
}

var errBodyTooLarge = errors.New("body too large")

// readBody reads a body whole, limited by its reader: into one buffer the
// size of its length when that is known (net/http ends such a body there;
// what is read may be shorter, a byte order mark left out), else as
// io.ReadAll does.
func readBody(r io.Reader, length int64) ([]byte, error) {
	if length <= 0 {
		return io.ReadAll(r)
	}
	// Room for the read that finds the end without growing the buffer.
	buf := bytes.NewBuffer(make([]byte, 0, length+bytes.MinRead))
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// limitedReader fails once more than n bytes were read (a gzip bomb).
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return n, errBodyTooLarge
	}
	return n, err
}

func (h *Handler) tooLarge(w http.ResponseWriter) {
	h.refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes: send fewer lines per request", h.cfg.MaxBodyBytes))
}

func (h *Handler) refuse(w http.ResponseWriter, status int, msg string) {
	h.write(w, status, Response{Error: msg})
}

func (h *Handler) write(w http.ResponseWriter, status int, resp Response) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(resp); err != nil {
		h.log.Debug("write response", zap.Error(err))
	}
}
