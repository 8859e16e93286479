// Package ingest holds what the readers under it share with the daemon
// that runs them: Env, what a reader's constructor may take; Runner, which
// runs sources and stops them with a bounded drain; and Stats, the counts
// every decoder of whole inputs keeps. The readers themselves are its
// sub-packages; the event contract they produce is package traffic.
package ingest

import (
	"io"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Env is what a reader's constructor may take from the daemon that runs
// it: each reader package's Config has a NewSource(Env) method, so that the
// config file's table of source types builds any reader the same way.
type Env struct {
	// Log is the daemon's logger; the reader names its own child.
	Log *zap.Logger
	// Reporter is told about rejected input and read errors.
	Reporter traffic.Reporter
	// Registerer takes the reader's own metrics; nil registers none.
	Registerer prometheus.Registerer
	// Tables are the key schemas of the config file, for readers whose
	// records do not say which attribute is the partition key.
	Tables map[string]traffic.KeySchema
	// Stdin is the process's standard input, for a reader of "-".
	Stdin io.Reader
	// Progress takes how far the reader has read in event time, per lane
	// (a shard, a followed file, a delivery folder); nil keeps none.
	Progress *traffic.Progress
	// Window is the window the events count in: a stream shard taken
	// over without a position is read back this far (zero: all of it).
	Window time.Duration
}
