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
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail"
	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/internal/plural"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Decoder reads whole inputs of one format. Decode may be called for
// several inputs at once.
type Decoder interface {
	// Format names the format: "stream-records", "cloudtrail", "jsonl".
	Format() string
	// Sniff reports whether head, the first bytes of an input's content
	// (decompressed, up to input.SniffLen, fewer for a short input), is of
	// this format.
	Sniff(head []byte) bool
	// Decode reads in to its end and hands its Events to sink. Bad records
	// go to the Reporter and are skipped; an error means in could not be
	// read on (a broken compressed stream, a read error), ctx ended or sink
	// refused a batch.
	Decode(ctx context.Context, in *input.Input, sink traffic.Sink) error
}

// PartDecoder is a Decoder that reads each input on its own, keeping
// nothing from one input for the next (unlike CloudTrail's, which learns
// key schemas for the inputs after), so that inputs can be read side by
// side, in any order, and read again; and whose records may come one per
// line, so that such an input can be cut between two lines and its parts
// read side by side too (hotkeyd analyze on every core, package
// ingest/parallel). A Decoder that is not a PartDecoder has its inputs read
// one after the other, in order.
type PartDecoder interface {
	Decoder
	// Lines reports whether an input whose content starts with head (as
	// for Sniff) holds one record per line, so that any line may start a
	// part.
	Lines(head []byte) bool
	// DecodePart reads r to its end, as Decode reads an input: r is a
	// whole input's content or, when Lines said so, the lines of a part of
	// it, starting at a line's start and ending after a newline or at the
	// input's end.
	DecodePart(ctx context.Context, r io.Reader, p Part, sink traffic.Sink) error
}

// Part says which input DecodePart reads, and how.
type Part struct {
	// Name is the input's name, for messages.
	Name string
	// LinesBefore returns the number of lines of the input before the
	// part, for the line numbers of rejected records; it is called at most
	// once, when the first one is. nil for a part that starts the input.
	LinesBefore func() int64
	// Again says that the part was read before and every record it
	// rejects was reported then: nothing is reported or counted in Notes
	// again.
	Again bool
}

// noter is a Decoder with something to say in a report about how its
// inputs were counted.
type noter interface {
	Notes() []string
}

// Config is what the decoders need.
type Config struct {
	// Schemas are the key schemas of tables whose records do not say which
	// attribute is the partition key (CloudTrail, stream records), with
	// the tables' secondary indexes, whose writes stream records' item
	// images tell.
	Schemas map[string]traffic.KeySchema
	// Table is the table of stream records that name none (the output of
	// aws dynamodbstreams get-records); stream records of any other table
	// are then rejected.
	Table string
	// Fields are the JSON-lines member names.
	Fields jsonl.Fields
	// Log is for hints a person should see (a table without a key
	// schema); nil for none.
	Log *zap.Logger
	// Reporter is told about every record skipped.
	Reporter traffic.Reporter
	// Recycle says that the sinks inputs are read into keep nothing of a
	// batch once Put has returned, neither the slice nor the strings of its
	// Events (a sketch.Store copies the keys it keeps): decoders that can
	// then fill one batch over and over (jsonl.Options.Recycle).
	Recycle bool
	// Keys, when not nil, are the only partition keys the sinks want
	// (hotkeyd analyze's second read): decoders that can tell from a
	// record's bytes skip the records of other keys before decoding them
	// (JSON-lines access logs, jsonl.KeyFilter); the others decode every
	// record. Only for inputs read before, whose bad records were reported
	// then.
	Keys []string
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
		cfg.Reporter = traffic.NopReporter{}
	}
	return &Set{decoders: []Decoder{
		&streamRecords{dec: streamrecord.NewDumpDecoder(streamrecord.DumpConfig{
			Schemas: streamrecord.NewSchemas(cfg.Schemas), Table: cfg.Table, Log: cfg.Log, Reporter: cfg.Reporter,
		})},
		&cloudTrail{dec: cloudtrail.NewDecoder(cfg.Schemas, cfg.Log, cfg.Reporter)},
		&jsonLines{opts: jsonl.Options{Fields: cfg.Fields, Reporter: cfg.Reporter, Recycle: cfg.Recycle, Keys: keyFilter(cfg)}},
	}}
}

// keyFilter is the JSON-lines filter of cfg.Keys, nil without them.
func keyFilter(cfg Config) *jsonl.KeyFilter {
	if cfg.Keys == nil {
		return nil
	}
	return jsonl.NewKeyFilter(cfg.Fields, cfg.Keys)
}

// Detect returns the decoder of in's format: the first whose Sniff accepts
// in's first bytes, and the last one otherwise.
func (s *Set) Detect(in *input.Input) Decoder {
	return s.DetectHead(in.Head())
}

// DetectHead returns the decoder of an input whose content (decompressed)
// starts with head, the first input.SniffLen bytes or all of a shorter
// input: the first whose Sniff accepts them, and the last one otherwise.
func (s *Set) DetectHead(head []byte) Decoder {
	for _, d := range s.decoders[:len(s.decoders)-1] {
		if d.Sniff(head) {
			return d
		}
	}
	return s.decoders[len(s.decoders)-1]
}

// Read reads one opened input to its end into sink, with the decoder of
// its format.
func (s *Set) Read(ctx context.Context, in *input.Input, sink traffic.Sink) error {
	return s.Detect(in).Decode(ctx, in, sink)
}

// ReadFile opens the file name ("-" for stdin), reads it whole into sink
// and closes it. While it reads, a progress line is printed on progress
// every input.ProgressEvery (nil prints none). The error is Open's, or
// Read's.
func (s *Set) ReadFile(ctx context.Context, name string, stdin io.Reader, sink traffic.Sink, progress io.Writer) error {
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

// tally is what the inputs of one format held, for Verdict.
type tally struct {
	// inputs counts the inputs read; empty those without content, unknown
	// those of no format hotkeyd reads.
	inputs, empty, unknown int
	// records counts the records (lines) read; events those turned into
	// Events; omitted those left out on purpose, which a note explains
	// (CloudTrail management events, Time to Live deletes); rejected those
	// that could not be used, and inputs cut short.
	records, events, omitted, rejected uint64
}

// tallier is a Decoder that counts what its inputs held.
type tallier interface {
	tally() tally
}

// total adds up the tallies of every format.
func (s *Set) total() tally {
	var t tally
	for _, d := range s.decoders {
		if tl, ok := d.(tallier); ok {
			x := tl.tally()
			t.inputs += x.inputs
			t.empty += x.empty
			t.unknown += x.unknown
			t.records += x.records
			t.events += x.events
			t.omitted += x.omitted
			t.rejected += x.rejected
		}
	}
	return t
}

// Decoded returns the Events the readers handed on, and the records they
// left out on purpose (which a note explains), so far. A caller whose
// sink refuses Events (traffic.Checked) tells from it whether any input
// was usable though Verdict is "".
func (s *Set) Decoded() (events, omitted uint64) {
	t := s.total()
	return t.events, t.omitted
}

// Verdict returns, once the inputs were read, why none of them held
// anything usable, in a few words naming what they held ("the input is
// empty", "every one of its 3 records was rejected"), or "" when some
// record was usable, or was left out on purpose (a CloudTrail file of
// management events: its notes say so). A reader of whole inputs
// (hotkeyd analyze) fails on a non-empty Verdict, so that a script does
// not take an input it could not read for one without hot keys.
func (s *Set) Verdict() string {
	t := s.total()
	if t.events > 0 || t.omitted > 0 {
		return ""
	}
	var parts []string
	switch {
	case t.inputs == 0:
		return "no input was read"
	case t.empty == t.inputs && t.inputs == 1:
		return "the input is empty"
	case t.empty == t.inputs:
		return "every input is empty"
	case t.empty > 0:
		parts = append(parts, plural.Count(t.empty, "empty input"))
	}
	const known = "JSON lines, CloudTrail, DynamoDB stream records"
	switch {
	case t.unknown > 0 && t.unknown == t.inputs-t.empty && t.inputs == 1:
		return "not in a format hotkeyd reads (" + known + ")"
	case t.unknown > 0:
		parts = append(parts, plural.Count(t.unknown, "input")+" in no format hotkeyd reads ("+known+")")
	}
	if n := t.rejected; n > 0 && t.unknown == 0 {
		parts = append(parts, fmt.Sprintf("every one of its %s was rejected", plural.Count(int(n), "record")))
	}
	if len(parts) == 0 {
		return "no record in the input"
	}
	return strings.Join(parts, "; ")
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
type jsonLines struct {
	opts jsonl.Options

	mu sync.Mutex
	t  tally
}

func (*jsonLines) Format() string { return "jsonl" }

// Sniff accepts anything: JSON lines is the format of last resort, whose
// reader says line by line what it could not use.
func (*jsonLines) Sniff([]byte) bool { return true }

func (j *jsonLines) Decode(ctx context.Context, in *input.Input, sink traffic.Sink) error {
	return j.DecodePart(ctx, in, Part{Name: in.Name}, sink)
}

// Lines is true for an input that starts like a JSON line: it may be cut
// before any line. An empty input, or one in no format hotkeyd reads, is
// read whole, so that Verdict can say so.
func (*jsonLines) Lines(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	return len(head) > 0 && head[0] == '{'
}

func (j *jsonLines) DecodePart(ctx context.Context, r io.Reader, p Part, sink traffic.Sink) error {
	opts := j.opts
	opts.LinesBefore = p.LinesBefore
	if p.Again {
		opts.Reporter = traffic.NopReporter{}
	}
	// A whole input (not a part cut at a line) says what it starts with.
	in, whole := r.(*input.Input)
	var head []byte
	if whole {
		head = bytes.TrimLeft(in.Head(), " \t\r\n")
	}
	c, err := jsonl.ReadAll(ctx, r, p.Name, sink, opts)
	if p.Again {
		return err // counted when it was read first
	}
	// What no format claims and does not even start like a JSON line is
	// not a format hotkeyd reads (a binary file, a document).
	unknown := len(head) > 0 && head[0] != '{'
	j.mu.Lock()
	defer j.mu.Unlock()
	if p.LinesBefore == nil {
		j.t.inputs++ // the input's first part, or the whole input
	}
	switch {
	case whole && len(head) == 0 && c.Events == 0 && c.Rejected == 0:
		j.t.empty++
	case unknown && c.Events == 0:
		j.t.unknown++
	}
	j.t.records += uint64(c.Events + c.Rejected)
	j.t.events += uint64(c.Events)
	j.t.rejected += uint64(c.Rejected)
	return err
}

func (j *jsonLines) tally() tally {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.t
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

func (c *cloudTrail) Decode(ctx context.Context, in *input.Input, sink traffic.Sink) error {
	st, err := c.dec.Decode(ctx, in, in.Name, sink)
	c.mu.Lock()
	c.inputs++
	c.stats.Add(st)
	c.mu.Unlock()
	return err
}

func (c *cloudTrail) tally() tally {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	return tally{inputs: c.inputs, records: st.Records, events: st.Events + st.Throttled,
		omitted: st.Ignored + st.Failed, rejected: st.Rejected}
}

// Notes says how CloudTrail inputs were counted, once any was read.
func (c *cloudTrail) Notes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inputs == 0 {
		return nil
	}
	st := c.stats
	notes := []string{"CloudTrail records no item size or consumed capacity: units from CloudTrail input are 1 per item read or written (2 in a transaction, which reads or writes each item twice), not RCU/WCU."}
	if st.Throttled > 0 || st.Failed > 0 {
		notes = append(notes, fmt.Sprintf("CloudTrail: %d throttled and %d otherwise failed calls are not counted as traffic; throttled ones are ranked in throttled_keys.", st.Throttled, st.Failed))
	}
	if st.AmbiguousReasons > 0 {
		notes = append(notes, fmt.Sprintf("CloudTrail: %s throttled with an errorMessage naming several throttling reasons that fit %s; counted throttled without a reason, the cause judged from how the throttled calls spread over the keys.",
			plural.Count(st.AmbiguousReasons, "item was", "items were"), plural.Noun(st.AmbiguousReasons, "it", "them")))
	}
	if len(st.NoSchema) > 0 {
		notes = append(notes, fmt.Sprintf("CloudTrail: no key schema for %s, so keys were counted whole (all attributes); give one with --key-schema TABLE=PK[,SK] or the config's tables section.", strings.Join(st.NoSchema, ", ")))
	}
	return notes
}

// streamRecords reads dumps of DynamoDB stream records: Lambda events,
// get-records output, Kinesis Data Streams for DynamoDB payloads and
// their envelopes, one per line or not (package streams). One decoder
// serves every input, so that a record found in two inputs counts once and
// a missing key schema is said once.
type streamRecords struct {
	dec *streamrecord.DumpDecoder

	mu     sync.Mutex
	inputs int
	stats  streamrecord.DumpStats
}

func (*streamRecords) Format() string { return "stream-records" }

func (*streamRecords) Sniff(head []byte) bool { return streamrecord.SniffDump(head) }

func (s *streamRecords) Decode(ctx context.Context, in *input.Input, sink traffic.Sink) error {
	st, err := s.dec.Decode(ctx, in, in.Name, sink)
	s.mu.Lock()
	s.inputs++
	s.stats.Add(st)
	s.mu.Unlock()
	return err
}

func (s *streamRecords) tally() tally {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	return tally{inputs: s.inputs, records: st.Records, events: st.Events,
		omitted: st.TTLDeletes + st.Duplicates, rejected: st.Rejected}
}

// Notes says how stream records were counted, once any input was read.
func (s *streamRecords) Notes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inputs == 0 {
		return nil
	}
	st := s.stats
	var notes []string
	if st.Unsized > 0 {
		notes = append(notes, fmt.Sprintf("Stream records: %d of %s %s no SizeBytes and %s 1 unit each; the others count one WCU per started KB of SizeBytes (keys and images: an estimate of the item size).",
			st.Unsized, plural.Count(st.Events, "write"), plural.Noun(st.Unsized, "carries", "carry"), plural.Noun(st.Unsized, "counts", "count")))
	}
	if st.TTLDeletes > 0 {
		notes = append(notes, fmt.Sprintf("Stream records: %s by Time to Live (userIdentity dynamodb.amazonaws.com) %s and %s not counted.", plural.Count(st.TTLDeletes, "delete"), plural.Noun(st.TTLDeletes, "is not a client write", "are not client writes"), plural.Noun(st.TTLDeletes, "is", "are")))
	}
	if st.Duplicates > 0 {
		notes = append(notes, fmt.Sprintf("Stream records: %s read twice (same table, eventID and sequence number) counted once.", plural.Count(st.Duplicates, "record")))
	}
	if st.NoTable > 0 {
		notes = append(notes, fmt.Sprintf("Stream records: %s no table (get-records output carries none); give it with --table NAME.", plural.Count(st.NoTable, "record names", "records name")))
	}
	if n := streamrecord.GapNote(st.Incomplete); n != "" {
		notes = append(notes, n)
	}
	if len(st.NoSchema) > 0 {
		notes = append(notes, fmt.Sprintf("Stream records: no key schema for %s, so keys were counted whole (all attributes); give one with --key-schema TABLE=PK[,SK] or the config's tables section.", strings.Join(st.NoSchema, ", ")))
	}
	return notes
}
