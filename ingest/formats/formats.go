// Package formats is the one list of the input formats hotkeyd reads
// whole (hotkeyd analyze, and files a reader takes in one piece): each
// input is opened and decompressed (package input), its format is
// recognised from its first bytes, and it is handed to that format's
// decoder. A new format is one more Decoder in New's list.
//
// Reading is per input, so that inputs can be read side by side: Read and
// ReadFile may be called from several goroutines at once, each with its
// own input.
package formats

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail"
	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
)

// Decoder reads whole inputs of one format. Decode may be called for
// several inputs at once.
type Decoder interface {
	// Format names the format: "cloudtrail", "jsonl".
	Format() string
	// Sniff reports whether head, the first bytes of an input's content
	// (decompressed, up to input.SniffLen, fewer for a short input), is of
	// this format.
	Sniff(head []byte) bool
	// Decode reads in to its end and hands its Events to sink. Bad records
	// go to the Reporter and are skipped; an error means in could not be
	// read on (a broken compressed stream, a read error), ctx ended or sink
	// refused a batch.
	Decode(ctx context.Context, in *input.Input, sink ingest.Sink) error
}

// noter is a Decoder with something to say in a report about how its
// inputs were counted.
type noter interface {
	Notes() []string
}

// Config is what the decoders need.
type Config struct {
	// Schemas are the key schemas of tables whose records do not say which
	// attribute is the partition key (CloudTrail).
	Schemas map[string]ingest.KeySchema
	// Fields are the JSON-lines member names.
	Fields jsonl.Fields
	// Log is for hints a person should see (a table without a key
	// schema); nil for none.
	Log *zap.Logger
	// Reporter is told about every record skipped.
	Reporter ingest.Reporter
}

// Set is the decoders of every format hotkeyd reads, in the order they
// are tried. It keeps what the inputs of one analysis share (key schemas
// learnt from CloudTrail's CreateTable events, the counts a report's notes
// are made from), so one Set should read all the inputs of one analysis.
type Set struct {
	decoders []Decoder
}

// New returns the Set of every format. It is the one place a format is
// added: its Decoder goes before the JSON-lines one, which takes whatever
// no other format claims.
func New(cfg Config) *Set {
	if cfg.Reporter == nil {
		cfg.Reporter = ingest.NopReporter{}
	}
	return &Set{decoders: []Decoder{
		&cloudTrail{dec: cloudtrail.NewDecoder(cfg.Schemas, cfg.Log, cfg.Reporter)},
		jsonLines{opts: jsonl.Options{Fields: cfg.Fields, Reporter: cfg.Reporter}},
	}}
}

// Detect returns the decoder of in's format: the first whose Sniff accepts
// in's first bytes, and the last one otherwise.
func (s *Set) Detect(in *input.Input) Decoder {
	head := in.Head()
	for _, d := range s.decoders[:len(s.decoders)-1] {
		if d.Sniff(head) {
			return d
		}
	}
	return s.decoders[len(s.decoders)-1]
}

// Read reads one opened input to its end into sink, with the decoder of
// its format.
func (s *Set) Read(ctx context.Context, in *input.Input, sink ingest.Sink) error {
	return s.Detect(in).Decode(ctx, in, sink)
}

// ReadFile opens the file name ("-" for stdin), reads it whole into sink
// and closes it. While it reads, a progress line is printed on progress
// every input.ProgressEvery (nil prints none). The error is Open's, or
// Read's.
func (s *Set) ReadFile(ctx context.Context, name string, stdin io.Reader, sink ingest.Sink, progress io.Writer) error {
	in, err := input.Open(name, stdin)
	if err != nil {
		return err
	}
	defer in.Close()
	counted := input.Count(sink)
	if progress != nil {
		stop := input.StartProgress(progress, name, in.BytesRead, counted.Events, input.ProgressEvery)
		defer stop()
	}
	return s.Read(ctx, in, counted)
}

// Notes returns what a report should say about how the inputs read so far
// were counted (CloudTrail counts items, not capacity units).
func (s *Set) Notes() []string {
	var notes []string
	for _, d := range s.decoders {
		if n, ok := d.(noter); ok {
			notes = append(notes, n.Notes()...)
		}
	}
	return notes
}

// jsonLines reads JSON-lines access logs (the access-log contract).
type jsonLines struct{ opts jsonl.Options }

func (jsonLines) Format() string { return "jsonl" }

// Sniff accepts anything: JSON lines is the format of last resort, whose
// reader says line by line what it could not use.
func (jsonLines) Sniff([]byte) bool { return true }

func (j jsonLines) Decode(ctx context.Context, in *input.Input, sink ingest.Sink) error {
	_, err := jsonl.ReadAll(ctx, in, in.Name, sink, j.opts)
	return err
}

// cloudTrail reads CloudTrail log files: {"Records":[...]} objects,
// EventBridge envelopes or bare events. One decoder serves every input, so
// that key schemas learnt from one file (CreateTable, UpdateTable events)
// serve the next and a missing schema is said once.
type cloudTrail struct {
	dec *cloudtrail.Decoder

	mu     sync.Mutex
	inputs int
	stats  cloudtrail.Stats
}

func (*cloudTrail) Format() string { return "cloudtrail" }

func (*cloudTrail) Sniff(head []byte) bool { return cloudtrail.Sniff(head) }

func (c *cloudTrail) Decode(ctx context.Context, in *input.Input, sink ingest.Sink) error {
	st, err := c.dec.Decode(ctx, in, in.Name, sink)
	c.mu.Lock()
	c.inputs++
	c.stats.Add(st)
	c.mu.Unlock()
	return err
}

// Notes says how CloudTrail inputs were counted, once any was read.
func (c *cloudTrail) Notes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inputs == 0 {
		return nil
	}
	st := c.stats
	notes := []string{"CloudTrail records no item size or consumed capacity: units from CloudTrail input are 1 per item read or written, not RCU/WCU."}
	if st.Throttled > 0 || st.Failed > 0 {
		notes = append(notes, fmt.Sprintf("CloudTrail: %d throttled and %d otherwise failed calls are not counted as traffic; throttled ones are ranked in throttled_keys.", st.Throttled, st.Failed))
	}
	if len(st.NoSchema) > 0 {
		notes = append(notes, fmt.Sprintf("CloudTrail: no key schema for %s, so keys were counted whole (all attributes); give one with --key-schema TABLE=PK[,SK] or the config's tables section.", strings.Join(st.NoSchema, ", ")))
	}
	return notes
}
