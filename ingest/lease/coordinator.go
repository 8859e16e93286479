package lease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/internal/pause"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Reason is the reason label of hotkeyd_source_errors_total for errors of
// the lease table: unreachable, throttled, deleted, or an item that cannot
// be read as a lease.
const Reason = "lease"

// ShardLister lists the shards the worker reads, with their parents,
// qualified by their stream. The coordinator calls it once per round; an
// implementation may answer from its own latest listing rather than call
// AWS each time. Streams that are not listed are left to the workers that
// read them: their leases are never taken here.
type ShardLister interface {
	ListShards(ctx context.Context) ([]Shard, error)
}

// Coordinator takes, renews and releases the leases of one worker in one
// lease table. Run drives it; readers ask Lease for the shards they may
// read and are told by Changed when that changes.
type Coordinator struct {
	cfg    Config
	log    *zap.Logger
	rep    traffic.Reporter
	m      *metrics
	db     *table
	lister ShardLister
	now    func() time.Time // a clock with a monotonic reading
	kick   chan struct{}

	every      time.Duration // a round: FailoverTime/3
	renewAfter time.Duration // a lease not written for this long is renewed
	valid      time.Duration // a lease is this worker's this long after a write

	mu        sync.Mutex
	held      map[string]*Lease
	finished  map[string]bool // leases at SHARD_END
	finishing map[string]bool // finished by this worker since the last scan
	changed   chan struct{}   // closed when held changes
	state     error           // why the last round failed, nil if it worked
	lastOK    time.Time
	gone      bool // the table was found missing; ensure it next round

	// Touched by the Run goroutine only.
	rnd      *rand.Rand
	seen     map[string]*observed
	blind    bool            // the last scan failed
	streams  map[string]bool // streams listed before
	startAt  map[string]bool // leases to create at cfg.Start
	vanished map[string]vanished
	reported map[string]string // lease key → problems already reported
}

// observed is a lease as the last scan found it.
type observed struct {
	it item
	// changed is when this worker saw its counter move; zero for an
	// unowned lease seen once only (free at once).
	changed time.Time
}

// vanished is a lease item a scan found missing.
type vanished struct {
	last  *observed
	since time.Time
}

// New returns a Coordinator for cfg on db. Its metrics are registered on
// reg (nil registers nothing); errors go to rep.
func New(cfg Config, db DynamoDBAPI, lister ShardLister, log *zap.Logger, rep traffic.Reporter, reg prometheus.Registerer) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if db == nil || lister == nil {
		return nil, errors.New("lease coordinator: a DynamoDB client and a shard lister are required")
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = zap.NewNop()
	}
	if rep == nil {
		rep = traffic.NopReporter{}
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register lease metrics: %w", err)
	}
	m.initTable(cfg.Table)
	every := cfg.FailoverTime / 3
	return &Coordinator{
		cfg: cfg,
		log: log.Named("lease").With(zap.String("lease_table", cfg.Table), zap.String("worker", cfg.WorkerID)),
		rep: rep,
		m:   m,
		// A DynamoDB call normally takes milliseconds; a stuck one must
		// not hold a round past the next.
		db:         &table{api: db, name: cfg.Table, timeout: min(max(every, time.Second), 10*time.Second), requests: m.requests},
		lister:     lister,
		now:        time.Now,
		kick:       make(chan struct{}, 1),
		every:      every,
		renewAfter: cfg.FailoverTime / 6,
		valid:      cfg.FailoverTime - every,
		held:       map[string]*Lease{},
		finished:   map[string]bool{},
		finishing:  map[string]bool{},
		changed:    make(chan struct{}),
		state:      errors.New("lease table not read yet"),
		gone:       true,
		rnd:        rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		seen:       map[string]*observed{},
		streams:    map[string]bool{},
		startAt:    map[string]bool{},
		vanished:   map[string]vanished{},
		reported:   map[string]string{},
	}, nil
}

// WorkerID returns the name this worker writes in leaseOwner.
func (c *Coordinator) WorkerID() string { return c.cfg.WorkerID }

// Table returns the lease table's name.
func (c *Coordinator) Table() string { return c.cfg.Table }

// Run runs a round every FailoverTime/3, and sooner after Refresh, until
// ctx is done. It does not release the leases: readers release theirs as
// they stop, and ReleaseAll the rest.
func (c *Coordinator) Run(ctx context.Context) error {
	c.log.Info("joining lease table", zap.Duration("failover_time", c.cfg.FailoverTime))
	last := time.Time{}
	for {
		if gap := c.every / 10; time.Since(last) < gap {
			// Many refreshes at once (every stream listed at start) make
			// one round, not one each.
			if !pause.For(ctx, gap-time.Since(last)) {
				return nil
			}
		}
		last = time.Now()
		c.round(ctx)
		// ±10% so that workers started together spread their rounds.
		wait := c.every - c.every/10 + time.Duration(c.rnd.Int64N(int64(c.every/5)+1))
		select {
		case <-ctx.Done():
			return nil
		case <-c.kick:
		case <-time.After(wait):
		}
	}
}

// Refresh asks for a round soon: a listing found new shards, or a shard
// was finished and its children may be taken.
func (c *Coordinator) Refresh() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Lease returns the lease of the shard with this key if this worker holds
// it, else nil.
func (c *Coordinator) Lease(key string) *Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[key]
}

// Finished reports whether the shard with this key was read to its end
// (its lease's checkpoint is SHARD_END), as far as this worker knows.
func (c *Coordinator) Finished(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finished[key]
}

// Changed returns a channel closed the next time this worker takes or
// loses a lease.
func (c *Coordinator) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Ready returns nil while this worker takes part: its last round read the
// lease table, and every lease it holds was renewed in time.
func (c *Coordinator) Ready() error {
	now := c.now()
	c.mu.Lock()
	state, lastOK := c.state, c.lastOK
	held := maps.Clone(c.held)
	c.mu.Unlock()
	if state != nil {
		return fmt.Errorf("lease table %q: %w", c.cfg.Table, state)
	}
	if age := now.Sub(lastOK); age > c.cfg.FailoverTime {
		return fmt.Errorf("lease table %q: no round for %s", c.cfg.Table, age.Round(time.Millisecond))
	}
	for _, key := range slices.Sorted(maps.Keys(held)) {
		if age := held[key].age(now); age >= c.valid {
			return fmt.Errorf("lease %q not renewed for %s", key, age.Round(time.Millisecond))
		}
	}
	return nil
}

// used reports whether a round has worked: the lease table exists.
func (c *Coordinator) used() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.lastOK.IsZero()
}

// ReleaseAll releases every lease this worker still holds, without
// changing their checkpoints: what is left once the readers stopped (each
// releases its own with its last position).
func (c *Coordinator) ReleaseAll(ctx context.Context) {
	c.mu.Lock()
	leases := make([]*Lease, 0, len(c.held))
	for _, l := range c.held {
		leases = append(leases, l)
	}
	c.mu.Unlock()
	for _, l := range leases {
		if err := l.Release(ctx, ""); err != nil && !errors.Is(err, ErrLost) && !errors.Is(err, errReleased) {
			c.report(fmt.Errorf("release lease %q: %w", l.key, err))
		}
	}
	if len(leases) > 0 {
		c.log.Info("released leases", zap.Int("leases", len(leases)))
	}
}

// drop forgets a lease that was released or lost.
func (c *Coordinator) drop(l *Lease, lost bool, reason string) {
	c.mu.Lock()
	if c.held[l.key] == l {
		delete(c.held, l.key)
		c.notifyLocked()
	}
	c.m.held.WithLabelValues(c.cfg.Table).Set(float64(len(c.held)))
	c.mu.Unlock()
	if lost {
		c.m.losses.WithLabelValues(c.cfg.Table).Inc()
		c.log.Warn("lost lease; its reader stops", zap.String("lease", l.key), zap.String("reason", reason))
	}
}

func (c *Coordinator) setFinished(key string) {
	c.mu.Lock()
	c.finished[key] = true
	c.finishing[key] = true
	c.mu.Unlock()
	c.Refresh()
}

func (c *Coordinator) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// tableGone notes that the lease table was not found: the next round
// creates it again.
func (c *Coordinator) tableGone() {
	c.mu.Lock()
	c.gone = true
	c.mu.Unlock()
}

// fail records why a round failed and reports it; the first failure after
// a working round is logged (every one is counted). A round cut short
// because this worker is stopping is no failure.
func (c *Coordinator) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	first := c.state == nil
	c.state = err
	c.mu.Unlock()
	if first {
		c.log.Warn("cannot use the lease table; held leases stay valid until they are due for renewal, readers then wait",
			zap.Duration("valid_for", c.valid), zap.Error(err))
	}
	c.report(err)
}

// succeeded records a working round.
func (c *Coordinator) succeeded() {
	c.mu.Lock()
	failed, before := c.state, c.lastOK
	c.state, c.lastOK = nil, c.now()
	c.m.held.WithLabelValues(c.cfg.Table).Set(float64(len(c.held)))
	held := len(c.held)
	c.mu.Unlock()
	if failed != nil && !before.IsZero() {
		c.log.Info("lease table usable again", zap.Int("leases_held", held))
	}
}

// report counts an error, unless it is this worker stopping.
func (c *Coordinator) report(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	c.rep.Error(c.cfg.Source, Reason, err)
}

// reportProblems logs and counts the unusable attributes of a lease item,
// once for each different set of problems.
func (c *Coordinator) reportProblems(key string, problems []string) {
	text := strings.Join(problems, "; ")
	if text == c.reported[key] {
		return
	}
	c.reported[key] = text
	if text == "" {
		return
	}
	c.log.Warn("lease item has attributes of the wrong type or none; reading them as the KCL would and rewriting them at the next take",
		zap.String("lease", key), zap.String("problems", text))
	c.report(fmt.Errorf("lease %q: %s", key, text))
}
