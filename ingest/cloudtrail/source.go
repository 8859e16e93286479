package cloudtrail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail/s3trail"
	"github.com/hotkeyd/hotkeyd/ingest/follow"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Config configures a Source. It is also a sources entry of type cloudtrail
// in the config file: the yaml tags are its keys, DefaultConfig its
// defaults.
type Config struct {
	// Paths are files or glob patterns ("**" matches any number of
	// folders; see follow.Validate), e.g. "/var/log/cloudtrail/**/*.json.gz".
	Paths []string `yaml:"paths"`
	// CheckpointDir is where the list of files already read is kept
	// (StateFile), so that a restart does not count them again. Empty keeps
	// none: every file matched is read at each start.
	CheckpointDir string `yaml:"checkpoint_dir"`
	// Tables maps table names, and "TABLE/INDEX" for secondary indexes, to
	// their key schemas. In the config file they are the top-level tables.
	Tables map[string]traffic.KeySchema `yaml:"-"`
	// PollInterval is how often the paths are listed for new files.
	// Zero means DefaultPollInterval.
	PollInterval time.Duration `yaml:"poll_interval"`
	// MaxAge, when positive, skips files modified longer ago than this when
	// they are first seen: they are recorded as read without being read.
	// Their events would be older than the live window and only add to the
	// totals and the late count, so replaying months of history on a first
	// start costs time for nothing.
	MaxAge time.Duration `yaml:"max_age"`
	// S3, instead of Paths, reads the files straight from the bucket
	// CloudTrail delivers to (package s3trail); CheckpointDir then keeps
	// the last key read per region folder.
	S3 *s3trail.Config `yaml:"s3"`
}

// DefaultConfig returns the settings of a cloudtrail source the file
// leaves out.
func DefaultConfig() Config { return Config{PollInterval: DefaultPollInterval} }

// Validate reports every setting that cannot work, one error each
// (errors.Join), naming its key.
func (c *Config) Validate() error {
	var errs []error
	if c.S3 != nil {
		if len(c.Paths) > 0 {
			errs = append(errs, errors.New("paths: not used with s3 (one cloudtrail source reads a folder or a bucket)"))
		}
		for _, err := range unjoin(c.S3.Validate()) {
			errs = append(errs, fmt.Errorf("s3.%w", err))
		}
		if c.PollInterval <= 0 {
			errs = append(errs, fmt.Errorf("poll_interval: must be positive, got %s", c.PollInterval))
		}
	} else {
		errs = append(errs, follow.ValidateSettings(c.Paths, false, c.PollInterval))
	}
	if c.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("max_age: must not be negative, got %s", c.MaxAge))
	}
	return errors.Join(errs...)
}

// unjoin returns the errors errors.Join joined into err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// DefaultPollInterval is the PollInterval used when none is set. CloudTrail
// delivers a file about every five minutes per region, so a few seconds of
// polling delay are nothing.
const DefaultPollInterval = 5 * time.Second

// NewSource builds the reader of a sources entry of type cloudtrail, with
// the config file's key schemas, and registers its own metrics (files
// read, failed calls...) labelled by its paths, so that several cloudtrail
// sources can coexist.
func (c *Config) NewSource(env ingest.Env) (traffic.Source, error) {
	cfg := *c
	cfg.Tables = env.Tables
	var src interface {
		traffic.Source
		prometheus.Collector
	}
	var err error
	paths := strings.Join(cfg.Paths, ",")
	if cfg.S3 != nil {
		src, err = NewS3(cfg, env.Log, env.Reporter)
		paths = cfg.S3.String()
	} else {
		src, err = New(cfg, env.Log, env.Reporter)
	}
	if err != nil {
		return nil, err
	}
	src.(interface{ setProgress(*traffic.Progress) }).setProgress(env.Progress)
	if env.Registerer != nil {
		reg := prometheus.WrapRegistererWith(prometheus.Labels{"paths": paths}, env.Registerer)
		if err := reg.Register(src); err != nil {
			return nil, fmt.Errorf("register cloudtrail metrics: %w", err)
		}
	}
	return src, nil
}

// Source follows a CloudTrail delivery folder: it reads every file the
// paths match (package follow), then new files as they appear, and
// remembers the files read in CheckpointDir. It implements traffic.Source
// and traffic.Readier.
type Source struct {
	reading
	cfg    Config
	log    *zap.Logger
	rep    traffic.Reporter
	now    func() time.Time
	follow *follow.Follower

	mu    sync.Mutex
	saved error // the last error saving the state, until a save succeeds

	// Owned by Run.
	sink     traffic.Sink
	done     map[string]fileState
	changed  bool
	unsaved  int // files read since the last save
	skipped  int // files older than MaxAge, in this poll
	lastSave time.Time
}

// SaveEveryFiles and SaveEvery bound what a crash (SIGKILL, power loss)
// makes the reader read again: the state is saved once this many files
// were read since the last save, or this long after it, whichever comes
// first, and on every stop. A save rewrites the whole list, so saving
// after every file would cost quadratic time on a first start over
// thousands of files.
const (
	SaveEveryFiles = 64
	SaveEvery      = time.Second
)

// New returns a Source reading cfg.Paths. It checks the patterns and reads
// the state file, and starts nothing: Run does the work.
func New(cfg Config, log *zap.Logger, rep traffic.Reporter) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cloudtrail: %w", err)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if log == nil {
		log = zap.NewNop()
	}
	if rep == nil {
		rep = traffic.NopReporter{}
	}
	log = log.Named("cloudtrail")
	done, err := loadState(cfg.CheckpointDir)
	if err != nil {
		return nil, fmt.Errorf("cloudtrail: %w", err)
	}
	s := &Source{
		reading: newReading(cfg.Tables, log, rep),
		cfg:     cfg,
		log:     log,
		rep:     rep,
		now:     time.Now,
		done:    done,
	}
	// CloudTrail never appends to a file it delivered: every file is read
	// whole, once it has settled.
	s.follow, err = follow.New(follow.Config{
		Paths:    cfg.Paths,
		Poll:     cfg.PollInterval,
		Whole:    true,
		Source:   SourceName,
		Reporter: rep,
		Log:      log,
		Now:      func() time.Time { return s.now() },
	}, (*deliveries)(s))
	if err != nil {
		return nil, fmt.Errorf("cloudtrail: %w", err)
	}
	return s, nil
}

// Name returns "cloudtrail".
func (s *Source) Name() string { return SourceName }

// Ready returns nil while the paths can be listed, the files matched read
// and the state saved, or what is wrong.
func (s *Source) Ready() error {
	s.mu.Lock()
	saved := s.saved
	s.mu.Unlock()
	return errors.Join(s.follow.Ready(), saved)
}

// Run reads the matched files, oldest first, then polls for new ones until
// ctx is done. It returns nil when ctx is done and an error only when sink
// fails otherwise. A file being read when ctx ends is read to its end, and
// the state is saved on the way out, so that a restart reads no file
// twice.
func (s *Source) Run(ctx context.Context, sink traffic.Sink) error {
	s.log.Info("following CloudTrail files", zap.Strings("paths", s.cfg.Paths),
		zap.String("checkpoint_dir", s.cfg.CheckpointDir), zap.Int("files_read_before", len(s.done)))
	s.sink = sink
	if s.cfg.CheckpointDir != "" {
		// Say at once when the state cannot be saved, not at the first
		// file, which may be hours away.
		s.changed = true
		s.save()
	}
	err := s.follow.Run(ctx)
	if s.changed {
		s.save()
	}
	st := s.Stats()
	s.cmu.Lock()
	files := s.files
	s.cmu.Unlock()
	s.log.Info("stopped reading CloudTrail files", zap.Uint64("files_read", files), zap.Uint64("events", st.Events),
		zap.Uint64("throttled", st.Throttled), zap.Uint64("rejected", st.Rejected))
	return err
}

// deliveries is the Source as the follow.Handler of its files.
type deliveries Source

// Open implements follow.Handler: a file is read unless the state lists
// it as read, or it is older than MaxAge when first seen (then it is
// recorded as read without being read).
func (h *deliveries) Open(f follow.File) follow.Consumer {
	s := (*Source)(h)
	if _, done := s.done[f.Path]; done {
		return nil
	}
	if s.cfg.MaxAge > 0 && s.now().Sub(f.ModTime) > s.cfg.MaxAge {
		s.markDone(f)
		s.skipped++
		return nil
	}
	return &delivery{s: s, f: f}
}

// Polled implements follow.Handler: the files that are gone are
// forgotten, so that the state does not grow forever, and the state is
// saved if it changed or could not be saved last time.
func (h *deliveries) Polled(files []follow.File) {
	s := (*Source)(h)
	s.lane.Idle() // every file found was read
	if s.skipped > 0 {
		s.log.Info("skipped files older than max_age", zap.Int("files", s.skipped), zap.Duration("max_age", s.cfg.MaxAge))
		s.skipped = 0
	}
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		seen[f.Path] = true
	}
	for path := range s.done {
		if !seen[path] {
			if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
				delete(s.done, path)
				s.changed = true
			}
		}
	}
	if s.changed {
		s.save()
	}
}

// markDone records a file as read.
func (s *Source) markDone(f follow.File) {
	s.done[f.Path] = fileState{Size: f.Size, ModTime: f.ModTime.UnixNano()}
	s.changed = true
	s.unsaved++
}

// save writes the state file and keeps the outcome for Ready. A state
// that could not be saved stays to save: every poll tries again, and the
// source is not ready until it succeeds.
func (s *Source) save() {
	s.lastSave = time.Now()
	err := saveState(s.cfg.CheckpointDir, s.done)
	s.mu.Lock()
	again := s.saved != nil && err != nil && s.saved.Error() == err.Error()
	s.saved = err
	s.mu.Unlock()
	if err != nil {
		if !again {
			s.rep.Error(SourceName, "checkpoint", err)
		}
		return
	}
	s.changed, s.unsaved = false, 0
}

// delivery decodes one file.
type delivery struct {
	s *Source
	f follow.File
}

// Read decodes the whole file into the sink. The follower hands a
// delivered file over whole even while stopping (follow.Config.Whole), so
// a file is never counted in part.
func (d *delivery) Read(ctx context.Context, r io.Reader) error {
	return d.s.read(ctx, r, d.f.Path, d.s.sink)
}

// Reset is not called: a delivered file is read in one piece.
func (d *delivery) Reset() {}

// Close records the file as read, and saves the state every
// SaveEveryFiles files or SaveEvery, whichever comes first.
func (d *delivery) Close(context.Context) error {
	s := d.s
	s.markDone(d.f)
	if s.unsaved >= SaveEveryFiles || time.Since(s.lastSave) >= SaveEvery {
		s.save()
	}
	return nil
}

// reading decodes whole CloudTrail files and counts what they held, for
// the readers of a delivery folder (Source) and of a bucket (s3Source).
type reading struct {
	decoder  *Decoder
	reporter traffic.Reporter
	logger   *zap.Logger
	// lane is the reader's progress in event time: busy while it reads
	// the files a poll found, caught up after the poll (nil: none kept).
	lane *traffic.Lane

	cmu   sync.Mutex
	stats Stats
	files uint64
}

func newReading(tables map[string]traffic.KeySchema, log *zap.Logger, rep traffic.Reporter) reading {
	return reading{decoder: NewDecoder(tables, log, rep), reporter: rep, logger: log}
}

// setProgress makes the reader report its progress in event time to p:
// CloudTrail delivers up to traffic.CloudTrailDelay late, so caught up its
// watermark stands at the newest event delivered or that long before now.
func (rd *reading) setProgress(p *traffic.Progress) {
	p.Declare(SourceName, traffic.CloudTrailDelay)
	rd.lane = p.Lane(SourceName)
	rd.lane.Idle()
}

// read decodes one whole file into sink. It returns ctx's error or the
// sink's refusal, which stop the reader; a read error half-way is
// reported, and what was read is counted, so the file is done rather than
// read twice.
func (rd *reading) read(ctx context.Context, r io.Reader, name string, sink traffic.Sink) error {
	st, err := rd.decoder.Decode(ctx, r, name, rd.lane.Track(sink))
	rd.cmu.Lock()
	rd.stats.Add(st)
	if err == nil {
		rd.files++
	}
	rd.cmu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *sinkError
		if errors.As(err, &se) {
			return se.err
		}
		rd.reporter.Error(SourceName, "read", err)
		return nil
	}
	rd.logger.Debug("read file", zap.String("file", name), zap.Uint64("events", st.Events),
		zap.Uint64("throttled", st.Throttled), zap.Uint64("rejected", st.Rejected))
	return nil
}

// Stats returns the counts of everything read so far.
func (rd *reading) Stats() Stats {
	rd.cmu.Lock()
	defer rd.cmu.Unlock()
	return rd.stats
}
