// Package describe learns tables' key schemas and secondary indexes with
// DynamoDB's DescribeTable, for the two readers of stream records (DynamoDB
// Streams and Kinesis Data Streams for DynamoDB): the writes a table write
// causes in its indexes are told from the records' item images by the
// indexes' key schemas and projections (package streamrecord), and a
// stream record names no index. Each table is described when its reader
// first meets it and again every interval, so that an index created
// (counted once it backfills), changed or deleted is followed within one
// interval.
//
// DescribeTable refused (no dynamodb:DescribeTable permission) costs the
// index writes of the tables not declared in the config's tables section,
// and nothing else: it is logged once per table with what is lost, counted
// in hotkeyd_describe_table_errors_total{reason="access_denied"}, and the
// reader reads on.
package describe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/internal/pause"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// API is the DynamoDB call the describer makes. *dynamodb.Client
// implements it; tests wrap it to inject the faults DynamoDB Local cannot
// make (it enforces no permissions).
type API interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Reasons of hotkeyd_describe_table_errors_total.
const (
	ReasonAccessDenied = "access_denied" // no dynamodb:DescribeTable permission
	ReasonNotFound     = shards.ReasonNotFound
	ReasonThrottled    = shards.ReasonThrottled
	ReasonNetwork      = shards.ReasonNetwork
	ReasonAPI          = shards.ReasonAPI
	// ReasonBeyondLimits: an answer with more secondary indexes or
	// projected attributes than DynamoDB allows a table
	// (traffic.KeySchema.Bounded); those past the bounds are not taken.
	ReasonBeyondLimits = "beyond_limits"
)

// MaxTables bounds the tables a Describer watches.
const MaxTables = 10_000

// Config configures a Describer.
type Config struct {
	// Source is the source label of the reader's series and errors.
	Source string
	// Interval is how often a watched table is described again.
	Interval time.Duration
	// CallTimeout bounds one DescribeTable call.
	CallTimeout time.Duration
}

// Describer learns tables' schemas into a streamrecord.Schemas. It is
// safe for concurrent use.
type Describer struct {
	cfg     Config
	api     API
	schemas *streamrecord.Schemas
	log     *zap.Logger
	rep     traffic.Reporter
	m       *metrics

	watched sync.Map // table → *sync.Once of its first description
	count   atomic.Int64
	tooMany sync.Once
	wg      sync.WaitGroup

	mu     sync.Mutex
	denied map[string]bool // tables whose refusal was logged, until a success
}

// New returns a Describer feeding schemas; its series are registered on
// reg (nil registers none), shared with any other reader's.
func New(cfg Config, api API, schemas *streamrecord.Schemas, log *zap.Logger, rep traffic.Reporter, reg prometheus.Registerer) (*Describer, error) {
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register describe table metrics: %w", err)
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 10 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	return &Describer{
		cfg: cfg, api: api, schemas: schemas, log: log, rep: rep, m: m,
		denied: map[string]bool{},
	}, nil
}

// Watch describes table now, unless it is watched already, and then
// every interval until ctx is done; Wait waits for the watches to end.
// The first description is made before Watch returns (a reader meeting a
// table calls it before telling the table's index writes), bounded by the
// call timeout. With no API (a reader told not to describe tables) it
// does nothing.
func (d *Describer) Watch(ctx context.Context, table string) {
	if d == nil || d.api == nil {
		return
	}
	w, ok := d.watched.Load(table)
	if !ok {
		// A stream names its tables: a bounded number of them is watched
		// (a stream of a hostile producer must not start a watch per
		// name).
		if d.count.Add(1) > MaxTables {
			d.count.Add(-1)
			d.tooMany.Do(func() {
				d.log.Warn("too many tables to describe: the others' indexes are counted only when declared under tables: in the config", zap.Int("max", MaxTables), zap.String("table", table))
			})
			return
		}
		var loaded bool
		if w, loaded = d.watched.LoadOrStore(table, &sync.Once{}); loaded {
			d.count.Add(-1)
		}
	}
	w.(*sync.Once).Do(func() {
		d.m.initTable(d.cfg.Source, table, d.indexCount(table))
		d.Describe(ctx, table)
		d.wg.Go(func() {
			for pause.For(ctx, d.cfg.Interval) {
				d.Describe(ctx, table)
			}
		})
	})
}

// Wait waits for every watch to end (their ctx done).
func (d *Describer) Wait() {
	if d != nil {
		d.wg.Wait()
	}
}

// Describe calls DescribeTable for table once and learns the answer.
func (d *Describer) Describe(ctx context.Context, table string) {
	cctx, cancel := context.WithTimeout(ctx, d.cfg.CallTimeout)
	out, err := d.api.DescribeTable(cctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		d.Failed(table, fmt.Errorf("describe table %q: %w", table, err))
		return
	}
	d.Learn(table, out.Table)
}

// Learn records what a DescribeTable answer tells of table: its key
// schema, and the secondary indexes whose writes count now (an index
// being created counts once it backfills: from then on DynamoDB applies
// the table's writes to it; one being deleted no longer does). A change of
// a table's indexes is logged.
func (d *Describer) Learn(table string, desc *types.TableDescription) {
	if desc == nil {
		return
	}
	d.mu.Lock()
	if d.denied[table] {
		delete(d.denied, table)
		d.log.Info("describe table allowed again: counting its index writes", zap.String("table", table))
	}
	d.mu.Unlock()
	ks, left := schemaOf(desc)
	// An answer is trusted no further than DynamoDB's own bounds: each
	// index costs every write of the table a look (an emulator or a proxy
	// can answer thousands).
	ks, past := ks.Bounded()
	if len(past) > 0 {
		d.m.errors.WithLabelValues(d.cfg.Source, table, ReasonBeyondLimits).Inc()
		left = append(left, past...)
	}
	had := d.schemas.Table(table).HasIndexes()
	// A table without indexes, now or before, is not worth a line.
	if d.schemas.Learn(table, ks) && (had || len(ks.Indexes) > 0 || len(left) > 0) {
		level := zap.InfoLevel
		if len(past) > 0 {
			level = zap.WarnLevel
		}
		d.log.Log(level, "table indexes", zap.String("table", table),
			zap.String("partition_key", ks.PartitionKey), zap.String("sort_key", ks.SortKey),
			zap.Strings("indexes", describeIndexes(ks.Indexes)), zap.Strings("not_counted", left))
	}
	d.m.indexes.WithLabelValues(d.cfg.Source, table).Set(float64(d.indexCount(table)))
}

// Failed records a DescribeTable call for table that failed with err
// (made by the describer or by its reader). A refusal is logged once with
// what it costs; other errors go to the reader's Reporter.
func (d *Describer) Failed(table string, err error) {
	reason := classify(err)
	d.m.errors.WithLabelValues(d.cfg.Source, table, reason).Inc()
	if reason != ReasonAccessDenied {
		d.rep.Error(d.cfg.Source, reason, err)
		return
	}
	d.mu.Lock()
	logged := d.denied[table]
	d.denied[table] = true
	d.mu.Unlock()
	if logged {
		return
	}
	lost := "the writes of its secondary indexes are not counted (grant dynamodb:DescribeTable, or declare the indexes under tables: in the config)"
	if n := d.indexCount(table); n > 0 {
		lost = fmt.Sprintf("only the indexes declared under tables: in the config (%d) are counted; any other index's writes are not (grant dynamodb:DescribeTable)", n)
	}
	d.log.Warn("describe table refused: reading on without it; "+lost, zap.String("table", table), zap.Error(err))
}

// Errors is the hotkeyd_describe_table_errors_total series of source,
// table and reason (for tests of the readers).
func (d *Describer) Errors(source, table, reason string) prometheus.Counter {
	return d.m.errors.WithLabelValues(source, table, reason)
}

// indexCount is the number of indexes of table whose writes are counted.
func (d *Describer) indexCount(table string) int {
	if t := d.schemas.Table(table); t != nil {
		return len(t.Indexes)
	}
	return 0
}

// classify returns the reason of a DescribeTable error.
func classify(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "AccessDeniedException" {
		return ReasonAccessDenied
	}
	return shards.ByCode(err, shards.IsNetwork, nil)
}

// schemaOf returns the key schema and counted indexes a table
// description gives, and the indexes left out, with their status.
func schemaOf(desc *types.TableDescription) (traffic.KeySchema, []string) {
	ks := keySchema(desc.KeySchema)
	var left []string
	add := func(name string, ix traffic.IndexSchema) {
		if ks.Indexes == nil {
			ks.Indexes = map[string]traffic.IndexSchema{}
		}
		ks.Indexes[name] = ix
	}
	for _, g := range desc.GlobalSecondaryIndexes {
		name := aws.ToString(g.IndexName)
		switch g.IndexStatus {
		case types.IndexStatusDeleting:
			left = append(left, name+" (DELETING)")
			continue
		case types.IndexStatusCreating:
			if !aws.ToBool(g.Backfilling) {
				left = append(left, name+" (CREATING)")
				continue
			}
		}
		k := keySchema(g.KeySchema)
		add(name, traffic.IndexSchema{PartitionKey: k.PartitionKey, SortKey: k.SortKey, Projection: projectionOf(g.Projection)})
	}
	for _, l := range desc.LocalSecondaryIndexes {
		k := keySchema(l.KeySchema)
		add(aws.ToString(l.IndexName), traffic.IndexSchema{PartitionKey: k.PartitionKey, SortKey: k.SortKey, Local: true, Projection: projectionOf(l.Projection)})
	}
	sort.Strings(left)
	return ks, left
}

func keySchema(elems []types.KeySchemaElement) traffic.KeySchema {
	var ks traffic.KeySchema
	for _, k := range elems {
		switch k.KeyType {
		case types.KeyTypeHash:
			ks.PartitionKey = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			ks.SortKey = aws.ToString(k.AttributeName)
		}
	}
	return ks
}

func projectionOf(p *types.Projection) traffic.Projection {
	if p == nil {
		// DynamoDB always answers one; without it, the entry is taken as
		// large as the item (the most a write can cost).
		return traffic.Projection{Type: traffic.ProjectAll}
	}
	switch p.ProjectionType {
	case types.ProjectionTypeKeysOnly:
		return traffic.Projection{Type: traffic.ProjectKeysOnly}
	case types.ProjectionTypeInclude:
		return traffic.Projection{Type: traffic.ProjectInclude, Attributes: slices.Clone(p.NonKeyAttributes)}
	}
	return traffic.Projection{Type: traffic.ProjectAll}
}

// describeIndexes renders indexes for a log line: "by-status (global
// status/created, KEYS_ONLY)".
func describeIndexes(ixs map[string]traffic.IndexSchema) []string {
	out := make([]string, 0, len(ixs))
	for name, ix := range ixs {
		kind := "global"
		if ix.Local {
			kind = "local"
		}
		key := ix.PartitionKey
		if ix.SortKey != "" {
			key += "/" + ix.SortKey
		}
		proj := string(ix.Projection.Type)
		if ix.Projection.Type == traffic.ProjectInclude {
			proj += " " + strings.Join(ix.Projection.Attributes, ",")
		}
		out = append(out, fmt.Sprintf("%s (%s %s, %s)", name, kind, key, proj))
	}
	sort.Strings(out)
	return out
}
