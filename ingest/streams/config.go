package streams

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
)

// Start positions for shards that have no checkpoint yet.
const (
	// StartLatest reads only records written after hotkeyd started.
	StartLatest = "latest"
	// StartTrimHorizon reads from the oldest record the stream still holds
	// (up to 24 hours back).
	StartTrimHorizon = "trim_horizon"
)

// Config says which streams to read and how. The zero values of the tunables
// mean their defaults (see DefaultConfig). It is also a sources entry of
// type dynamodb-streams in the config file: the yaml tags are its keys,
// DefaultConfig its defaults.
type Config struct {
	// Tables are table names; each table's current stream is found with
	// DescribeTable (LatestStreamArn) and found again when the stream is
	// disabled and enabled anew.
	Tables []string `yaml:"tables"`
	// StreamARNs are streams read as they are, for when the reader may not
	// call DescribeTable.
	StreamARNs []string `yaml:"stream_arns"`
	// Region is the AWS region; empty means the SDK's default chain
	// (AWS_REGION, the shared config file).
	Region string `yaml:"region"`
	// Endpoint overrides the service endpoint, e.g. DynamoDB Local at
	// http://127.0.0.1:8000. It is used for both DynamoDB and DynamoDB Streams.
	Endpoint string `yaml:"endpoint"`
	// Start is StartLatest (the default) or StartTrimHorizon. It applies to
	// a stream hotkeyd has no checkpoint of; a stream read before resumes
	// after its checkpoints, and shards that appear later are always read
	// from their first record.
	Start string `yaml:"start"`
	// CheckpointDir holds one checkpoint file per shard. Empty keeps
	// checkpoints in memory only: a restart then starts over from Start.
	// It cannot be set together with LeaseTable.
	CheckpointDir string `yaml:"checkpoint_dir"`

	// LeaseTable names a DynamoDB table, created on first use, through
	// which every reader using it splits the shards (see package lease);
	// checkpoints then live in it. Empty: this reader reads every shard.
	LeaseTable string `yaml:"lease_table"`
	// WorkerID names this reader in the lease table; empty means host name
	// and process id.
	WorkerID string `yaml:"worker_id"`
	// FailoverTime is how long a lease's counter must stand still before
	// another reader takes it (default 10 s).
	FailoverTime time.Duration `yaml:"failover_time"`

	// CheckpointInterval is the least time between two checkpoint writes of
	// a shard while records flow (default 1 s). A checkpoint is also written
	// when a shard goes idle, when it is finished and at shutdown. After a
	// crash at most the records read in the last interval are read again:
	// a partition takes at most 1000 writes per second, so with the default
	// that is about one GetRecords batch. With LeaseTable every batch is
	// checkpointed, and a shard with records flowing is read once per
	// interval (sooner while batches come back full): after a crash or a
	// lost lease at most the last batch is read again.
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	// DescribeInterval is how often each stream's shards are listed again
	// to find new ones (default 30 s). A finished shard also triggers a
	// listing, so its children start without waiting for this.
	DescribeInterval time.Duration `yaml:"describe_interval"`
	// MinPollInterval is the least time between two GetRecords calls on one
	// shard (default 200 ms, i.e. at most 5 calls per second per shard).
	MinPollInterval time.Duration `yaml:"poll_interval"`
	// IdlePollInterval is the wait between GetRecords calls once a shard
	// has nothing new (default 1 s). The wait grows to it from
	// MinPollInterval while reads keep coming back empty.
	IdlePollInterval time.Duration `yaml:"idle_poll_interval"`
	// MaxBackoff caps the exponential backoff after errors (default 30 s).
	MaxBackoff time.Duration `yaml:"max_backoff"`
	// CallTimeout bounds each AWS call (default 10 s).
	CallTimeout time.Duration `yaml:"call_timeout"`
	// BatchLimit is GetRecords' Limit (default and maximum 1000).
	BatchLimit int32 `yaml:"-"`
	// SDKDecode decodes GetRecords answers with the SDK's generic
	// deserializer instead of the reader's own, about four times faster
	// one (which falls back to the SDK for anything it does not know).
	SDKDecode bool `yaml:"-"`
}

// DefaultConfig returns a Config with every tunable at its default and no
// stream to read.
func DefaultConfig() Config {
	return Config{
		Start:              StartLatest,
		CheckpointInterval: time.Second,
		DescribeInterval:   30 * time.Second,
		MinPollInterval:    200 * time.Millisecond,
		IdlePollInterval:   time.Second,
		MaxBackoff:         30 * time.Second,
		CallTimeout:        10 * time.Second,
		BatchLimit:         1000,
	}
}

// withDefaults fills the zero tunables from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Start == "" {
		c.Start = d.Start
	}
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&c.CheckpointInterval, d.CheckpointInterval)
	set(&c.DescribeInterval, d.DescribeInterval)
	set(&c.MinPollInterval, d.MinPollInterval)
	set(&c.IdlePollInterval, d.IdlePollInterval)
	set(&c.MaxBackoff, d.MaxBackoff)
	set(&c.CallTimeout, d.CallTimeout)
	if c.BatchLimit <= 0 || c.BatchLimit > 1000 {
		c.BatchLimit = d.BatchLimit
	}
	if c.IdlePollInterval < c.MinPollInterval {
		c.IdlePollInterval = c.MinPollInterval
	}
	return c
}

// Validate reports the first setting that cannot work, naming its key as
// a path (tables[1]). Zero tunables mean their defaults.
func (c *Config) Validate() error {
	if len(c.Tables) == 0 && len(c.StreamARNs) == 0 {
		return errors.New("tables: one of tables or stream_arns is required")
	}
	for i, t := range c.Tables {
		if t == "" {
			return fmt.Errorf("tables[%d]: empty table name", i)
		}
	}
	for i, a := range c.StreamARNs {
		if !strings.HasPrefix(a, "arn:") {
			return fmt.Errorf("stream_arns[%d]: not a stream ARN: %q", i, a)
		}
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("endpoint: not an absolute URL: %q", c.Endpoint)
		}
	}
	switch c.Start {
	case "", StartLatest, StartTrimHorizon:
	default:
		return fmt.Errorf("start: must be %s or %s, got %q", StartLatest, StartTrimHorizon, c.Start)
	}
	for key, d := range map[string]time.Duration{
		"checkpoint_interval": c.CheckpointInterval, "describe_interval": c.DescribeInterval,
		"poll_interval": c.MinPollInterval, "idle_poll_interval": c.IdlePollInterval,
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

// NewSource builds the reader of a sources entry of type
// dynamodb-streams: New with the daemon's logger, Reporter and registry.
func (c *Config) NewSource(env ingest.Env) (ingest.Source, error) {
	return New(*c, env.Log, env.Reporter, env.Registerer)
}

// LeaseTableName returns the lease table the reader joins, or "": two
// sources of one process must not join the same table as one worker.
func (c *Config) LeaseTableName() string { return c.LeaseTable }

// leaseConfig returns the lease coordinator's settings.
func (c Config) leaseConfig() lease.Config {
	start := lease.TrimHorizon
	if c.Start == "" || c.Start == StartLatest {
		start = lease.Latest
	}
	return lease.Config{
		Table:        c.LeaseTable,
		WorkerID:     c.WorkerID,
		FailoverTime: c.FailoverTime,
		Start:        start,
		Source:       SourceName,
	}
}
