package streams

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Start positions for shards that have no checkpoint yet.
const (
	// StartLatest reads only records written after hotkeyd started.
	StartLatest = shards.StartLatest
	// StartTrimHorizon reads from the oldest record the stream still holds
	// (up to 24 hours back).
	StartTrimHorizon = shards.StartTrimHorizon
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
	// Config holds the keys shared with the Kinesis reader: region,
	// endpoint (used for both DynamoDB and DynamoDB Streams, e.g.
	// DynamoDB Local at http://127.0.0.1:8000), start, checkpoint_dir,
	// lease_table, worker_id, failover_time, checkpoint_interval,
	// list_interval, max_backoff and call_timeout. With LeaseTable every
	// batch is checkpointed, and a shard with records flowing is read once
	// per CheckpointInterval (sooner while batches come back full): after
	// a crash or a lost lease at most the last batch is read again.
	// ListInterval is also how often each table is described again to
	// find its current stream; its former key, describe_interval, is
	// still read (RenamedKeys).
	shards.Config `yaml:",inline"`
	// PollInterval is the least time between two GetRecords calls on one
	// shard (default 200 ms, i.e. at most 5 calls per second per shard).
	PollInterval time.Duration `yaml:"poll_interval"`
	// IdlePollInterval is the wait between GetRecords calls once a shard
	// has nothing new (default 1 s). The wait grows to it from
	// PollInterval while reads keep coming back empty.
	IdlePollInterval time.Duration `yaml:"idle_poll_interval"`
	// Schemas are the config file's tables section: key schemas, and the
	// secondary indexes declared there, which win over what DescribeTable
	// tells of the same name.
	Schemas map[string]traffic.KeySchema `yaml:"-"`
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
		Config:           shards.DefaultConfig(),
		PollInterval:     200 * time.Millisecond,
		IdlePollInterval: time.Second,
		BatchLimit:       1000,
	}
}

// withDefaults fills the zero tunables from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.Config = c.Config.WithDefaults()
	shards.Default(&c.PollInterval, d.PollInterval)
	shards.Default(&c.IdlePollInterval, d.IdlePollInterval)
	if c.BatchLimit <= 0 || c.BatchLimit > 1000 {
		c.BatchLimit = d.BatchLimit
	}
	if c.IdlePollInterval < c.PollInterval {
		c.IdlePollInterval = c.PollInterval
	}
	return c
}

// Validate reports every setting that cannot work, one error each
// (errors.Join), naming its key as a path (tables[1]). Zero tunables mean
// their defaults.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Tables) == 0 && len(c.StreamARNs) == 0 {
		errs = append(errs, errors.New("tables: one of tables or stream_arns is required"))
	}
	for i, t := range c.Tables {
		if t == "" {
			errs = append(errs, fmt.Errorf("tables[%d]: empty table name", i))
		}
	}
	for i, a := range c.StreamARNs {
		if !strings.HasPrefix(a, "arn:") {
			errs = append(errs, fmt.Errorf("stream_arns[%d]: not a stream ARN: %q", i, a))
		}
	}
	errs = append(errs, c.Config.Validate(map[string]time.Duration{
		"poll_interval": c.PollInterval, "idle_poll_interval": c.IdlePollInterval,
	}))
	return errors.Join(errs...)
}

// NewSource builds the reader of a sources entry of type
// dynamodb-streams: New with the daemon's logger, Reporter, registry and
// the config file's tables.
func (c *Config) NewSource(env ingest.Env) (traffic.Source, error) {
	return shards.NewSource(env, func() (*Source, error) {
		cfg := *c
		cfg.Schemas = env.Tables
		return New(cfg, env.Log, env.Reporter, env.Registerer)
	})
}

// RenamedKeys maps the former keys of a sources entry of type
// dynamodb-streams to their keys now: a former key is still read, and said
// to be deprecated. describe_interval is list_interval, as the Kinesis
// reader names it: how often the shards are listed again.
func (c *Config) RenamedKeys() map[string]string {
	return map[string]string{"describe_interval": "list_interval"}
}
