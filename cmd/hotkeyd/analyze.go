package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/ingest/parallel"
	"github.com/hotkeyd/hotkeyd/internal/app/analyze"
	"github.com/hotkeyd/hotkeyd/internal/logging"
)

// runAnalyze implements hotkeyd analyze (package analyze); with
// --config.check it checks the configuration and the flags and reads
// nothing.
func runAnalyze(f *flags, io stdio) int {
	// The progress line and the reporter write stderr from two goroutines.
	io.stderr = input.NewSyncWriter(io.stderr)
	cfg, err := loadConfig(f, false)
	if err != nil {
		printError(io.stderr, err)
		return 1
	}
	schemas, err := analyze.KeySchemas(cfg.KeySchemas(), f.keySchemas)
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: --key-schema: %v\n", err)
		return 2
	}
	masker, err := export.NewKeyMasker(cfg.Keys, cfg.KeyHashSecret)
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: %v\n", err)
		return 1
	}
	if f.check {
		return printValid(f, false, io)
	}
	if len(f.files) == 0 {
		fmt.Fprintln(io.stderr, "hotkeyd: analyze: name at least one FILE (\"-\" is stdin) (see hotkeyd analyze --help)")
		return 2
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(parallel.GCPercent)
	}
	err = analyze.Run(context.Background(), analyze.Config{
		Files: f.files, Pipeline: cfg.Pipeline(), Schemas: schemas, Table: f.table, Fields: cfg.JSONLFields(), Masker: masker,
		Format: f.format, NoIncidents: !f.incidents, Version: buildVersion(), Log: analyzeLogger(f, io.stderr), Stdin: io.stdin, Stdout: io.stdout, Stderr: io.stderr,
	})
	if err != nil && !errors.Is(err, analyze.ErrUnreadable) && !errors.Is(err, analyze.ErrNothingUsable) {
		fmt.Fprintf(io.stderr, "hotkeyd: %v\n", err)
	}
	if err != nil {
		return 1
	}
	return 0
}

// analyzeLogger is the logger of analyze's readers, on stderr in the
// --log.format chosen: warnings and worse at the default level, so a hint
// such as a missing key schema reaches the person running it without the
// daemon's info lines; everything with --log.level=debug.
func analyzeLogger(f *flags, w io.Writer) *zap.Logger {
	level := f.logLevel
	if level == "" || level == "info" {
		level = "warn"
	}
	log, err := logging.New(w, level, f.logFormat)
	if err != nil {
		return zap.NewNop()
	}
	return log.Named("analyze")
}
