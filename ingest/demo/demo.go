// Package demo is a synthetic workload: a Source that runs forever at a
// steady rate over several tables, each planted with one of the key-design
// anti-patterns hotkeyd finds, plus tables that must stay quiet. It drives
// hotkeyd demo, and tests that want realistic traffic.
package demo

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Defaults of Config.
const (
	// DefaultRate is the events per second of the workload. The planted
	// findings (Planted) are sized for it.
	DefaultRate = 2000
	// DefaultSeed makes two runs produce the same keys.
	DefaultSeed = 1
	// DefaultTick is how often a batch of events is produced.
	DefaultTick = 100 * time.Millisecond
	// SourceName is the source label of the workload's Events.
	SourceName = "demo"
)

// maxCatchUp bounds the events produced for one tick after a stall (a slow
// sink, a suspended process): at most this many seconds of traffic.
const maxCatchUp = 2

// Config configures a Workload.
type Config struct {
	// Rate is the accesses per second (DefaultRate when 0); the writes
	// some of them cause in their table's indexes come on top.
	Rate float64
	// Seed seeds the random choices (DefaultSeed when 0).
	Seed uint64
	// Now is the clock that paces the workload and stamps its Events
	// (time.Now when nil). Under testing/synctest, time.Now is virtual.
	Now func() time.Time
	// Tick is how often a batch is produced (DefaultTick when 0).
	Tick time.Duration
}

// Workload generates the demo traffic. It implements traffic.Source.
// Next and Run are not safe for concurrent use.
type Workload struct {
	cfg   Config
	rng   *rand.Rand
	mix   []kind
	total int
	seq   uint64
	buf   []byte
	// indexWrites are the index writes of the last event (IndexWrites).
	indexWrites []traffic.Event
	// The accesses of each kind with a planted key (planted).
	nOrders, nProducts, nTelemetry, nSettings uint64
	// turn is each kind's credit in the round robin of kinds (Next).
	turn []int
}

// kind is one kind of access and its weight in the mix (per 1000 events).
type kind struct {
	weight int
	fill   func(w *Workload, ev *traffic.Event)
}

// New returns a Workload.
func New(cfg Config) *Workload {
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Seed == 0 {
		cfg.Seed = DefaultSeed
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tick <= 0 {
		cfg.Tick = DefaultTick
	}
	w := &Workload{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), mix: mix()}
	for _, k := range w.mix {
		w.total += k.weight
	}
	w.turn = make([]int, len(w.mix))
	return w
}

// Name returns "demo".
func (w *Workload) Name() string { return SourceName }

// Run produces Rate events per second, in one batch per Tick, until ctx is
// done. It returns nil then, or the sink's error if the sink fails
// otherwise.
func (w *Workload) Run(ctx context.Context, sink traffic.Sink) error {
	t := time.NewTicker(w.cfg.Tick)
	defer t.Stop()
	// The traffic starts at the start of the current second, the first
	// batch making up for the part gone: every second of the workload
	// then carries its whole rate, the first one too.
	last := w.cfg.Now().Truncate(time.Second)
	carry := 0.0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now := w.cfg.Now()
		elapsed := now.Sub(last).Seconds()
		if elapsed <= 0 {
			continue
		}
		due := w.cfg.Rate*min(elapsed, maxCatchUp) + carry
		n := int(due)
		carry = due - float64(n)
		if n == 0 {
			last = now
			continue
		}
		batch := make([]traffic.Event, 0, n+n/8)
		step := now.Sub(last) / time.Duration(n)
		for i := range n {
			var ev traffic.Event
			w.Next(&ev, last.Add(step*time.Duration(i+1)))
			batch = w.IndexWrites(append(batch, ev))
		}
		last = now
		if err := sink.Put(ctx, batch); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// Next fills ev with the next event of the workload, stamped at. The
// writes it caused in its table's indexes, if any, are then IndexWrites'.
func (w *Workload) Next(ev *traffic.Event, at time.Time) {
	*ev = traffic.Event{Time: at, Source: SourceName, Units: 1}
	w.indexWrites = w.indexWrites[:0]
	w.seq++
	// The kinds take turns by smooth weighted round robin: each kind's
	// share of any second's accesses is its weight, within one access,
	// so the planted rates hold second by second.
	best := 0
	for i, k := range w.mix {
		w.turn[i] += k.weight
		if w.turn[i] > w.turn[best] {
			best = i
		}
	}
	w.turn[best] -= w.total
	w.mix[best].fill(w, ev)
}

// key returns prefix + n as a new string.
func (w *Workload) key(prefix string, n uint64) string {
	w.buf = strconv.AppendUint(append(w.buf[:0], prefix...), n, 10)
	return string(w.buf)
}

// chance reports true with probability p.
func (w *Workload) chance(p float64) bool { return w.rng.Float64() < p }

// planted reports whether the next access of a kind whose accesses *n
// counts goes to its planted key, which takes share p of them spread
// evenly: exactly p of any run of accesses, within one. A planted key's
// rate is then the one its documentation gives from the first second,
// whatever the seed; the other choices stay random.
func planted(n *uint64, p float64) bool {
	i := *n
	*n++
	return uint64(float64(i+1)*p) > uint64(float64(i)*p)
}

// Help tells a newcomer to hotkeyd demo where to look; %[1]s is the
// daemon's base URL.
const Help = `hotkeyd demo: synthetic traffic on several tables, with planted hot keys and key-design mistakes.
  metrics:   %[1]s/metrics   (try: curl -s %[1]s/metrics | grep hotkeyd_diagnosis)
  the page:  %[1]s/   (tables, hot keys, diagnoses and fixes, live)
  hot keys:  %[1]s/api/v1/hotkeys
  and watch the log below for 'hot key' and other diagnosis lines; they appear within seconds. Ctrl-C stops.
`
