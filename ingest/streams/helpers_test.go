package streams

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hotkeyd/hotkeyd/ingest/internal/ingesttest"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// logged counts the log lines whose message contains msg.
func (r *running) logged(msg string) int { return r.logs.FilterMessageSnippet(msg).Len() }

// fastConfig is a Config with short waits, for tests.
func fastConfig() Config {
	c := DefaultConfig()
	c.Start = StartTrimHorizon
	c.ListInterval = 500 * time.Millisecond
	c.PollInterval = 10 * time.Millisecond
	c.IdlePollInterval = 100 * time.Millisecond
	c.MaxBackoff = 300 * time.Millisecond
	c.CallTimeout = 2 * time.Second
	c.CheckpointInterval = 100 * time.Millisecond
	return c
}

// running is a Source running in the background.
type running struct {
	src    *Source
	sink   *ingesttest.Sink
	rep    *ingesttest.Reporter
	reg    *prometheus.Registry
	logs   *observer.ObservedLogs
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // what Run returned
}

// stop cancels the source and waits for Run to return.
func (r *running) stop(t testing.TB) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Errorf("Run returned %v", r.err)
		}
	case <-time.After(ingesttest.Eventually):
		t.Fatalf("Run did not return within %v of cancel", ingesttest.Eventually)
	}
}

// start runs a Source for cfg against the given clients.
func start(t testing.TB, cfg Config, streams StreamsAPI, tables TablesAPI) *running {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(zapcore.NewTee(core, zaptest.NewLogger(t).Core()))
	r := &running{sink: &ingesttest.Sink{}, rep: &ingesttest.Reporter{}, reg: prometheus.NewRegistry(), logs: logs, done: make(chan struct{})}
	src, err := NewWithClients(cfg, streams, tables, log, r.rep, r.reg)
	if err != nil {
		t.Fatalf("new source: %v", err)
	}
	r.src = src
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.err = src.Run(ctx, r.sink); close(r.done) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// tableSpec describes a test table.
type tableSpec struct {
	name     string
	hash     string
	hashType types.ScalarAttributeType
	rng      string
	rngType  types.ScalarAttributeType
	view     types.StreamViewType
}

func createTable(t testing.TB, d *testenv.DDBLocal, s tableSpec) {
	t.Helper()
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(s.name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(s.hash), AttributeType: s.hashType}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(s.hash), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: s.view},
	}
	if in.StreamSpecification.StreamViewType == "" {
		in.StreamSpecification.StreamViewType = types.StreamViewTypeKeysOnly
	}
	if s.rng != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(s.rng), AttributeType: s.rngType})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(s.rng), KeyType: types.KeyTypeRange})
	}
	if _, err := d.DB.CreateTable(context.Background(), in); err != nil {
		t.Fatalf("create table %s: %v", s.name, err)
	}
}

// putItems writes n items to a hash-only string-keyed table, keys
// prefix0..prefix(n-1), one PutItem each, like an application.
func putItems(t testing.TB, db *dynamodb.Client, table, hash, prefix string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName: aws.String(table),
			Item: map[string]types.AttributeValue{
				hash:   &types.AttributeValueMemberS{Value: fmt.Sprintf("%s%d", prefix, i)},
				"body": &types.AttributeValueMemberS{Value: "x"},
			},
		})
		if err != nil {
			t.Fatalf("put item %d into %s: %v", i, table, err)
		}
	}
}

// gauge returns the value of the gauge name whose labels are the given
// name and value pairs, from the registry reg; -1 when there is none.
func gauge(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue next
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
