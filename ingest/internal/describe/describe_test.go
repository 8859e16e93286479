package describe

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hotkeyd/hotkeyd/ingest/internal/ingesttest"
	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// createOrders creates a table keyed by order_id with a global index on
// status/created (KEYS_ONLY), one on customer (INCLUDE total) and a local
// index on order_id/total (ALL), on DynamoDB Local.
func createOrders(t *testing.T, db *dynamodb.Client, name string) {
	t.Helper()
	s := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	key := func(pk, sk string) []types.KeySchemaElement {
		k := []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}}
		if sk != "" {
			k = append(k, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
		}
		return k
	}
	_, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{s("order_id"), s("at"), s("status"), s("created"), s("customer"), s("total")},
		KeySchema:            key("order_id", "at"),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: aws.String("by-status"), KeySchema: key("status", "created"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}},
			{IndexName: aws.String("by-customer"), KeySchema: key("customer", ""), Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"total"}}},
		},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{
			{IndexName: aws.String("by-total"), KeySchema: key("order_id", "total"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLearnFromDynamoDBLocal describes a real table and learns its key
// schema and indexes; a configured index wins over the described one of
// its name; an index deleted is forgotten at the next description.
func TestLearnFromDynamoDBLocal(t *testing.T) {
	ddb := testenv.DynamoDBLocal(t)
	createOrders(t, ddb.DB, "orders")
	configured := traffic.IndexSchema{PartitionKey: "status", Projection: traffic.Projection{Type: traffic.ProjectAll}}
	schemas := streamrecord.NewSchemas(map[string]traffic.KeySchema{"orders": {PartitionKey: "order_id", SortKey: "at", Indexes: map[string]traffic.IndexSchema{"by-status": configured}}})
	core, logs := observer.New(zap.InfoLevel)
	reg := prometheus.NewRegistry()
	d, err := New(Config{Source: "test", Interval: time.Hour}, ddb.DB, schemas, zap.New(core), traffic.NopReporter{}, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); d.Wait() }()
	d.Watch(ctx, "orders")
	tb := schemas.Table("orders")
	got := map[string]traffic.IndexSchema{}
	for _, ix := range tb.Indexes {
		got[ix.Name] = ix.IndexSchema
	}
	want := map[string]traffic.IndexSchema{
		"by-status":   configured,
		"by-customer": {PartitionKey: "customer", Projection: traffic.Projection{Type: traffic.ProjectInclude, Attributes: []string{"total"}}},
		"by-total":    {PartitionKey: "order_id", SortKey: "total", Local: true, Projection: traffic.Projection{Type: traffic.ProjectAll}},
	}
	if tb.Key.PartitionKey != "order_id" || tb.Key.SortKey != "at" || !reflect.DeepEqual(got, want) {
		t.Errorf("learnt %+v %+v, want %+v", tb.Key, got, want)
	}
	if logs.FilterMessage("table indexes").Len() != 1 {
		t.Errorf("want one log line of the table's indexes, got %v", logs.All())
	}
	if v := testutil.ToFloat64(d.m.indexes.WithLabelValues("test", "orders")); v != 3 {
		t.Errorf("hotkeyd_table_indexes = %v, want 3", v)
	}

	// The customer index is deleted: the next description forgets it.
	if _, err := ddb.DB.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{
		TableName:                   aws.String("orders"),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("by-customer")}}},
	}); err != nil {
		t.Fatal(err)
	}
	d.Describe(ctx, "orders")
	for _, ix := range schemas.Table("orders").Indexes {
		if ix.Name == "by-customer" {
			t.Errorf("deleted index still counted: %+v", ix)
		}
	}
}

// TestIndexStatus checks which indexes DescribeTable's states count: an
// index is written to from its backfill on, not while its resources are
// allocated nor while it is deleted. DynamoDB Local builds an index at
// once, so the states are given here as DynamoDB answers them.
func TestIndexStatus(t *testing.T) {
	gsi := func(name string, status types.IndexStatus, backfilling *bool) types.GlobalSecondaryIndexDescription {
		return types.GlobalSecondaryIndexDescription{
			IndexName: aws.String(name), IndexStatus: status, Backfilling: backfilling,
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("a"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}
	}
	ks, left := schemaOf(&types.TableDescription{
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndexDescription{
			gsi("active", types.IndexStatusActive, nil),
			gsi("updating", types.IndexStatusUpdating, aws.Bool(false)),
			gsi("allocating", types.IndexStatusCreating, aws.Bool(false)),
			gsi("backfilling", types.IndexStatusCreating, aws.Bool(true)),
			gsi("deleting", types.IndexStatusDeleting, nil),
		},
	})
	var counted []string
	for name := range ks.Indexes {
		counted = append(counted, name)
	}
	if len(counted) != 3 || ks.Indexes["active"].PartitionKey != "a" || ks.Indexes["updating"].PartitionKey != "a" || ks.Indexes["backfilling"].PartitionKey != "a" {
		t.Errorf("counted %v", counted)
	}
	if want := []string{"allocating (CREATING)", "deleting (DELETING)"}; !reflect.DeepEqual(left, want) {
		t.Errorf("left out %v, want %v", left, want)
	}
}

// deniedDB is the real DynamoDB Local client with DescribeTable refused as
// AWS refuses it without the dynamodb:DescribeTable permission: DynamoDB
// Local enforces no permissions, so the fault is made here.
type deniedDB struct{ *dynamodb.Client }

func (deniedDB) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "User: arn:aws:sts::111122223333:assumed-role/hotkeyd is not authorized to perform: dynamodb:DescribeTable"}
}

// TestDescribeTableRefused checks a refusal: logged once per table with
// what it costs, counted every time, and the indexes configured still
// counted; a success after it is said once.
func TestDescribeTableRefused(t *testing.T) {
	ddb := testenv.DynamoDBLocal(t)
	createOrders(t, ddb.DB, "orders")
	schemas := streamrecord.NewSchemas(nil)
	core, logs := observer.New(zap.InfoLevel)
	rep := &ingesttest.Reporter{}
	d, err := New(Config{Source: "test", Interval: time.Hour}, deniedDB{ddb.DB}, schemas, zap.New(core), rep, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); d.Wait() }()
	d.Watch(ctx, "orders")
	d.Watch(ctx, "orders") // watched already: described once more only by Describe
	d.Describe(ctx, "orders")
	d.Describe(ctx, "orders")
	refused := logs.FilterMessageSnippet("describe table refused")
	if refused.Len() != 1 {
		t.Fatalf("want one log line of the refusal, got %v", logs.All())
	}
	if msg := refused.All()[0].Message; !strings.Contains(msg, "reading on") || !strings.Contains(msg, "not counted") || !strings.Contains(msg, "dynamodb:DescribeTable") {
		t.Errorf("log line does not say what is lost and how to fix it: %q", msg)
	}
	if v := testutil.ToFloat64(d.m.errors.WithLabelValues("test", "orders", ReasonAccessDenied)); v != 3 {
		t.Errorf("hotkeyd_describe_table_errors_total{reason=access_denied} = %v, want 3", v)
	}
	if n := rep.Errors(ReasonAccessDenied) + rep.Errors(ReasonAPI); n != 0 {
		t.Errorf("a refusal is no read error of the source: %d told", n)
	}
	if schemas.Table("orders").HasIndexes() {
		t.Error("indexes learnt from a refused call")
	}
	// Allowed again: learnt, and said.
	d.api = ddb.DB
	d.Describe(ctx, "orders")
	if !schemas.Table("orders").HasIndexes() || logs.FilterMessageSnippet("allowed again").Len() != 1 {
		t.Errorf("after the permission came back: indexes %v, logs %v", schemas.Table("orders").Indexes, logs.All())
	}
}

// TestClassify names DescribeTable's errors by reason.
func TestClassify(t *testing.T) {
	for code, want := range map[string]string{
		"AccessDeniedException":     ReasonAccessDenied,
		"ResourceNotFoundException": ReasonNotFound,
		"ThrottlingException":       ReasonThrottled,
		"ValidationException":       ReasonAPI,
	} {
		if got := classify(&smithy.GenericAPIError{Code: code}); got != want {
			t.Errorf("%s: %s, want %s", code, got, want)
		}
	}
	if got := classify(errors.New("dial tcp: connection refused")); got != ReasonAPI {
		t.Errorf("plain error: %s", got)
	}
}

// TestLearnPastDynamoDBBounds learns answers with more indexes and
// projected attributes than DynamoDB allows a table (DynamoDB Local
// refuses to create such a table, so the answers are made here): the
// indexes within the bounds are taken, the rest are named in a warning
// and counted, not taken.
func TestLearnPastDynamoDBBounds(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	schemas := streamrecord.NewSchemas(nil)
	reg := prometheus.NewRegistry()
	d, err := New(Config{Source: "dynamodb-streams"}, nil, schemas, zap.New(core), traffic.NopReporter{}, reg)
	if err != nil {
		t.Fatal(err)
	}
	gsi := func(name string, attrs int) types.GlobalSecondaryIndexDescription {
		p := &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
		if attrs > 0 {
			p = &types.Projection{ProjectionType: types.ProjectionTypeInclude}
			for i := range attrs {
				p.NonKeyAttributes = append(p.NonKeyAttributes, fmt.Sprintf("attr%d", i))
			}
		}
		return types.GlobalSecondaryIndexDescription{
			IndexName: aws.String(name), IndexStatus: types.IndexStatusActive,
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("a"), KeyType: types.KeyTypeHash}},
			Projection: p,
		}
	}
	pk := []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}
	many := &types.TableDescription{KeySchema: pk}
	for i := range 5000 {
		many.GlobalSecondaryIndexes = append(many.GlobalSecondaryIndexes, gsi(fmt.Sprintf("ix%04d", i), 0))
	}
	wide := &types.TableDescription{KeySchema: pk, GlobalSecondaryIndexes: []types.GlobalSecondaryIndexDescription{gsi("narrow", 10), gsi("wide", 20000)}}
	for _, c := range []struct {
		table string
		desc  *types.TableDescription
		kept  int
		left  int
	}{
		{"many", many, traffic.MaxGlobalIndexes, 5000 - traffic.MaxGlobalIndexes},
		{"wide", wide, 1, 1},
	} {
		d.Learn(c.table, c.desc)
		if got := len(schemas.Table(c.table).Indexes); got != c.kept {
			t.Errorf("%s: %d indexes taken, want %d", c.table, got, c.kept)
		}
		if got := testutil.ToFloat64(d.Errors("dynamodb-streams", c.table, ReasonBeyondLimits)); got != 1 {
			t.Errorf("%s: beyond_limits = %v, want 1", c.table, got)
		}
		lines := logs.FilterField(zap.String("table", c.table)).FilterLevelExact(zap.WarnLevel).All()
		if len(lines) != 1 {
			t.Fatalf("%s: %d warnings, want 1", c.table, len(lines))
		}
		left, _ := lines[0].ContextMap()["not_counted"].([]any)
		if len(left) != c.left || !strings.Contains(fmt.Sprint(left[0]), "past DynamoDB's") {
			t.Errorf("%s: not_counted has %d entries (%v…), want %d, each with the bound", c.table, len(left), left[:min(len(left), 1)], c.left)
		}
	}
}
