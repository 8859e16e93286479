package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/internal/app/daemon"
	"github.com/hotkeyd/hotkeyd/internal/logging"
)

// runDaemon runs the long-lived daemon (run), or the same daemon on the demo
// workload (demo), until ctx is done or SIGINT/SIGTERM arrives; SIGHUP
// reloads the configuration (package daemon). With --config.check it
// builds everything, starts nothing and says so.
func runDaemon(ctx context.Context, f *flags, demo bool, io stdio) int {
	var reader config.Reader // reads the file again on a reload
	cfg, err := loadConfigWith(&reader, f, !demo)
	if err != nil {
		printError(io.stderr, err)
		return 1
	}
	log, err := logging.New(io.stderr, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: %v\n", err)
		return 1
	}
	defer func() { _ = log.Sync() }()
	if f.check {
		log = zap.NewNop() // the sources built say nothing
	}
	d, err := daemon.New(cfg, daemonOptions(f, demo, io, log, func() (config.Config, error) { return loadConfigWith(&reader, f, !demo) }))
	switch {
	case err != nil && f.check:
		printError(io.stderr, err)
		return 1
	case err != nil:
		log.Error("cannot start", zap.Error(err))
		return 1
	case f.check:
		for _, msg := range cfg.Deprecated {
			fmt.Fprintf(io.stderr, "hotkeyd: deprecated: %s\n", msg)
		}
		return printValid(f, !demo, io)
	}
	for _, msg := range cfg.Deprecated {
		log.Warn("deprecated configuration", zap.String("detail", msg))
	}
	// Signals are caught from here on, before the address is announced
	// and readiness set: a SIGTERM sent as soon as the process is up is a
	// clean stop too, not the default action's kill. SIGHUP reloads the
	// configuration, as Prometheus does (its default action would kill
	// the daemon mid-batch).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := d.Run(ctx, sigs); err != nil {
		log.Error("stopped on error", zap.Error(err))
		return 1
	}
	return 0
}

// daemonOptions are the daemon's settings from the flags; load reads the
// configuration again for a reload.
func daemonOptions(f *flags, demo bool, io stdio, log *zap.Logger, load func() (config.Config, error)) daemon.Options {
	return daemon.Options{
		Log: log, Demo: demo, Load: load, Stdin: io.stdin, Stdout: io.stdout, Version: buildVersion(),
		Web: daemon.Web{
			ConfigFile:     f.webConfig,
			MaxConnections: f.maxConns, MaxConnectionsPerClient: perClient(f.maxConnsPerClient),
			ReadTimeout: f.readTimeout, WriteTimeout: f.writeTimeout, IdleTimeout: f.idle,
			Lifecycle: f.lifecycle, Ingest: f.enableIngest, IngestRate: f.ingestRate, IngestBurst: f.ingestBurst,
		},
	}
}

// perClient turns the --web.max-connections-per-client flag, where 0 means
// no cap, into export.ServerConfig's, where 0 means the default.
func perClient(flag int) int {
	if flag <= 0 {
		return -1
	}
	return flag
}
