package main

import (
	"context"
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/internal/app/review"
)

// reportFlags are hotkeyd report's own flags.
type reportFlags struct {
	since  time.Duration
	format string
	table  string
}

// defineReport declares hotkeyd report's flags.
func (f *flags) defineReport(c *kingpin.CmdClause) {
	f.defineConfig(c, "Configuration file (YAML), for how keys are shown (keys, key_hash_secret) and history.path; without one, the defaults.", "")
	c.Flag("history.path", "Directory of the history database the daemon writes (its --history.path). Overrides history.path in the file.").
		Default(config.Default().History.Path).IsSetByUser(&f.historyPathSet).StringVar(&f.historyPath)
	c.Flag("since", "Span reviewed, up to now (24h for the daily review, 168h for the weekly one).").Default("24h").DurationVar(&f.report.since)
	enumFlag(c.Flag("format", "Output format: text or json."), &f.report.format, "text", "text", "json")
	c.Flag("table", "Review one table (and its indexes) only.").PlaceHolder("NAME").StringVar(&f.report.table)
}

// runReport implements hotkeyd report (package review).
func runReport(ctx context.Context, f *flags, io stdio) int {
	cfg, err := loadConfig(f, false)
	if err != nil {
		printError(io.stderr, err)
		return 1
	}
	masker, err := export.NewKeyMasker(cfg.Keys, cfg.KeyHashSecret)
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: %v\n", err)
		return 1
	}
	if f.report.since <= 0 {
		fmt.Fprintln(io.stderr, "hotkeyd: report: --since must be positive")
		return 2
	}
	err = review.Run(ctx, review.Config{Dir: cfg.History.Path, Since: f.report.since, Now: time.Now(), Table: f.report.table,
		Format: f.report.format, Masker: masker, Out: io.stdout})
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: report: %v\n", err)
		return 1
	}
	return 0
}
