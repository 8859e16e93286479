package shards

import (
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Reader is what the Source of a sharded-stream reader shows of its
// engine, the same for every service: its name, readiness, progress in
// event time, catch-up window and lease coordinator. A Source embeds the
// Reader of its engine (Engine.Reader).
type Reader struct{ e *Engine }

// Reader returns the engine's Reader.
func (e *Engine) Reader() Reader { return Reader{e} }

// Name returns the reader's source label.
func (r Reader) Name() string { return r.e.Source }

// SetProgress makes the reader report each shard's progress in event
// time to p (a lane per shard). Call it before Run.
func (r Reader) SetProgress(p *traffic.Progress) {
	p.Declare(r.e.Source, 0)
	r.e.Progress = p
}

// SetCatchUp sets how far back a shard taken over at LATEST from an
// earlier owner is read (Settings.CatchUp): the daemon's window.
func (r Reader) SetCatchUp(d time.Duration) { r.e.CatchUp = d }

// Coordinator returns the lease coordinator of a reader with a lease
// table, nil without: the daemon publishes its summary through it.
func (r Reader) Coordinator() *lease.Coordinator { return r.e.Coord }

// Ready returns nil while the reader works: not before its first
// successful call, not while its endpoint cannot be reached, not while
// every configured stream or table fails (one failing among working ones
// is counted in hotkeyd_source_errors_total only), not while the
// checkpoint folder cannot be written; with a lease table, not while the
// coordinator cannot read it or renew a lease it holds.
func (r Reader) Ready() error { return r.e.Ready() }

// NewSource builds a reader for the daemon with build, then gives it the
// daemon's progress and window: the road from a reader's config file
// entry (its Config.NewSource) to its Source.
func NewSource[S interface {
	traffic.Source
	SetProgress(*traffic.Progress)
	SetCatchUp(time.Duration)
}](env ingest.Env, build func() (S, error)) (traffic.Source, error) {
	src, err := build()
	if err != nil {
		return nil, err
	}
	src.SetProgress(env.Progress)
	src.SetCatchUp(env.Window)
	return src, nil
}

// Defaults returns log and rep, or for nil a logger and a reporter that
// discard.
func Defaults(log *zap.Logger, rep traffic.Reporter) (*zap.Logger, traffic.Reporter) {
	if log == nil {
		log = zap.NewNop()
	}
	if rep == nil {
		rep = traffic.NopReporter{}
	}
	return log, rep
}
