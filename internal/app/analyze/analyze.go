// Package analyze is hotkeyd analyze: it reads whole inputs (JSON lines,
// CloudTrail, DynamoDB stream records, compressed or not; package formats)
// on every core (package parallel) into one window that never expires,
// evaluates it once (detect.Evaluate) and writes one report: as text, as
// JSON, or as one self-contained HTML page with charts of the traffic
// across the input. It is the offline twin of the daemon's pipeline, with
// the same numbers.
package analyze

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/formats"
	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/ingest/parallel"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// Config is what one analysis reads and how it reports.
type Config struct {
	// Files are the inputs; "-" is Stdin.
	Files []string
	// Settings are the detector's; Settings.Top keys per class are listed.
	Settings detect.Settings
	// Schemas are the key schemas of CloudTrail tables and of stream
	// records' tables.
	Schemas map[string]ingest.KeySchema
	// Table is the table of stream records that name none (formats.Config).
	Table string
	// Fields are the JSON-lines member names.
	Fields jsonl.Fields
	// Masker masks the keys of the report, and the input quoted on
	// Stderr; nil shows them as they are.
	Masker *export.KeyMasker
	// MaxTables bounds the tables and indexes counted (the config's
	// max_tables); zero means sketch.DefaultMaxTables.
	MaxTables int
	// Format is "text", "json" or "html" (one self-contained page with
	// the live page's views and charts, export.WriteHTMLReport).
	Format string
	// Version is written into the HTML report.
	Version string
	// Log receives the readers' hints (a table without a key schema).
	Log *zap.Logger
	// Workers is the number of inputs' parts read side by side
	// (package parallel); 0 means GOMAXPROCS.
	Workers int
	// Stdin, Stdout and Stderr are the process's streams: the report goes
	// to Stdout; progress, rejected lines and file errors to Stderr.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Run reads every file and writes the report. A file that cannot be read
// is named on Stderr and the others are still reported; Run then returns
// ErrUnreadable. When every input was read but nothing in them was usable,
// it says so on Stderr and returns ErrNothingUsable.
func Run(ctx context.Context, cfg Config) error {
	scfg := sketch.DefaultConfig()
	scfg.Window = 0
	scfg.Tracked = max(scfg.Tracked, cfg.Settings.Top)
	scfg.MaxTables = cfg.MaxTables
	var mask ingest.Masker
	if cfg.Masker != nil {
		mask = cfg.Masker
	}
	rep := input.NewTextReporter(cfg.Stderr, mask)
	html := cfg.Format == "html"
	// A sketch.Store keeps nothing of a batch once Put returns: decoders
	// recycle theirs, but for the HTML report, whose recorder keeps keys.
	inputs := formats.New(formats.Config{Schemas: cfg.Schemas, Table: cfg.Table, Fields: cfg.Fields, Log: cfg.Log, Reporter: rep, Recycle: !html})
	// Every Event is checked once more before it is counted, as in the
	// daemon (ingest.Checked); passed counts the Events that got through.
	var passed atomic.Uint64
	checked := func(store *sketch.Store, next ingest.Sink) *checkedStore {
		return &checkedStore{store: store, check: ingest.Checked(ingest.SinkFunc(func(ctx context.Context, batch []ingest.Event) error {
			passed.Add(uint64(len(batch)))
			return next.Put(ctx, batch)
		}), rep)}
	}
	failed := 0
	fail := func(name string, err error) {
		fmt.Fprintf(cfg.Stderr, "hotkeyd: %s: %v\n", name, bareError(err))
		failed++
	}
	var checkedResult *checkedStore
	var rec *recorder
	if html {
		// The charts' points are recorded by event time on the way to one
		// store: the HTML report reads its inputs one after the other.
		store, err := sketch.NewStore(scfg, time.Now)
		if err != nil {
			return err
		}
		rec = newRecorder(store, max(2*cfg.Settings.Top, 20), min(scfg.MaxTables, maxSeriesTables))
		checkedResult = checked(store, rec)
		for _, name := range cfg.Files {
			if err := inputs.ReadFile(ctx, name, cfg.Stdin, checkedResult, cfg.Stderr); err != nil {
				fail(name, err)
			}
		}
	} else {
		var err error
		checkedResult, err = parallel.Read(ctx, parallel.Config[*checkedStore]{
			Formats: inputs, Stdin: cfg.Stdin, Progress: cfg.Stderr, Reorder: scfg.RecentSeconds, Workers: cfg.Workers,
			New: func() (*checkedStore, error) {
				store, err := sketch.NewStore(scfg, time.Now)
				if err != nil {
					return nil, err
				}
				return checked(store, store), nil
			},
			Merge:  func(dst, src *checkedStore) error { return dst.store.Merge(src.store) },
			Failed: fail,
		}, cfg.Files...)
		if err != nil {
			return err
		}
	}
	rep.Summary()
	nothing := ""
	if failed == 0 {
		nothing = inputs.Verdict()
		if events, omitted := inputs.Decoded(); nothing == "" && events > 0 && omitted == 0 && passed.Load() == 0 {
			// The readers made events, and the check refused every one.
			nothing = "every event it held was rejected"
		}
		if nothing != "" {
			if reasons := rep.Reasons(); reasons != "" {
				nothing += "; skipped: " + reasons
			}
			fmt.Fprintf(cfg.Stderr, "hotkeyd: nothing usable in %s: %s\n", strings.Join(cfg.Files, ", "), nothing)
		}
	}

	result := detect.Evaluate(checkedResult.store.Snapshot(), cfg.Settings)
	result.Rejected = rep.Rejected()
	result.Notes = inputs.Notes()
	var series report.Series
	if rec != nil {
		series = rec.series(result)
	}
	if cfg.Masker != nil {
		result = cfg.Masker.MaskReport(result)
		series = cfg.Masker.MaskSeries(series)
	}
	var err error
	switch cfg.Format {
	case "json":
		enc := json.NewEncoder(cfg.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(result)
	case "html":
		err = export.WriteHTMLReport(cfg.Stdout, export.HTMLReport{Report: result, Series: series},
			"hotkeyd analyze: "+strings.Join(cfg.Files, ", "), cfg.Version)
	default:
		err = export.WriteTextReport(cfg.Stdout, result)
	}
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	switch {
	case failed > 0:
		return ErrUnreadable
	case nothing != "":
		return ErrNothingUsable
	}
	return nil
}

// checkedStore is the store of one part of the inputs (package parallel),
// behind the daemon's last check of every Event (ingest.Checked).
type checkedStore struct {
	store *sketch.Store
	check ingest.Sink
}

// Put checks the batch's Events and counts those that pass.
func (c *checkedStore) Put(ctx context.Context, batch []ingest.Event) error {
	return c.check.Put(ctx, batch)
}

// maxSeriesTables bounds the tables the HTML report has charts of; the
// report lists the others without.
const maxSeriesTables = 100

// ErrUnreadable is Run's error when some inputs could not be read; each was
// named on Stderr already.
var ErrUnreadable = errors.New("some inputs could not be read")

// ErrNothingUsable is Run's error when nothing in the inputs was usable
// (empty, in no format hotkeyd reads, every record rejected); one line on
// Stderr said what they held. A script must not take such an input for one
// without hot keys. Records left out on purpose (a CloudTrail file of
// management events, Time to Live deletes) are not this: the report's
// notes say why they were not counted.
var ErrNothingUsable = errors.New("nothing in the input was usable")

// bareError drops the file name an *fs.PathError repeats: every file error
// is printed as "hotkeyd: NAME: error".
func bareError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// KeySchemas merges the config file's tables with --key-schema values
// (TABLE=PK[,SK]); a value given wins over the file for the same table.
func KeySchemas(tables map[string]ingest.KeySchema, flags []string) (map[string]ingest.KeySchema, error) {
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
