package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// DefaultRetentionSize is --history.retention.size's default.
const DefaultRetentionSize = 512 << 20

// Options configure a Store.
type Options struct {
	// Dir is the directory of the database (--history.path).
	Dir string
	// RetentionSize bounds the database's size in bytes
	// (--history.retention.size); 0 is DefaultRetentionSize.
	RetentionSize int64
	// Resolutions are the layers kept, finest first; nil is
	// DefaultResolutions.
	Resolutions []Resolution
	// ReadCeiling and WriteCeiling are a partition's ceilings (the
	// detector's ReadLimit and WriteLimit), which the API shows beside the
	// cells.
	ReadCeiling, WriteCeiling float64
	// Grace is how long an incident a previous run left open waits to be
	// raised again before it is closed at its last sighting (0: a minute).
	Grace time.Duration
	// Log receives the history's lines; nil logs nothing.
	Log *zap.Logger
	// Metrics are the series the store sets; nil builds them, registered
	// on Registerer (nil: none).
	Metrics    *Metrics
	Registerer prometheus.Registerer
	// Now is the wall clock; nil is time.Now.
	Now func() time.Time
}

// Store is the history: the open cells and incidents in memory, the
// database on disk. Record is called by the detector's tick; Run writes
// what Record hands it; Cells and Incidents are safe to call from any
// goroutine meanwhile.
type Store struct {
	opts   Options
	log    *zap.Logger
	m      *Metrics
	path   string
	opened time.Time

	// retention is --history.retention.size, which SetRetentionSize
	// changes (a reload).
	retention atomic.Int64

	db *sql.DB // nil when the daemon runs without history
	// rdb reads: the API and the first sight of a table read through
	// connections of their own, so that in WAL mode they never wait for
	// the writer's transactions (a retention pass after a day down
	// takes seconds); db when they could not be opened.
	rdb      *sql.DB
	healthMu sync.Mutex
	health   error // why nothing is recorded; nil when it is

	queue chan batch

	mu      sync.Mutex // guards what Record keeps
	tables  map[entry]*tableCells
	open    map[report.IncidentKey]*openIncident
	orphans map[report.IncidentKey]*openIncident
	// unwritten are the incidents handed to the writer and not written
	// yet, by id, with the sequence of their newest form: what Incidents
	// shows over the database's rows meanwhile.
	unwritten map[string]unwrittenIncident
	seq       uint64
	wallMin   int64 // the wall clock's minute of the last flush
	closed    bool
}

// entry names a table or index.
type entry struct{ table, index string }

// batch is one transaction's writes.
type batch struct {
	rows      []row
	incidents []Incident
	meta      []incMeta // of incidents, one each
}

// incMeta is what is stored of an incident beside what the API shows.
type incMeta struct {
	key      report.IncidentKey
	lastSeen time.Time
	seq      uint64
}

type unwrittenIncident struct {
	inc Incident
	seq uint64
}

// queueLen bounds the batches waiting for the writer: at one a minute and
// one per incident change, minutes of a stuck disk.
const queueLen = 256

// Open opens the history database under opts.Dir, creating it when
// absent. It does not fail for the disk: a file that is not a history
// database, or is corrupt, is moved aside (logged) and a fresh one
// started; a directory that cannot be written leaves a Store that records
// nothing and says why (Health, the log, hotkeyd_history_up). It fails
// only for its metrics.
func Open(ctx context.Context, opts Options) (*Store, error) {
	opts = withDefaults(opts)
	m := opts.Metrics
	if m == nil {
		var err error
		if m, err = NewMetrics(opts.Registerer); err != nil {
			return nil, fmt.Errorf("register history metrics: %w", err)
		}
	}
	s := &Store{opts: opts, log: opts.Log, m: m, path: filepath.Join(opts.Dir, FileName), opened: opts.Now(),
		queue: make(chan batch, queueLen), tables: map[entry]*tableCells{},
		open: map[report.IncidentKey]*openIncident{}, orphans: map[report.IncidentKey]*openIncident{}, unwritten: map[string]unwrittenIncident{}}
	s.retention.Store(opts.RetentionSize)
	var err error
	s.db, err = s.openOrReplace(ctx)
	if err != nil {
		s.setHealth(err)
		s.log.Error("running without history", zap.String("path", s.path), zap.Error(err))
		return s, nil
	}
	s.rdb = s.openReaders(ctx)
	if err := s.loadOrphans(ctx); err != nil {
		s.log.Warn("incidents left open by the last run not read", zap.Error(err))
	}
	s.setHealth(nil)
	s.measure(ctx)
	return s, nil
}

func withDefaults(o Options) Options {
	if o.RetentionSize <= 0 {
		o.RetentionSize = DefaultRetentionSize
	}
	if o.Resolutions == nil {
		o.Resolutions = DefaultResolutions
	}
	if o.Grace <= 0 {
		o.Grace = time.Minute
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ReadCeiling == 0 {
		o.ReadCeiling = 3000
	}
	if o.WriteCeiling == 0 {
		o.WriteCeiling = 1000
	}
	return o
}

// openOrReplace opens the database, moving a foreign or corrupt file
// aside once.
func (s *Store) openOrReplace(ctx context.Context) (*sql.DB, error) {
	db, err := openDB(ctx, s.path)
	if !errors.Is(err, errForeign) {
		return db, err
	}
	to, merr := moveAside(s.path, "corrupt", s.opts.Now())
	if merr != nil {
		return nil, errors.Join(err, merr)
	}
	s.log.Warn("history database unreadable: moved aside, starting a fresh one",
		zap.String("path", s.path), zap.String("moved_to", to), zap.Error(err))
	return openDB(ctx, s.path)
}

// readConns is how many reads the API and the tick make at once.
const readConns = 4

// openReaders opens the read-only connections, or returns the writer's
// (said in the log) when they cannot be opened.
func (s *Store) openReaders(ctx context.Context) *sql.DB {
	rdb, err := sql.Open("sqlite", dsn(s.path, true))
	if err == nil {
		rdb.SetMaxOpenConns(readConns)
		err = checkReadable(ctx, rdb)
		if err != nil {
			rdb.Close()
		}
	}
	if err != nil {
		s.log.Warn("history read through the writer's connection: reads wait for its writes", zap.String("path", s.path), zap.Error(err))
		return s.db
	}
	return rdb
}

// Health returns nil while history is recorded, or why it is not.
func (s *Store) Health() error {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	return s.health
}

// setHealth records whether history is recorded, logging a change.
func (s *Store) setHealth(err error) {
	s.healthMu.Lock()
	was := s.health
	s.health = err
	s.healthMu.Unlock()
	if err == nil {
		s.m.up.Set(1)
		if was != nil {
			s.log.Info("history recorded again", zap.String("path", s.path))
		}
		return
	}
	s.m.up.Set(0)
}

// SetRetentionSize bounds the database at size bytes (0 or less:
// DefaultRetentionSize) from the writer's next retention pass, within
// five minutes: a reload's history.retention.size.
func (s *Store) SetRetentionSize(size int64) {
	if size <= 0 {
		size = DefaultRetentionSize
	}
	s.retention.Store(size)
}

// RetentionSize returns the bound the writer holds the database to.
func (s *Store) RetentionSize() int64 { return s.retention.Load() }

// Path returns the database's file.
func (s *Store) Path() string { return s.path }
