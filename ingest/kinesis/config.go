// Package kinesis reads Kinesis Data Streams for DynamoDB, which teams pick
// over DynamoDB Streams for longer retention and more consumers: every
// DynamoDB change record in the stream becomes a write Event of its table
// and partition key. It polls GetRecords per shard as the Kinesis Client
// Library does: shards are listed with ListShards and read parents before
// children (a merge's two parents both), each shard is checkpointed (a
// file per shard, or a lease table shared by replicas: package lease), and
// every AWS error has its recovery (expired iterators re-acquired,
// throttling backed off, a deleted stream or shard given up).
//
// A stream may carry several tables' records; each record names its
// table. Kinesis delivers at least once: a record delivered again (same
// table and eventID) is counted once within the last records read
// (package streams decodes the records and keeps them). Creation times
// come in milliseconds or microseconds, as the table's stream is set.
package kinesis

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
)

// SourceName is the source label of the Events, rejections and errors.
const SourceName = "kinesis"

// Start positions of a stream hotkeyd has no checkpoint of.
const (
	// StartLatest reads only records written after hotkeyd started.
	StartLatest = "latest"
	// StartTrimHorizon reads from the oldest record the stream holds.
	StartTrimHorizon = "trim_horizon"
)

// Config says which streams to read and how. It is also a sources entry
// of type kinesis in the config file: the yaml tags are its keys,
// DefaultConfig its defaults.
type Config struct {
	// StreamARNs are the Kinesis streams to read, by ARN.
	StreamARNs []string `yaml:"stream_arns"`
	// Streams are Kinesis streams named in Region, for when their ARN is
	// not at hand (DescribeStreamSummary finds it).
	Streams []string `yaml:"streams"`
	// Region is the AWS region; empty means the SDK's default chain.
	Region string `yaml:"region"`
	// Endpoint overrides the Kinesis endpoint (an emulator).
	Endpoint string `yaml:"endpoint"`
	// Start is StartLatest (the default) or StartTrimHorizon, for a stream
	// without a checkpoint; shards that appear later are read from their
	// first record.
	Start string `yaml:"start"`
	// CheckpointDir holds one checkpoint file per shard. Empty keeps them
	// in memory: a restart starts over from Start. Not with LeaseTable.
	CheckpointDir string `yaml:"checkpoint_dir"`
	// LeaseTable names a DynamoDB table, created on first use, through
	// which every reader using it splits the shards (package lease); the
	// checkpoints then live in it.
	LeaseTable string `yaml:"lease_table"`
	// WorkerID names this reader in the lease table (default host name
	// and process id).
	WorkerID string `yaml:"worker_id"`
	// FailoverTime is how long a lease's counter must stand still before
	// another reader takes it (default 10 s).
	FailoverTime time.Duration `yaml:"failover_time"`
	// DynamoDBEndpoint overrides the endpoint of the lease table's
	// DynamoDB (an emulator).
	DynamoDBEndpoint string `yaml:"dynamodb_endpoint"`
	// PollInterval is the least time between two GetRecords calls on a
	// shard (default 1 s, the Kinesis Client Library's: a shard serves 5
	// calls per second to all its consumers together). A call that
	// returns a full batch is followed at once.
	PollInterval time.Duration `yaml:"poll_interval"`
	// ListInterval is how often each stream's shards are listed again to
	// find new ones (default 30 s); a finished shard triggers a listing.
	ListInterval time.Duration `yaml:"list_interval"`
	// CheckpointInterval is the least time between two checkpoint writes
	// of a shard while records flow (default 1 s).
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	// MaxBackoff caps the backoff after errors (default 30 s).
	MaxBackoff time.Duration `yaml:"max_backoff"`
	// CallTimeout bounds each AWS call (default 10 s).
	CallTimeout time.Duration `yaml:"call_timeout"`

	// Tables are the key schemas of the tables whose keys have two
	// attributes; in the config file, the top-level tables.
	Tables map[string]ingest.KeySchema `yaml:"-"`
	// BatchLimit is GetRecords' Limit (default 10000, the maximum).
	BatchLimit int32 `yaml:"-"`
}

// DefaultConfig returns a Config with every tunable at its default and no
// stream to read.
func DefaultConfig() Config {
	return Config{
		Start:              StartLatest,
		PollInterval:       time.Second,
		ListInterval:       30 * time.Second,
		CheckpointInterval: time.Second,
		MaxBackoff:         30 * time.Second,
		CallTimeout:        10 * time.Second,
		BatchLimit:         10000,
	}
}

// withDefaults fills the zero tunables from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Start == "" {
		c.Start = d.Start
	}
	for _, p := range []struct{ v, def *time.Duration }{
		{&c.PollInterval, &d.PollInterval}, {&c.ListInterval, &d.ListInterval},
		{&c.CheckpointInterval, &d.CheckpointInterval}, {&c.MaxBackoff, &d.MaxBackoff}, {&c.CallTimeout, &d.CallTimeout},
	} {
		if *p.v <= 0 {
			*p.v = *p.def
		}
	}
	if c.BatchLimit <= 0 || c.BatchLimit > 10000 {
		c.BatchLimit = d.BatchLimit
	}
	return c
}

// Validate reports the first setting that cannot work, naming its key.
// Zero tunables mean their defaults.
func (c *Config) Validate() error {
	if len(c.StreamARNs) == 0 && len(c.Streams) == 0 {
		return errors.New("stream_arns: one of stream_arns or streams is required")
	}
	for i, a := range c.StreamARNs {
		if _, ok := streamName(a); !ok {
			return fmt.Errorf("stream_arns[%d]: not a Kinesis stream ARN (arn:aws:kinesis:REGION:ACCOUNT:stream/NAME): %q", i, a)
		}
	}
	for i, n := range c.Streams {
		if n == "" || strings.ContainsAny(n, ":/") {
			return fmt.Errorf("streams[%d]: not a stream name: %q (an ARN goes in stream_arns)", i, n)
		}
	}
	for key, e := range map[string]string{"endpoint": c.Endpoint, "dynamodb_endpoint": c.DynamoDBEndpoint} {
		if e == "" {
			continue
		}
		if u, err := url.Parse(e); err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("%s: not an absolute URL: %q", key, e)
		}
	}
	switch c.Start {
	case "", StartLatest, StartTrimHorizon:
	default:
		return fmt.Errorf("start: must be %s or %s, got %q", StartLatest, StartTrimHorizon, c.Start)
	}
	for key, d := range map[string]time.Duration{
		"poll_interval": c.PollInterval, "list_interval": c.ListInterval, "checkpoint_interval": c.CheckpointInterval,
		"max_backoff": c.MaxBackoff, "call_timeout": c.CallTimeout,
	} {
		if d < 0 {
			return fmt.Errorf("%s: must be positive, got %s", key, d)
		}
	}
	if c.LeaseTable == "" {
		switch {
		case c.WorkerID != "":
			return errors.New("worker_id: only used with lease_table")
		case c.FailoverTime != 0:
			return errors.New("failover_time: only used with lease_table")
		case c.DynamoDBEndpoint != "":
			return errors.New("dynamodb_endpoint: only used with lease_table")
		}
		return nil
	}
	if c.CheckpointDir != "" {
		return errors.New("checkpoint_dir: not used with lease_table, which keeps the checkpoints")
	}
	if c.FailoverTime != 0 && c.FailoverTime < lease.MinFailoverTime {
		return fmt.Errorf("failover_time: %s is below the minimum %s", c.FailoverTime, lease.MinFailoverTime)
	}
	if err := lease.CheckTableName(c.LeaseTable); err != nil {
		return fmt.Errorf("lease_table: %w", err)
	}
	return c.leaseConfig().Validate()
}

// LeaseTableName returns the lease table the reader joins, or "": two
// sources of one process must not join the same table as one worker.
func (c *Config) LeaseTableName() string { return c.LeaseTable }

// NewSource builds the reader of a sources entry of type kinesis, with the
// config file's key schemas, and registers its metrics.
func (c *Config) NewSource(env ingest.Env) (ingest.Source, error) {
	cfg := *c
	cfg.Tables = env.Tables
	return New(cfg, env.Log, env.Reporter, env.Registerer)
}

// leaseConfig returns the lease coordinator's settings.
func (c Config) leaseConfig() lease.Config {
	start := lease.TrimHorizon
	if c.Start == "" || c.Start == StartLatest {
		start = lease.Latest
	}
	return lease.Config{Table: c.LeaseTable, WorkerID: c.WorkerID, FailoverTime: c.FailoverTime, Start: start, Source: SourceName}
}

// streamName returns the name of a Kinesis stream's ARN.
func streamName(arn string) (string, bool) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "kinesis" {
		return "", false
	}
	name, ok := strings.CutPrefix(parts[5], "stream/")
	return name, ok && name != "" && !strings.Contains(name, "/")
}
