package main

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
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/formats"
	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// runAnalyze implements hotkeyd analyze: every file into one window that
// never expires, then one report. A file that cannot be read is named on
// stderr and the others are still reported; the exit status is then 1. It
// is 1 too when nothing in the input was usable (empty, in no format it
// reads, every record rejected), with one line saying what it held.
func runAnalyze(f *flags, io stdio) int {
	// The progress line and the reporter write stderr from two goroutines.
	io.stderr = input.NewSyncWriter(io.stderr)
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
	rep := input.NewTextReporter(io.stderr)
	inputs := formats.New(formats.Config{Schemas: schemas, Table: f.table, Fields: jsonlFields(cfg), Log: analyzeLogger(f, io.stderr), Reporter: rep})
	status := 0
	for _, name := range f.files {
		if err := inputs.ReadFile(ctx, name, io.stdin, store, io.stderr); err != nil {
			fmt.Fprintf(io.stderr, "hotkeyd: %s: %v\n", name, bareError(err))
			status = 1
		}
	}
	rep.Summary()
	if why := inputs.Verdict(); why != "" && status == 0 {
		if reasons := rep.Reasons(); reasons != "" {
			why += "; skipped: " + reasons
		}
		fmt.Fprintf(io.stderr, "hotkeyd: nothing usable in %s: %s\n", strings.Join(f.files, ", "), why)
		status = 1
	}

	settings := cfg.detectSettings()
	settings.Top = f.top
	report := detect.Evaluate(store.Snapshot(), settings)
	report.Rejected = rep.Rejected()
	report.Notes = inputs.Notes()
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
