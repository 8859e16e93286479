package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// runAnalyze implements hotkeyd analyze: every file into one window that
// never expires, then one report. A file that cannot be read is named on
// stderr and the others are still reported; the exit status is then 1.
func runAnalyze(f *flags, io stdio) int {
	// The progress line and the reporter write stderr from two goroutines.
	io.stderr = &lockedWriter{w: io.stderr}
	cfg, err := loadConfig(f, false)
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: %v\n", err)
		return 1
	}
	if f.top <= 0 {
		fmt.Fprintf(io.stderr, "hotkeyd: --top: must be positive, got %d\n", f.top)
		return 2
	}
	schemas, err := keySchemas(cfg.Tables, f.keySchemas)
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: --key-schema: %v\n", err)
		return 2
	}
	scfg := sketch.DefaultConfig()
	scfg.Window = 0
	scfg.Tracked = max(scfg.Tracked, f.top)
	store, err := sketch.NewStore(scfg, time.Now)
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: %v\n", err)
		return 1
	}

	ctx := context.Background()
	rep := newAnalyzeReporter(io.stderr)
	state := &analyzeState{CloudTrail: cloudtrail.NewDecoder(schemas, analyzeLogger(f, io.stderr), rep)}
	status := 0
	for _, name := range f.files {
		if err := analyzeFile(ctx, name, io, state, schemas, jsonlFields(cfg), store, rep); err != nil {
			fmt.Fprintf(io.stderr, "hotkeyd: %s: %v\n", name, err)
			status = 1
		}
	}
	rep.summary()

	settings := cfg.detectSettings()
	settings.Top = f.top
	report := detect.Evaluate(store.Snapshot(), settings)
	report.Rejected = rep.rejected.Load()
	report.Notes = state.notes()
	if masker, err := export.NewKeyMasker(cfg.Keys, cfg.KeyHashSecret); err == nil {
		report = masker.MaskReport(report)
	}

	switch f.format {
	case "json":
		enc := json.NewEncoder(io.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	default:
		err = export.WriteTextReport(io.stdout, report, cfg.Threshold)
	}
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: write report: %v\n", err)
		return 1
	}
	return status
}

// analyzeFile reads one input whole into sink.
func analyzeFile(ctx context.Context, name string, io stdio, state *analyzeState, schemas map[string]ingest.KeySchema, fields jsonl.Fields, sink ingest.Sink, rep ingest.Reporter) error {
	var raw countingReader
	if name == "-" {
		raw.r = io.stdin
	} else {
		fh, err := os.Open(name)
		if err != nil {
			return bareError(err)
		}
		defer fh.Close()
		if st, err := fh.Stat(); err == nil && st.IsDir() {
			return errors.New("is a directory")
		}
		raw.r = fh
	}
	plain, closeFn, err := decompress(bufio.NewReaderSize(&raw, 1<<16))
	if err != nil {
		return err
	}
	defer closeFn()
	in := analyzeInput{Name: name, R: bufio.NewReaderSize(plain, 1<<20), Schemas: schemas, Fields: fields, State: state}
	_, decode, err := detectFormat(in)
	if err != nil {
		return err
	}
	counted := &countingSink{next: sink}
	stop := startProgress(io.stderr, name, &raw.n, &counted.n, progressEvery)
	defer stop()
	return bareError(decode(ctx, in, counted, rep))
}

// bareError drops the file name an *fs.PathError repeats: analyze prints
// every file error as "hotkeyd: NAME: error".
func bareError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// jsonlFields returns the field names of the config's first jsonl source:
// analyze reads the same logs the daemon follows.
func jsonlFields(cfg Config) jsonl.Fields {
	for _, s := range cfg.Sources {
		if s.Type == sourceJSONL {
			return s.Fields
		}
	}
	return jsonl.Fields{}
}

// keySchemas merges the config file's tables with --key-schema flags
// (TABLE=PK[,SK]); a flag wins over the file for the same table.
func keySchemas(tables map[string]ingest.KeySchema, flags []string) (map[string]ingest.KeySchema, error) {
	out := make(map[string]ingest.KeySchema, len(tables)+len(flags))
	for name, ks := range tables {
		out[name] = ks
	}
	for _, f := range flags {
		table, keys, ok := strings.Cut(f, "=")
		pk, sk, _ := strings.Cut(keys, ",")
		if !ok || table == "" || pk == "" || strings.Contains(sk, ",") {
			return nil, fmt.Errorf("%q: want TABLE=PK or TABLE=PK,SK", f)
		}
		out[table] = ingest.KeySchema{PartitionKey: pk, SortKey: sk}
	}
	return out, nil
}

// countingReader counts the bytes read through it, for the progress line.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// countingSink counts the Events passed through it, for the progress line.
type countingSink struct {
	next ingest.Sink
	n    atomic.Int64
}

func (c *countingSink) Put(ctx context.Context, batch []ingest.Event) error {
	c.n.Add(int64(len(batch)))
	return c.next.Put(ctx, batch)
}

// analyzeReporter counts rejected input for the report's rejected field and
// prints the first few reasons on stderr, so a person sees why lines were
// skipped without the terminal flooding.
type analyzeReporter struct {
	w        io.Writer
	rejected atomic.Uint64

	mu      sync.Mutex
	printed int
	reasons map[string]uint64
}

// maxRejectLines is how many rejected records analyze describes on stderr;
// the rest are only counted and summed up per reason at the end.
const maxRejectLines = 5

func newAnalyzeReporter(w io.Writer) *analyzeReporter {
	return &analyzeReporter{w: w, reasons: map[string]uint64{}}
}

// Reject implements ingest.Reporter.
func (r *analyzeReporter) Reject(source, reason string, err error) {
	r.rejected.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons[reason]++
	if r.printed < maxRejectLines {
		r.printed++
		fmt.Fprintf(r.w, "hotkeyd: skipped (%s): %v\n", reason, err)
	}
}

// Error implements ingest.Reporter.
func (r *analyzeReporter) Error(source, reason string, err error) {
	fmt.Fprintf(r.w, "hotkeyd: %s: %s: %v\n", source, reason, err)
}

// summary prints the rejected records per reason when some were not
// described one by one.
func (r *analyzeReporter) summary() {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.rejected.Load()
	if n <= uint64(r.printed) {
		return
	}
	reasons := make([]string, 0, len(r.reasons))
	for reason, c := range r.reasons {
		reasons = append(reasons, fmt.Sprintf("%s %d", reason, c))
	}
	sort.Strings(reasons)
	fmt.Fprintf(r.w, "hotkeyd: skipped %d records in all: %s\n", n, strings.Join(reasons, ", "))
}

// Check the seams at compile time.
var (
	_ ingest.Reporter = (*analyzeReporter)(nil)
	_ ingest.Sink     = (*countingSink)(nil)
)

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// analyzeLogger is the logger of analyze's readers, on stderr in the
// --log.format chosen: warnings and worse at the default level, so a hint
// such as a missing key schema reaches the person running it without the
// daemon's info lines; everything with --log.level=debug. A no-op logger
// when it cannot be built.
func analyzeLogger(f *flags, w io.Writer) *zap.Logger {
	level := f.logLevel
	if level == "" || level == "info" {
		level = "warn"
	}
	log, err := newLogger(w, level, f.logFormat)
	if err != nil {
		return zap.NewNop()
	}
	return log.Named("analyze")
}
