// Package analyze is hotkeyd analyze: it reads whole inputs (JSON lines,
// CloudTrail, DynamoDB stream records, compressed or not; package formats)
// on every core (package parallel) into one window that never expires,
// evaluates it once (detect.Evaluate) and writes one report, as JSON or as
// text. It is the offline twin of the daemon's pipeline, with
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
	// Format is "json" or "text".
	Format string
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
	// A sketch.Store keeps nothing of a batch once Put returns: decoders
	// recycle theirs.
	inputs := formats.New(formats.Config{Schemas: cfg.Schemas, Table: cfg.Table, Fields: cfg.Fields, Log: cfg.Log, Reporter: rep, Recycle: true})
	// Every Event is checked once more before it is counted, as in the
	// daemon (ingest.Checked); passed counts the Events that got through.
	var passed atomic.Uint64
	newPart := func() (*checkedStore, error) {
		store, err := sketch.NewStore(scfg, time.Now)
		if err != nil {
			return nil, err
		}
		return &checkedStore{store: store, check: ingest.Checked(ingest.SinkFunc(func(ctx context.Context, batch []ingest.Event) error {
			passed.Add(uint64(len(batch)))
			return store.Put(ctx, batch)
		}), rep)}, nil
	}
	failed := 0
	result, err := parallel.Read(ctx, parallel.Config[*checkedStore]{
		Formats: inputs, Stdin: cfg.Stdin, Progress: cfg.Stderr, Reorder: scfg.RecentSeconds, Workers: cfg.Workers,
		New:   newPart,
		Merge: func(dst, src *checkedStore) error { return dst.store.Merge(src.store) },
		Failed: func(name string, err error) {
			fmt.Fprintf(cfg.Stderr, "hotkeyd: %s: %v\n", name, bareError(err))
			failed++
		},
	}, cfg.Files...)
	if err != nil {
		return err
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

	report := detect.Evaluate(result.store.Snapshot(), cfg.Settings)
	report.Rejected = rep.Rejected()
	report.Notes = inputs.Notes()
	if cfg.Masker != nil {
		report = cfg.Masker.MaskReport(report)
	}
	if cfg.Format == "json" {
		enc := json.NewEncoder(cfg.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	} else {
		err = export.WriteTextReport(cfg.Stdout, report, cfg.Settings.Threshold)
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
