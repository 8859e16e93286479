package cloudtrail

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
)

// Config configures a Source.
type Config struct {
	// Paths are files or glob patterns ("**" matches any number of
	// folders), e.g. "/var/log/cloudtrail/**/*.json.gz".
	Paths []string
	// CheckpointDir is where the list of files already read is kept
	// (StateFile), so that a restart does not count them again. Empty keeps
	// none: every file matched is read at each start.
	CheckpointDir string
	// Tables maps table names, and "TABLE/INDEX" for secondary indexes, to
	// their key schemas.
	Tables map[string]ingest.KeySchema
	// PollInterval is how often the paths are listed for new files.
	// Zero means DefaultPollInterval.
	PollInterval time.Duration
	// MaxAge, when positive, skips files modified longer ago than this when
	// they are first seen: they are recorded as read without being read.
	// Live windows run on arrival time, so replaying months of history on a
	// first start would count it all as current traffic.
	MaxAge time.Duration
}

// DefaultPollInterval is the PollInterval used when none is set. CloudTrail
// delivers a file about every five minutes per region, so a few seconds of
// polling delay are nothing.
const DefaultPollInterval = 5 * time.Second

// settleTime is how old a file's modification time must be for it to be
// read at first sight; a younger file is read once two listings found it
// unchanged, so a file still being written is not read half-way.
const settleTime = 2 * time.Second

// Source follows a CloudTrail delivery folder: it reads every file the
// paths match, then new files as they appear, and remembers the files read
// in CheckpointDir. It implements ingest.Source and ingest.Readier.
type Source struct {
	cfg Config
	log *zap.Logger
	rep ingest.Reporter
	dec *Decoder
	now func() time.Time

	mu    sync.Mutex
	stats Stats
	files uint64
	ready error

	// Owned by Run.
	done     map[string]fileState
	pending  map[string]fileState
	failed   map[string]bool
	lastSave time.Time
}

// New returns a Source reading cfg.Paths. It checks the patterns and reads
// the state file, and starts nothing: Run does the work.
func New(cfg Config, log *zap.Logger, rep ingest.Reporter) (*Source, error) {
	if len(cfg.Paths) == 0 {
		return nil, errors.New("cloudtrail: no paths")
	}
	for _, p := range cfg.Paths {
		if p == "-" {
			return nil, errors.New("cloudtrail: stdin is not a delivery folder; use hotkeyd analyze")
		}
		if err := validatePattern(p); err != nil {
			return nil, fmt.Errorf("cloudtrail: path %q: %w", p, err)
		}
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if log == nil {
		log = zap.NewNop()
	}
	if rep == nil {
		rep = ingest.NopReporter{}
	}
	log = log.Named("cloudtrail")
	done, err := loadState(cfg.CheckpointDir)
	if err != nil {
		return nil, fmt.Errorf("cloudtrail: %w", err)
	}
	return &Source{
		cfg:     cfg,
		log:     log,
		rep:     rep,
		dec:     NewDecoder(cfg.Tables, log, rep),
		now:     time.Now,
		done:    done,
		pending: map[string]fileState{},
		failed:  map[string]bool{},
	}, nil
}

// Name returns "cloudtrail".
func (s *Source) Name() string { return SourceName }

// Ready returns nil while the paths can be listed and the state saved, or
// the last error doing so.
func (s *Source) Ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// Stats returns the counts of everything read so far.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Run reads the matched files, oldest first, then polls for new ones until
// ctx is done. It returns nil when ctx is done and an error only when sink
// fails otherwise.
func (s *Source) Run(ctx context.Context, sink ingest.Sink) error {
	s.log.Info("following CloudTrail files", zap.Strings("paths", s.cfg.Paths),
		zap.String("checkpoint_dir", s.cfg.CheckpointDir), zap.Int("files_read_before", len(s.done)))
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := s.scan(ctx, sink); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		t.Reset(s.cfg.PollInterval)
	}
}

type found struct {
	path string
	st   fileState
}

// scan lists the paths and reads the files not read yet.
func (s *Source) scan(ctx context.Context, sink ingest.Sink) error {
	var listErr error
	seen := map[string]bool{}
	var files []found
	for _, p := range s.cfg.Paths {
		paths, err := expand(p)
		if err != nil {
			listErr = fmt.Errorf("list %q: %w", p, err)
			s.rep.Error(SourceName, "list", listErr)
		}
		for _, path := range paths {
			if seen[path] {
				continue
			}
			seen[path] = true
			fi, err := os.Stat(path)
			if err != nil {
				continue
			}
			files = append(files, found{path, fileState{Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}})
		}
	}
	// Oldest first, so traffic arrives in about the order it happened.
	sort.Slice(files, func(i, j int) bool {
		if files[i].st.ModTime != files[j].st.ModTime {
			return files[i].st.ModTime < files[j].st.ModTime
		}
		return files[i].path < files[j].path
	})
	now := s.now()
	var saveErr error
	changed, skipped := false, 0
	for _, f := range files {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, done := s.done[f.path]; done {
			continue
		}
		mtime := time.Unix(0, f.st.ModTime)
		if s.cfg.MaxAge > 0 && now.Sub(mtime) > s.cfg.MaxAge {
			s.done[f.path] = f.st
			changed = true
			skipped++
			continue
		}
		if now.Sub(mtime) < settleTime {
			if prev, ok := s.pending[f.path]; !ok || prev != f.st {
				s.pending[f.path] = f.st
				continue
			}
		}
		delete(s.pending, f.path)
		if err := s.read(ctx, sink, f); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !errors.Is(err, errUnreadable) {
				return err
			}
			continue
		}
		s.done[f.path] = f.st
		changed = true
		// Save after each file, at most once a second: a first start on a
		// folder of thousands of files must not rewrite the state for each.
		if now := time.Now(); now.Sub(s.lastSave) >= time.Second {
			s.lastSave = now
			changed = false
			if err := saveState(s.cfg.CheckpointDir, s.done); err != nil {
				saveErr = err
			}
		}
	}
	if skipped > 0 {
		s.log.Info("skipped files older than max_age", zap.Int("files", skipped), zap.Duration("max_age", s.cfg.MaxAge))
	}
	// Forget the files that are gone, so the state does not grow forever.
	for path := range s.done {
		if !seen[path] {
			if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
				delete(s.done, path)
				changed = true
			}
		}
	}
	for path := range s.pending {
		if !seen[path] {
			delete(s.pending, path)
		}
	}
	if changed {
		s.lastSave = time.Now()
		if err := saveState(s.cfg.CheckpointDir, s.done); err != nil {
			saveErr = err
		}
	}
	if saveErr != nil {
		s.rep.Error(SourceName, "checkpoint", saveErr)
	}
	s.mu.Lock()
	s.ready = errors.Join(listErr, saveErr)
	s.mu.Unlock()
	return nil
}

// errUnreadable marks a file that could not be opened or read; it is tried
// again at the next listing.
var errUnreadable = errors.New("unreadable file")

// read decodes one file into sink.
func (s *Source) read(ctx context.Context, sink ingest.Sink, f found) error {
	fh, err := os.Open(f.path)
	if err != nil {
		if !s.failed[f.path] {
			s.failed[f.path] = true
			s.rep.Error(SourceName, "open", fmt.Errorf("open %q: %w", f.path, err))
		}
		return errUnreadable
	}
	defer fh.Close()
	delete(s.failed, f.path)
	st, err := s.dec.Decode(ctx, fh, f.path, sink)
	s.mu.Lock()
	s.stats.Add(st)
	if err == nil {
		s.files++
	}
	s.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *sinkError
		if errors.As(err, &se) {
			return se.err
		}
		// A read error half-way: what was read is counted, so the file is
		// done rather than read twice.
		s.rep.Error(SourceName, "read", err)
		return nil
	}
	s.log.Debug("read file", zap.String("file", f.path), zap.Uint64("events", st.Events),
		zap.Uint64("throttled", st.Throttled), zap.Uint64("rejected", st.Rejected))
	return nil
}
