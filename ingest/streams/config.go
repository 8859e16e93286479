package streams

import (
	"errors"
	"fmt"
	"time"

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
// mean their defaults (see DefaultConfig).
type Config struct {
	// Tables are table names; each table's current stream is found with
	// DescribeTable (LatestStreamArn) and found again when the stream is
	// disabled and enabled anew.
	Tables []string
	// StreamARNs are streams read as they are, for when the reader may not
	// call DescribeTable.
	StreamARNs []string
	// Region is the AWS region; empty means the SDK's default chain
	// (AWS_REGION, the shared config file).
	Region string
	// Endpoint overrides the service endpoint, e.g. DynamoDB Local at
	// http://127.0.0.1:8000. It is used for both DynamoDB and DynamoDB Streams.
	Endpoint string
	// Start is StartLatest (the default) or StartTrimHorizon. It applies to
	// a stream hotkeyd has no checkpoint of; a stream read before resumes
	// after its checkpoints, and shards that appear later are always read
	// from their first record.
	Start string
	// CheckpointDir holds one checkpoint file per shard. Empty keeps
	// checkpoints in memory only: a restart then starts over from Start.
	// It cannot be set together with LeaseTable.
	CheckpointDir string

	// LeaseTable names a DynamoDB table, created on first use, through
	// which every reader using it splits the shards (see package lease);
	// checkpoints then live in it. Empty: this reader reads every shard.
	LeaseTable string
	// WorkerID names this reader in the lease table; empty means host name
	// and process id.
	WorkerID string
	// FailoverTime is how long a lease's counter must stand still before
	// another reader takes it (default 10 s).
	FailoverTime time.Duration

	// CheckpointInterval is the least time between two checkpoint writes of
	// a shard while records flow (default 1 s). A checkpoint is also written
	// when a shard goes idle, when it is finished and at shutdown. After a
	// crash at most the records read in the last interval are read again:
	// a partition takes at most 1000 writes per second, so with the default
	// that is about one GetRecords batch. With LeaseTable every batch is
	// checkpointed, and a shard with records flowing is read once per
	// interval (sooner while batches come back full): after a crash or a
	// lost lease at most the last batch is read again.
	CheckpointInterval time.Duration
	// DescribeInterval is how often each stream's shards are listed again
	// to find new ones (default 30 s). A finished shard also triggers a
	// listing, so its children start without waiting for this.
	DescribeInterval time.Duration
	// MinPollInterval is the least time between two GetRecords calls on one
	// shard (default 200 ms, i.e. at most 5 calls per second per shard).
	MinPollInterval time.Duration
	// IdlePollInterval is the wait between GetRecords calls once a shard
	// has nothing new (default 1 s). The wait grows to it from
	// MinPollInterval while reads keep coming back empty.
	IdlePollInterval time.Duration
	// MaxBackoff caps the exponential backoff after errors (default 30 s).
	MaxBackoff time.Duration
	// CallTimeout bounds each AWS call (default 10 s).
	CallTimeout time.Duration
	// BatchLimit is GetRecords' Limit (default and maximum 1000).
	BatchLimit int32
	// SDKDecode decodes GetRecords answers with the SDK's generic
	// deserializer instead of the reader's own, about four times faster
	// one (which falls back to the SDK for anything it does not know).
	SDKDecode bool
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

// Validate reports the first setting that cannot work, naming its key.
func (c Config) Validate() error {
	if len(c.Tables) == 0 && len(c.StreamARNs) == 0 {
		return errors.New("tables or stream_arns: at least one is required")
	}
	for _, t := range c.Tables {
		if t == "" {
			return errors.New("tables: empty table name")
		}
	}
	for _, a := range c.StreamARNs {
		if a == "" {
			return errors.New("stream_arns: empty stream ARN")
		}
	}
	switch c.Start {
	case "", StartLatest, StartTrimHorizon:
	default:
		return fmt.Errorf("start: %q is neither %q nor %q", c.Start, StartLatest, StartTrimHorizon)
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
	if err := lease.CheckTableName(c.LeaseTable); err != nil {
		return fmt.Errorf("lease_table: %w", err)
	}
	if c.FailoverTime != 0 && c.FailoverTime < lease.MinFailoverTime {
		return fmt.Errorf("failover_time: %s is below the minimum %s", c.FailoverTime, lease.MinFailoverTime)
	}
	return c.leaseConfig().Validate()
}

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
