package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Defaults of Options.
const (
	// DefaultMaxLineBytes bounds one line. Access-log lines are a few hundred
	// bytes; a longer line is rejected as too_long and skipped.
	DefaultMaxLineBytes = 64 << 10
	// DefaultBatchSize is the number of Events handed to the Sink at once.
	DefaultBatchSize = 512
	// SourceName is the default source label of the reader.
	SourceName = "jsonl"
)

// Options are the settings shared by every JSON-lines reader.
type Options struct {
	// Fields names the members of a line; zero members mean the contract's names.
	Fields Fields `yaml:"fields"`
	// MaxLineBytes bounds a line (DefaultMaxLineBytes when 0).
	MaxLineBytes int
	// BatchSize is the number of Events per Sink.Put (DefaultBatchSize when 0).
	BatchSize int
	// Now stamps lines without a time (time.Now when nil).
	Now func() time.Time
	// Reporter is told about every rejected line (discarded when nil).
	Reporter traffic.Reporter
	// Source is the source label of the Events and the rejections ("jsonl" when empty).
	Source string
	// LinesBefore, for an input read from a line in its middle (a part of
	// a file read beside the others), returns how many lines come before
	// it, so that rejected lines are named by their line in the whole
	// input. It is called once, at the first rejected line; nil means the
	// input is read from its start.
	LinesBefore func() int64
	// Recycle says that the sink keeps nothing of a batch once Put has
	// returned, neither the slice nor the strings of its Events (a
	// sketch.Store copies the few keys it keeps). The reader then fills one
	// batch, and one arena of key strings, over and over instead of
	// handing the sink a new one each time: reading allocates nothing per
	// batch. Put otherwise takes ownership, as traffic.Sink says.
	Recycle bool
	// Keys, when set, skips the access-log lines whose partition key is
	// none of its keys before they are parsed (KeyFilter): they are
	// neither Events nor rejected, nor counted. For a read whose sink
	// wants these keys only and was told about every bad line already.
	Keys *KeyFilter
	// Records, when set, reads the inputs whose first line it recognises
	// instead of the access-log parser: files of DynamoDB stream records,
	// one record or one Lambda event per line (package streams).
	Records RecordLines
}

// RecordLines reads the lines of a format other than the access log's,
// each line one record or one batch of records.
type RecordLines interface {
	// Sniff reports whether the first line of an input is of its format.
	Sniff(line []byte) bool
	// DecodeLine appends the Events of one line (lineNo of input name) to
	// dst, reports what it cannot use, and returns how many records it
	// rejected.
	DecodeLine(line []byte, name string, lineNo int64, dst []traffic.Event) ([]traffic.Event, int)
}

func (o Options) withDefaults() Options {
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Reporter == nil {
		o.Reporter = traffic.NopReporter{}
	}
	if o.Source == "" {
		o.Source = SourceName
	}
	return o
}

// LineError is a rejected line: where it was and why.
type LineError struct {
	// Name is the input (a file name, "stdin"); empty for a request body.
	Name string
	// Line is the 1-based line number, counted from where reading started
	// (a followed file opened at its end counts from there).
	Line int64
	// Err says why; its Reason is the rejection's label value.
	Err *ParseError
}

func (e *LineError) Error() string {
	s := "line " + strconv.FormatInt(e.Line, 10) + ": " + e.Err.Error()
	if e.Name != "" {
		s = e.Name + ": " + s
	}
	return s
}

// Unwrap returns the *ParseError.
func (e *LineError) Unwrap() error { return e.Err }

// Position implements input.Positioned: the input and the line.
func (e *LineError) Position() (string, int64) { return e.Name, e.Line }

// Counts are what a reader did with its input: the counts every decoder
// keeps (Records are the lines read, Events the lines turned into Events,
// Rejected the lines reported to the Reporter), and the bytes read.
type Counts struct {
	ingest.Stats
	// Bytes is the number of input bytes read.
	Bytes int64
}

// utf8BOM is the byte order mark some Windows tools write at the start of
// a UTF-8 file.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// stream turns lines into batches of Events. One stream reads one input at
// a time; it is not safe for concurrent use.
type stream struct {
	opts    Options
	name    string
	parser  *Parser
	lines   *lineReader
	batch   []traffic.Event
	counts  Counts
	onError func(*LineError) // besides the Reporter; may be nil
	// lineOf, when trackLines is set, holds the line number of each event
	// of the batch (HTTP ingest answers with the lines a Sink refused).
	lineOf     []int64
	trackLines bool
	// records is set once the first line was found to be of
	// opts.Records' format; decided tells that the first line was seen.
	records, decided bool
	// started is set once the first line was seen.
	started bool
	// before is the number of lines ahead of the input (Options.LinesBefore),
	// read at the first rejection; -1 until then.
	before int64
	// noter is told about the members outside the contract the parser
	// ignored, once a batch; nil when the Reporter is not a FieldNoter.
	noter traffic.FieldNoter
}

func newStream(opts Options, name string) *stream {
	opts = opts.withDefaults()
	p := NewParser(opts.Fields, opts.Source, opts.Now)
	p.mask = traffic.MaskerOf(opts.Reporter)
	noter, _ := opts.Reporter.(traffic.FieldNoter)
	return &stream{
		opts:   opts,
		name:   name,
		parser: p,
		lines:  newLineReader(opts.MaxLineBytes),
		before: -1,
		noter:  noter,
	}
}

// noteIgnored tells the noter how many lines carried each member outside
// the contract since it was last told.
func (s *stream) noteIgnored() {
	s.parser.Ignored(func(field string, lines uint64) {
		if s.noter != nil {
			s.noter.Ignored(s.opts.Source, field, lines)
		}
	})
}

// line parses one complete line into the batch or reports it.
func (s *stream) line(b []byte) {
	if !s.started {
		// A followed file is read line by line, not through
		// input.Decompress: its byte order mark is left out here.
		s.started = true
		b = bytes.TrimPrefix(b, utf8BOM)
	}
	if len(b) == 0 || jsonscan.Space(b, 0) == len(b) {
		return // blank lines carry nothing and are not errors
	}
	s.counts.Records++
	if s.batch == nil {
		s.batch = make([]traffic.Event, 0, s.opts.BatchSize)
	}
	if s.trackLines {
		defer s.trackLine(len(s.batch))
	}
	if !s.decided {
		s.decided = true
		s.records = s.opts.Records != nil && s.opts.Records.Sniff(b)
	}
	if s.records {
		n := len(s.batch)
		var rejected int
		s.batch, rejected = s.opts.Records.DecodeLine(b, s.name, s.lines.lines, s.batch)
		s.counts.Events += uint64(len(s.batch) - n)
		s.counts.Rejected += uint64(rejected)
		return
	}
	if !s.opts.Keys.Maybe(b) {
		return
	}
	s.batch = append(s.batch, traffic.Event{})
	if err := s.parser.Parse(b, &s.batch[len(s.batch)-1]); err != nil {
		s.batch = s.batch[:len(s.batch)-1]
		var pe *ParseError
		if !errors.As(err, &pe) {
			pe = perr(traffic.ReasonBadJSON, err.Error())
		}
		s.reject(pe)
		return
	}
	s.counts.Events++
}

// trackLine notes the current line as the line of the events appended to
// the batch past n.
func (s *stream) trackLine(n int) {
	for range len(s.batch) - n {
		s.lineOf = append(s.lineOf, max(s.before, 0)+s.lines.lines)
	}
}

// takeLines returns the line numbers of the batch's events (valid until
// the next line is read) and starts over for the next batch.
func (s *stream) takeLines() []int64 {
	l := s.lineOf
	s.lineOf = s.lineOf[:0]
	return l
}

func (s *stream) reject(pe *ParseError) {
	s.counts.Rejected++
	if s.before < 0 {
		s.before = 0
		if s.opts.LinesBefore != nil {
			s.before = s.opts.LinesBefore()
		}
	}
	le := &LineError{Name: s.name, Line: s.before + s.lines.lines, Err: pe}
	s.opts.Reporter.Reject(s.opts.Source, pe.Reason, le)
	if s.onError != nil {
		s.onError(le)
	}
}

func (s *stream) tooLong() {
	s.reject(perr(traffic.ReasonTooLong, fmt.Sprintf("line longer than %d bytes", s.opts.MaxLineBytes)))
}

// drain handles every complete line buffered, putting full batches.
func (s *stream) drain(ctx context.Context, sink traffic.Sink) error {
	for {
		b, st := s.lines.next()
		switch st {
		case needMore:
			return nil
		case lineTooLong:
			s.tooLong()
			continue
		}
		s.line(b)
		if len(s.batch) >= s.opts.BatchSize {
			if err := s.flush(ctx, sink); err != nil {
				return err
			}
		}
	}
}

// finish handles an unterminated last line.
func (s *stream) finish() {
	if b, ok := s.lines.rest(); ok {
		s.line(b)
	}
}

// flush hands the batch to the sink. The sink owns it afterwards, unless
// Options.Recycle says it keeps nothing of it: then the batch and the key
// arena are filled again.
func (s *stream) flush(ctx context.Context, sink traffic.Sink) error {
	s.noteIgnored()
	if len(s.batch) == 0 {
		return nil
	}
	b := s.batch
	if !s.opts.Recycle {
		s.batch = nil
		return sink.Put(ctx, b)
	}
	err := sink.Put(ctx, b)
	s.batch = b[:0]
	s.parser.reuseKeys()
	return err
}

// readFrom reads r to its end (or ctx's), handing Events to sink. A short
// read means the writer is slower than we are, so the partial batch is
// flushed before waiting for more: a live pipe never sits on Events.
func (s *stream) readFrom(ctx context.Context, r io.Reader, sink traffic.Sink) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		buf := s.lines.space()
		n, err := r.Read(buf)
		s.counts.Bytes += int64(n)
		s.lines.wrote(n)
		if derr := s.drain(ctx, sink); derr != nil {
			return derr
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return err
		}
		if n < len(buf) {
			if err := s.flush(ctx, sink); err != nil {
				return err
			}
		}
	}
}

// ReadAll reads r to its end as JSON lines, handing Events to sink in
// batches and every bad line to opts.Reporter; name says which input it is
// in errors ("stdin", a file name). It is the whole-input reader of
// hotkeyd analyze and of stdin.
//
// It returns when r ends, with the counts, or early with ctx's error or the
// sink's. When ctx ends while r blocks (a pipe, a terminal) and r has
// SetReadDeadline (an *os.File on a pipe), the read is interrupted.
func ReadAll(ctx context.Context, r io.Reader, name string, sink traffic.Sink, opts Options) (Counts, error) {
	if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok {
		stop := context.AfterFunc(ctx, func() { _ = d.SetReadDeadline(time.Unix(1, 0)) })
		defer stop()
	}
	s := newStream(opts, name)
	err := s.readFrom(ctx, r, sink)
	if err == nil {
		s.finish()
		err = s.flush(ctx, sink)
	}
	if err != nil {
		if ctx.Err() != nil && (errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ctx.Err())) {
			return s.counts, ctx.Err()
		}
		return s.counts, fmt.Errorf("read %s: %w", name, err)
	}
	return s.counts, nil
}
