package export

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// ReporterConfig bounds the Reporter's logging.
type ReporterConfig struct {
	// Burst is the number of lines logged per source, reason and kind
	// (rejected input or source error) in each Interval; zero means 5.
	Burst int
	// Interval is the period the Burst is counted over; zero means a minute.
	Interval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Masker masks the input the readers quote in their errors (the
	// Reporter is their traffic.Masker); nil shows it as it is.
	Masker *KeyMasker
}

// Reporter is the traffic.Reporter of the daemon: it counts every rejected
// input (hotkeyd_input_rejected_total{source,reason}) and every source error
// (hotkeyd_source_errors_total{source,reason}) and logs them at a bounded
// rate: the first Burst per source, reason and kind in each Interval, then,
// with the next one after the Interval, one line saying how many were
// suppressed. It is safe for concurrent use. It is the readers'
// traffic.Masker too (traffic.MaskerOf), so that what they quote of their
// input in the errors it logs is masked as keys are.
type Reporter struct {
	log      *zap.Logger
	masker   *KeyMasker
	now      func() time.Time
	burst    int
	interval time.Duration

	rejected      *prometheus.CounterVec
	errors        *prometheus.CounterVec
	unknown       *prometheus.CounterVec
	rejectedTotal atomic.Uint64

	mu     sync.Mutex
	limits map[limitKey]*limitState
	// named holds, per source, the member names outside the format the
	// log has named (at most maxNamedFields).
	named map[string]map[string]bool
}

// maxNamedFields is how many names of ignored members the log names per
// source; the rest are counted only, and one line says so.
const maxNamedFields = 32

var (
	_ traffic.Reporter   = (*Reporter)(nil)
	_ traffic.Masker     = (*Reporter)(nil)
	_ traffic.FieldNoter = (*Reporter)(nil)
)

type limitKey struct {
	reject         bool
	source, reason string
}

type limitState struct {
	start      time.Time
	logged     int
	suppressed int
}

// NewReporter returns a Reporter logging to log and registering its metrics
// with reg.
func NewReporter(log *zap.Logger, reg prometheus.Registerer, cfg ReporterConfig) (*Reporter, error) {
	if cfg.Burst <= 0 {
		cfg.Burst = 5
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Reporter{
		log:      log,
		masker:   cfg.Masker,
		now:      cfg.Now,
		burst:    cfg.Burst,
		interval: cfg.Interval,
		limits:   map[limitKey]*limitState{},
		named:    map[string]map[string]bool{},
	}
	r.rejected, r.unknown, r.errors = newReporterMetrics()
	for _, c := range []prometheus.Collector{r.rejected, r.errors, r.unknown} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// rejectReasons are the ingest package's reasons, pre-initialised per source.
var rejectReasons = []string{
	traffic.ReasonBadJSON, traffic.ReasonTooLong, traffic.ReasonBadUTF8,
	traffic.ReasonMissingTable, traffic.ReasonBadTable, traffic.ReasonMissingPK, traffic.ReasonBadType,
	traffic.ReasonBadUnits, traffic.ReasonBadTime, traffic.ReasonBadOp,
	traffic.ReasonBadRecord, traffic.ReasonBadFile, traffic.ReasonMisspelledField,
}

// InitSource creates the source's hotkeyd_input_rejected_total series for
// every shared reason at zero, so that rate() and increase() see the first
// rejection.
func (r *Reporter) InitSource(source string) {
	for _, reason := range rejectReasons {
		r.rejected.WithLabelValues(source, reason)
	}
	r.unknown.WithLabelValues(source)
}

// Ignored implements traffic.FieldNoter: it counts the members and names
// each name in the log the first time it is seen, for the first
// maxNamedFields names of a source.
func (r *Reporter) Ignored(source, field string, lines uint64) {
	r.unknown.WithLabelValues(source).Add(float64(lines))
	r.mu.Lock()
	seen := r.named[source]
	if seen == nil {
		seen = map[string]bool{}
		r.named[source] = seen
	}
	n, fresh := len(seen), !seen[field]
	if fresh && n <= maxNamedFields {
		seen[field] = true // the one past the last named stands for the rest
	}
	r.mu.Unlock()
	switch {
	case fresh && n < maxNamedFields:
		r.log.Info("input field ignored: no field of the format", zap.String("source", source), zap.String("field", r.masker.Mask(field)))
	case fresh && n == maxNamedFields:
		r.log.Info("input fields ignored: more names, counted only", zap.String("source", source), zap.Int("named", maxNamedFields))
	}
}

// Mask implements traffic.Masker with the configured KeyMasker.
func (r *Reporter) Mask(s string) string { return r.masker.Mask(s) }

// Rejected returns the number of rejected inputs so far, for the report's
// "rejected" field.
func (r *Reporter) Rejected() uint64 { return r.rejectedTotal.Load() }

// Reject counts and, within the rate bound, logs one skipped input.
func (r *Reporter) Reject(source, reason string, err error) {
	r.rejected.WithLabelValues(source, reason).Inc()
	r.rejectedTotal.Add(1)
	r.logBounded(limitKey{reject: true, source: source, reason: reason}, err)
}

// Error counts and, within the rate bound, logs one source failure.
func (r *Reporter) Error(source, reason string, err error) {
	r.errors.WithLabelValues(source, reason).Inc()
	r.logBounded(limitKey{source: source, reason: reason}, err)
}

// Flush logs the suppressed counts not yet logged, e.g. at shutdown.
func (r *Reporter) Flush() {
	r.mu.Lock()
	type pending struct {
		k limitKey
		n int
	}
	var out []pending
	for k, st := range r.limits {
		if st.suppressed > 0 {
			out = append(out, pending{k, st.suppressed})
			st.suppressed = 0
		}
	}
	r.mu.Unlock()
	for _, p := range out {
		r.logSuppressed(p.k, p.n)
	}
}

func (r *Reporter) logBounded(k limitKey, err error) {
	now := r.now()
	r.mu.Lock()
	st := r.limits[k]
	if st == nil {
		st = &limitState{start: now}
		r.limits[k] = st
	}
	suppressed := 0
	if now.Sub(st.start) >= r.interval {
		suppressed = st.suppressed
		st.start, st.logged, st.suppressed = now, 0, 0
	}
	log := st.logged < r.burst
	if log {
		st.logged++
	} else {
		st.suppressed++
	}
	r.mu.Unlock()

	if suppressed > 0 {
		r.logSuppressed(k, suppressed)
	}
	if !log {
		return
	}
	if k.reject {
		r.log.Warn("input rejected", zap.String("source", k.source), zap.String("reason", k.reason), zap.Error(err))
	} else {
		r.log.Error("source error", zap.String("source", k.source), zap.String("reason", k.reason), zap.Error(err))
	}
}

func (r *Reporter) logSuppressed(k limitKey, n int) {
	what := "source errors"
	if k.reject {
		what = "rejected inputs"
	}
	r.log.Warn("log lines suppressed", zap.String("what", what), zap.String("source", k.source),
		zap.String("reason", k.reason), zap.Int("suppressed", n), zap.Duration("interval", r.interval))
}
