package jsonl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/follow"
	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// DefaultPoll is how often the follower looks for new lines, rotated and
// truncated files and new files matching a glob.
const DefaultPoll = 250 * time.Millisecond

// Config configures a Source. It is also a sources entry of type jsonl in
// the config file: the yaml tags are its keys, DefaultConfig its defaults.
type Config struct {
	Options `yaml:",inline"`
	// Paths are files or glob patterns to follow ("**" matches any number
	// of folders; see follow.Validate); "-" is stdin. Compressed files
	// (a rotated log's archive) are read whole, once.
	Paths []string `yaml:"paths"`
	// Poll is how often files are checked (DefaultPoll when 0).
	Poll time.Duration `yaml:"poll_interval"`
	// FromStart reads files that exist when Run starts from their
	// beginning. By default they are read from their end, so a restart does
	// not count their lines twice; files that appear later (a rotation, a
	// new file matching a glob) are always read from the beginning.
	FromStart bool
	// Stdin is read for the path "-" (os.Stdin when nil).
	Stdin io.Reader
}

// DefaultConfig returns the settings of a jsonl source the file leaves out.
func DefaultConfig() Config { return Config{Poll: DefaultPoll} }

// Validate reports every setting that cannot work, one error each
// (errors.Join), naming its key.
func (c *Config) Validate() error {
	return follow.ValidateSettings(c.Paths, true, c.Poll)
}

// NewSource builds the reader of a sources entry of type jsonl, with the
// daemon's Reporter and standard input. A file whose first line is a
// DynamoDB stream record (Firehose's files of Kinesis payloads, logged
// Lambda events) is read as such, with the config file's key schemas.
func (c *Config) NewSource(env ingest.Env) (traffic.Source, error) {
	cfg := *c
	cfg.Reporter, cfg.Stdin = env.Reporter, env.Stdin
	if cfg.Records == nil {
		source := cmp.Or(cfg.Source, SourceName)
		gaps, err := streamrecord.NewGaps(source, env.Log, env.Registerer)
		if err != nil {
			return nil, err
		}
		cfg.Records = streamrecord.NewDumpDecoder(streamrecord.DumpConfig{
			Schemas: streamrecord.NewSchemas(env.Tables), Gaps: gaps,
			Source: source, Log: env.Log, Reporter: env.Reporter,
		})
	}
	src, err := New(cfg, env.Log)
	if err != nil {
		return nil, err
	}
	src.progress = env.Progress
	env.Progress.Declare(src.Name(), 0)
	return src, nil
}

// Source follows JSON-lines files like tail -F (package follow), and reads
// stdin for "-". It implements traffic.Source and traffic.Readier.
type Source struct {
	cfg    Config
	log    *zap.Logger
	follow *follow.Follower // nil without files
	files  *files
	// progress takes each followed file's progress in event time (a lane
	// per file); nil keeps none.
	progress *traffic.Progress

	scanned func() // test hook: called after each poll
}

// New checks cfg and returns a Source. log is named by the caller's
// convention; the Source names its own child logger.
func New(cfg Config, log *zap.Logger) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("jsonl source: %w", err)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Stdin == nil {
		cfg.Stdin = os.Stdin
	}
	cfg.Options = cfg.Options.withDefaults()
	if log == nil {
		log = zap.NewNop()
	}
	s := &Source{cfg: cfg, log: log.Named("jsonl")}
	var paths []string
	for _, p := range cfg.Paths {
		if p != "-" {
			paths = append(paths, p)
		}
	}
	if len(paths) > 0 {
		s.files = &files{src: s}
		fl, err := follow.New(follow.Config{
			Paths:     paths,
			Poll:      cfg.Poll,
			FromStart: cfg.FromStart,
			Source:    cfg.Source,
			Reporter:  cfg.Reporter,
			Log:       s.log,
		}, s.files)
		if err != nil {
			return nil, fmt.Errorf("jsonl source: %w", err)
		}
		s.follow = fl
	}
	return s, nil
}

// Name returns the source label.
func (s *Source) Name() string { return s.cfg.Source }

// Notes says what a report must know of how the stream records of its
// files were counted (traffic.Noter): the tables whose index writes their
// streams' view type hides.
func (s *Source) Notes() []string {
	if n, ok := s.cfg.Records.(traffic.Noter); ok {
		return n.Notes()
	}
	return nil
}

// Ready returns why the source cannot read a file it should (a permission
// error, a path that is not a regular file), or nil. A file that does not
// exist yet is not an error: it is read when it appears.
func (s *Source) Ready() error {
	if s.follow == nil {
		return nil
	}
	return s.follow.Ready()
}

// Run follows the files and reads stdin until ctx is done. Stdin ending
// ends its part; files are followed until ctx is done. It returns nil
// except when the sink fails for another reason than ctx.
func (s *Source) Run(ctx context.Context, sink traffic.Sink) error {
	stdin := slices.Contains(s.cfg.Paths, "-")
	var wg sync.WaitGroup
	var stdinErr error
	if stdin {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stdinErr = s.readStdin(ctx, sink)
		}()
	}
	var err error
	if s.follow != nil {
		s.files.sink = wrapSink(sink)
		err = s.follow.Run(ctx)
	}
	wg.Wait()
	return errors.Join(err, stdinErr)
}

func (s *Source) readStdin(ctx context.Context, sink traffic.Sink) error {
	// Stdin has no lane: a read that blocks cannot tell a quiet pipe
	// from a slow one, and a quiet pipe is caught up.
	counts, err := ReadAll(ctx, s.cfg.Stdin, "stdin", wrapSink(sink), s.cfg.Options)
	s.log.Info("stdin ended", zap.Uint64("events", counts.Events), zap.Uint64("rejected", counts.Rejected))
	if err != nil && ctx.Err() == nil {
		if isSinkErr(err) {
			return err
		}
		s.cfg.Reporter.Error(s.cfg.Source, "read", err)
	}
	return nil
}

// sinkError marks an error returned by the Sink, which ends the source.
type sinkError struct{ err error }

func (e sinkError) Error() string { return "put events: " + e.err.Error() }
func (e sinkError) Unwrap() error { return e.err }

func isSinkErr(err error) bool {
	var se sinkError
	return errors.As(err, &se)
}

// wrapSink marks the sink's errors so that they can be told from read errors.
func wrapSink(sink traffic.Sink) traffic.Sink {
	return traffic.SinkFunc(func(ctx context.Context, batch []traffic.Event) error {
		if err := sink.Put(ctx, batch); err != nil {
			return sinkError{err}
		}
		return nil
	})
}
