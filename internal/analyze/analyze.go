// Package analyze is hotkeyd analyze: it reads whole inputs (JSON lines,
// CloudTrail, DynamoDB stream records, compressed or not; package formats) into one window that
// never expires, evaluates it once (detect.Evaluate) and writes one report,
// as text, as JSON, or as one self-contained HTML page with charts of the
// traffic across the input. It is the offline twin of the daemon's pipeline, with
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
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/formats"
	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
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
	// Masker masks the keys of the report; nil shows them as they are.
	Masker *export.KeyMasker
	// Format is "text", "json" or "html" (one self-contained page with
	// the live page's views and charts, export.WriteHTMLReport).
	Format string
	// Version is written into the HTML report.
	Version string
	// Log receives the readers' hints (a table without a key schema).
	Log *zap.Logger
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
	store, err := sketch.NewStore(scfg, time.Now)
	if err != nil {
		return err
	}
	rep := input.NewTextReporter(cfg.Stderr)
	inputs := formats.New(formats.Config{Schemas: cfg.Schemas, Table: cfg.Table, Fields: cfg.Fields, Log: cfg.Log, Reporter: rep})
	var sink ingest.Sink = store
	var rec *recorder
	if cfg.Format == "html" {
		// The charts' points, recorded on the way to the store.
		rec = newRecorder(store, max(2*cfg.Settings.Top, 20), min(scfg.MaxTables, maxSeriesTables))
		sink = rec
	}
	failed := 0
	for _, name := range cfg.Files {
		if err := inputs.ReadFile(ctx, name, cfg.Stdin, sink, cfg.Stderr); err != nil {
			fmt.Fprintf(cfg.Stderr, "hotkeyd: %s: %v\n", name, bareError(err))
			failed++
		}
	}
	rep.Summary()
	nothing := ""
	if failed == 0 {
		if nothing = inputs.Verdict(); nothing != "" {
			if reasons := rep.Reasons(); reasons != "" {
				nothing += "; skipped: " + reasons
			}
			fmt.Fprintf(cfg.Stderr, "hotkeyd: nothing usable in %s: %s\n", strings.Join(cfg.Files, ", "), nothing)
		}
	}

	result := detect.Evaluate(store.Snapshot(), cfg.Settings)
	result.Rejected = rep.Rejected()
	result.Notes = inputs.Notes()
	var series report.Series
	if rec != nil {
		series = rec.series(result, cfg.Settings.Threshold)
	}
	if cfg.Masker != nil {
		result = cfg.Masker.MaskReport(result)
		series = cfg.Masker.MaskSeries(series)
	}
	switch cfg.Format {
	case "json":
		enc := json.NewEncoder(cfg.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(result)
	case "html":
		err = export.WriteHTMLReport(cfg.Stdout, export.HTMLReport{Report: result, Series: series},
			"hotkeyd analyze: "+strings.Join(cfg.Files, ", "), cfg.Version)
	default:
		err = export.WriteTextReport(cfg.Stdout, result, cfg.Settings.Threshold)
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
