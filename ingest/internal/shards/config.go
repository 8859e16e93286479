package shards

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest/lease"
)

// Start positions of a stream hotkeyd has no checkpoint of, as the
// readers' start key spells them.
const (
	StartLatest      = "latest"
	StartTrimHorizon = "trim_horizon"
)

// Config holds the keys the readers of sharded streams share, embedded
// inline in each reader's Config: the yaml tags are the keys,
// DefaultConfig the defaults, and a zero tunable means its default.
type Config struct {
	// Region is the AWS region; empty means the SDK's default chain
	// (AWS_REGION, the shared config file).
	Region string `yaml:"region"`
	// Endpoint overrides the service's endpoint (an emulator).
	Endpoint string `yaml:"endpoint"`
	// Start is StartLatest (the default) or StartTrimHorizon. It applies
	// to a stream hotkeyd has no checkpoint of; a stream read before
	// resumes after its checkpoints, and shards that appear later are
	// always read from their first record.
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
	// crash at most the records read in the last interval are read again.
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	// ListInterval is how often each stream's shards are listed again to
	// find new ones (default 30 s); a finished shard triggers a listing at
	// once. The tables a reader follows are described again as often
	// (DescribeTable: their indexes, and a table's current stream).
	ListInterval time.Duration `yaml:"list_interval"`
	// MaxBackoff caps the exponential backoff after errors (default 30 s).
	MaxBackoff time.Duration `yaml:"max_backoff"`
	// CallTimeout bounds each AWS call (default 10 s).
	CallTimeout time.Duration `yaml:"call_timeout"`
}

// DefaultConfig returns the shared keys' defaults.
func DefaultConfig() Config {
	return Config{
		Start:              StartLatest,
		CheckpointInterval: time.Second,
		ListInterval:       30 * time.Second,
		MaxBackoff:         30 * time.Second,
		CallTimeout:        10 * time.Second,
	}
}

// WithDefaults fills the zero tunables from DefaultConfig.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.Start == "" {
		c.Start = d.Start
	}
	Default(&c.CheckpointInterval, d.CheckpointInterval)
	Default(&c.ListInterval, d.ListInterval)
	Default(&c.MaxBackoff, d.MaxBackoff)
	Default(&c.CallTimeout, d.CallTimeout)
	return c
}

// Default sets *v to def when it is zero or negative.
func Default(v *time.Duration, def time.Duration) {
	if *v <= 0 {
		*v = def
	}
}

// Validate reports every shared setting that cannot work, one error each
// (errors.Join), naming its key: endpoint, start, a negative duration (the
// reader's own durations by key among them), then the lease keys (without
// lease_table, checkpoint_dir with it, a failover time below the minimum,
// a table name DynamoDB refuses).
func (c *Config) Validate(durations map[string]time.Duration) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	add(CheckEndpoint("endpoint", c.Endpoint))
	switch c.Start {
	case "", StartLatest, StartTrimHorizon:
	default:
		add(fmt.Errorf("start: must be %s or %s, got %q", StartLatest, StartTrimHorizon, c.Start))
	}
	all := map[string]time.Duration{
		"checkpoint_interval": c.CheckpointInterval, "list_interval": c.ListInterval,
		"max_backoff": c.MaxBackoff, "call_timeout": c.CallTimeout,
	}
	maps.Copy(all, durations)
	for _, key := range slices.Sorted(maps.Keys(all)) {
		if d := all[key]; d < 0 {
			add(fmt.Errorf("%s: must be positive, got %s", key, d))
		}
	}
	if c.LeaseTable == "" {
		if c.WorkerID != "" {
			add(errors.New("worker_id: only used with lease_table"))
		}
		if c.FailoverTime != 0 {
			add(errors.New("failover_time: only used with lease_table"))
		}
		return errors.Join(errs...)
	}
	if c.CheckpointDir != "" {
		add(errors.New("checkpoint_dir: not used with lease_table, which keeps the checkpoints"))
	}
	failover := c.FailoverTime != 0 && c.FailoverTime < lease.MinFailoverTime
	if failover {
		add(fmt.Errorf("failover_time: %s is below the minimum %s", c.FailoverTime, lease.MinFailoverTime))
	}
	table := lease.CheckTableName(c.LeaseTable)
	if table != nil {
		add(fmt.Errorf("lease_table: %w", table))
	}
	if table == nil && !failover {
		add(c.Lease("").Validate())
	}
	return errors.Join(errs...)
}

// LeaseTableName returns the lease table the reader joins, or "": two
// sources of one process must not join the same table as one worker.
func (c *Config) LeaseTableName() string { return c.LeaseTable }

// CheckEndpoint checks an endpoint key: empty, or an absolute URL.
func CheckEndpoint(key, endpoint string) error {
	if endpoint == "" {
		return nil
	}
	if u, err := url.Parse(endpoint); err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("%s: not an absolute URL: %q", key, endpoint)
	}
	return nil
}

// Lease returns the lease coordinator's settings, for the reader named
// source.
func (c Config) Lease(source string) lease.Config {
	start := lease.TrimHorizon
	if c.Start == "" || c.Start == StartLatest {
		start = lease.Latest
	}
	return lease.Config{Table: c.LeaseTable, WorkerID: c.WorkerID, FailoverTime: c.FailoverTime, Start: start, Source: source}
}

// Settings returns the engine's settings from the config (after
// WithDefaults), for the reader named source.
func (c Config) Settings(source string) Settings {
	return Settings{
		Source: source, StartLatest: c.Start == StartLatest, ListInterval: c.ListInterval,
		CheckpointInterval: c.CheckpointInterval, MaxBackoff: c.MaxBackoff, CallTimeout: c.CallTimeout,
	}
}
