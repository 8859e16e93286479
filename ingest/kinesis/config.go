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
	"strings"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// SourceName is the source label of the Events, rejections and errors.
const SourceName = "kinesis"

// Start positions of a stream hotkeyd has no checkpoint of.
const (
	// StartLatest reads only records written after hotkeyd started.
	StartLatest = shards.StartLatest
	// StartTrimHorizon reads from the oldest record the stream holds.
	StartTrimHorizon = shards.StartTrimHorizon
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
	// Config holds the keys shared with the DynamoDB Streams reader:
	// region, endpoint (the Kinesis endpoint), start, checkpoint_dir,
	// lease_table, worker_id, failover_time, checkpoint_interval,
	// list_interval, max_backoff and call_timeout.
	shards.Config `yaml:",inline"`
	// DynamoDBEndpoint overrides the endpoint of DynamoDB (an emulator):
	// the lease table's, and DescribeTable's.
	DynamoDBEndpoint string `yaml:"dynamodb_endpoint"`
	// DescribeTables learns each table's key schema and secondary indexes
	// with DynamoDB's DescribeTable when its first record is read, and
	// again every ListInterval (default true): the writes of an index are
	// told from the records' item images by its key and projection.
	// Indexes declared in the config's tables section need no call.
	DescribeTables bool `yaml:"describe_tables"`
	// PollInterval is the least time between two GetRecords calls on a
	// shard (default 1 s, the Kinesis Client Library's: a shard serves 5
	// calls per second to all its consumers together). A call that
	// returns a full batch is followed at once.
	PollInterval time.Duration `yaml:"poll_interval"`

	// Schemas are the config file's tables section: the key schemas of
	// the tables whose keys have two attributes, and the secondary
	// indexes declared there, which win over what DescribeTable tells of
	// the same name.
	Schemas map[string]traffic.KeySchema `yaml:"-"`
	// BatchLimit is GetRecords' Limit (default 10000, the maximum).
	BatchLimit int32 `yaml:"-"`
}

// DefaultConfig returns a Config with every tunable at its default and no
// stream to read.
func DefaultConfig() Config {
	return Config{
		Config:         shards.DefaultConfig(),
		PollInterval:   time.Second,
		BatchLimit:     10000,
		DescribeTables: true,
	}
}

// withDefaults fills the zero tunables from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.Config = c.Config.WithDefaults()
	shards.Default(&c.PollInterval, d.PollInterval)
	if c.BatchLimit <= 0 || c.BatchLimit > 10000 {
		c.BatchLimit = d.BatchLimit
	}
	return c
}

// Validate reports every setting that cannot work, one error each
// (errors.Join), naming its key. Zero tunables mean their defaults.
func (c *Config) Validate() error {
	var errs []error
	if len(c.StreamARNs) == 0 && len(c.Streams) == 0 {
		errs = append(errs, errors.New("stream_arns: one of stream_arns or streams is required"))
	}
	for i, a := range c.StreamARNs {
		if _, ok := streamName(a); !ok {
			errs = append(errs, fmt.Errorf("stream_arns[%d]: not a Kinesis stream ARN (arn:aws:kinesis:REGION:ACCOUNT:stream/NAME): %q", i, a))
		}
	}
	for i, n := range c.Streams {
		if n == "" || strings.ContainsAny(n, ":/") {
			errs = append(errs, fmt.Errorf("streams[%d]: not a stream name: %q (an ARN goes in stream_arns)", i, n))
		}
	}
	switch err := shards.CheckEndpoint("dynamodb_endpoint", c.DynamoDBEndpoint); {
	case err != nil:
		errs = append(errs, err)
	case c.LeaseTable == "" && !c.DescribeTables && c.DynamoDBEndpoint != "":
		errs = append(errs, errors.New("dynamodb_endpoint: only used with lease_table or describe_tables"))
	}
	errs = append(errs, c.Config.Validate(map[string]time.Duration{"poll_interval": c.PollInterval}))
	return errors.Join(errs...)
}

// NewSource builds the reader of a sources entry of type kinesis, with
// the config file's key schemas, and registers its metrics.
func (c *Config) NewSource(env ingest.Env) (traffic.Source, error) {
	return shards.NewSource(env, func() (*Source, error) {
		cfg := *c
		cfg.Schemas = env.Tables
		return New(cfg, env.Log, env.Reporter, env.Registerer)
	})
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
