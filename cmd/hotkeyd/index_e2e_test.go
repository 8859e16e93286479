package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"golang.org/x/time/rate"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// indexTable creates a table keyed by distinct order ids with two global
// indexes, both KEYS_ONLY: by-status (status, created), where most orders
// share one status, and by-flag (flag), which only the few flagged orders
// are in (a sparse index); its stream of the given view type.
func indexTable(t *testing.T, db *dynamodb.Client, name string, view types.StreamViewType) {
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
	keysOnly := &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
	if _, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{s("order_id"), s("status"), s("created"), s("flag")},
		KeySchema:            key("order_id", ""),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: aws.String("by-status"), KeySchema: key("status", "created"), Projection: keysOnly},
			{IndexName: aws.String("by-flag"), KeySchema: key("flag", ""), Projection: keysOnly},
		},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: view},
	}); err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
}

// orderApp is the application: it writes orders with the AWS SDK and keeps
// the truth the test judges hotkeyd by — how many writes of the status
// index's PENDING partition it caused in each second, by DynamoDB's rules
// (a put of a PENDING order: one; a PENDING order moved to another status:
// a delete on PENDING, and a put on the other; a PENDING order deleted:
// one).
type orderApp struct {
	db    *dynamodb.Client
	table string

	mu      sync.Mutex
	pending map[int64]int // second → writes of PENDING's index partition
	// statusWrites counts the writes of by-status, flagWrites of by-flag,
	// as DynamoDB makes them.
	statusWrites, flagWrites atomic.Int64
}

func newOrderApp(db *dynamodb.Client, table string) *orderApp {
	return &orderApp{db: db, table: table, pending: map[int64]int{}}
}

func (a *orderApp) pendingWrite(n int) {
	a.mu.Lock()
	a.pending[time.Now().Unix()] += n
	a.mu.Unlock()
}

// truth is the busiest second of PENDING's index partition so far.
func (a *orderApp) truth() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	most := 0
	for _, n := range a.pending {
		most = max(most, n)
	}
	return most
}

func (a *orderApp) put(t *testing.T, id, status string, flagged bool) {
	item := map[string]types.AttributeValue{
		"order_id": &types.AttributeValueMemberS{Value: id},
		"status":   &types.AttributeValueMemberS{Value: status},
		"created":  &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339Nano)},
		"total":    &types.AttributeValueMemberN{Value: "42.50"},
	}
	if flagged {
		item["flag"] = &types.AttributeValueMemberS{Value: "REVIEW"}
	}
	if _, err := a.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(a.table), Item: item}); err != nil {
		t.Errorf("put %s: %v", id, err)
		return
	}
	a.statusWrites.Add(1)
	if flagged {
		a.flagWrites.Add(1)
	}
	if status == "PENDING" {
		a.pendingWrite(1)
	}
}

// update sets one attribute of an order (SET name = value).
func (a *orderApp) update(t *testing.T, id, name, value string) {
	if _, err := a.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(a.table),
		Key:                       map[string]types.AttributeValue{"order_id": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("SET #a = :v"),
		ExpressionAttributeNames:  map[string]string{"#a": name},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: value}},
	}); err != nil {
		t.Errorf("update %s: %v", id, err)
	}
}

func (a *orderApp) remove(t *testing.T, id string) {
	if _, err := a.db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(a.table),
		Key:       map[string]types.AttributeValue{"order_id": &types.AttributeValueMemberS{Value: id}},
	}); err != nil {
		t.Errorf("delete %s: %v", id, err)
	}
}

// statusOf is the status of the i-th order: four in five PENDING.
func statusOf(i int) string {
	if i%5 != 0 {
		return "PENDING"
	}
	return [...]string{"SHIPPED", "DELIVERED", "CANCELLED"}[i/5%3]
}

// TestIndexHeatFromStreams runs hotkeyd on the stream of a DynamoDB Local
// table whose own keys are all distinct (order ids) and whose status index
// takes four writes in five on PENDING: the index's partition for PENDING
// is hot while every key of the table is cold, which only the index
// writes told from the stream's item images can show.
//
// DynamoDB Local sustains a few hundred writes a second on this shared
// machine, not the 1150 of a production table: the application puts 60
// orders a second, so about 48 index writes a second land on PENDING, and
// the test's config sets write_limit to 52 WCU/s, so that PENDING sits at
// 92 % of the partition ceiling as 920 of 1000 WCU/s would (the same rule
// at a twentieth of the rate: detect's index_writes_scaled scenario, and
// the analyze test below at the full rate).
//
// Then, exactly counted: orders moved from PENDING to SHIPPED cost the
// index two writes each, updates of an attribute the KEYS_ONLY index does
// not project none, deletes one; the sparse index by-flag counts only its
// few flagged orders. A second table with a KEYS_ONLY stream has its own
// writes counted and says that its index heat is not available (log line,
// metric, report note).
func TestIndexHeatFromStreams(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	if testing.Short() {
		t.Skip("starts DynamoDB Local and hotkeyd")
	}
	ddb := testenv.DynamoDBLocal(t)
	indexTable(t, ddb.DB, "orders", types.StreamViewTypeNewAndOldImages)
	indexTable(t, ddb.DB, "orders_ko", types.StreamViewTypeKeysOnly)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	cfg := fmt.Sprintf(`window: 60s
detector:
  write_limit: 52        # DynamoDB Local's rate: PENDING at 92%% of it, as 920 of 1000
sources:
  - type: dynamodb-streams
    tables: [orders, orders_ko]
    region: us-east-1
    endpoint: %s
    start: trim_horizon
`, ddb.Endpoint)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{Env: []string{
		"AWS_ACCESS_KEY_ID=hotkeyd", "AWS_SECRET_ACCESS_KEY=hotkeyd", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
	}}, "run", "--config.file", cfgPath)
	h.WaitLog(t, `msg="table indexes"`, settle)

	// Phase 1: 60 orders a second for 20 seconds, 8 writers, one order in
	// 100 flagged for review.
	app := newOrderApp(ddb.DB, "orders")
	const orders = 1200
	limiter := rate.NewLimiter(60, 1)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= orders || limiter.Wait(context.Background()) != nil {
					return
				}
				app.put(t, fmt.Sprintf("ORDER#%05d", i), statusOf(i), i%100 == 7)
			}
		})
	}
	wg.Wait()
	truth := app.truth()
	t.Logf("put %d orders; PENDING's index partition peaked at %d writes/s (the truth)", orders, truth)

	// A write diagnosis on orders/by-status, key PENDING, at warning or
	// above, its busiest second within 2× of the truth; nothing that pages
	// on the table's own keys.
	var diag report.Diagnosis
	waitUntil(t, settle, "a write diagnosis of PENDING on orders/by-status", func() bool {
		for _, tr := range getReport(t, h).Tables {
			if tr.Table != "orders" || tr.Index != "by-status" {
				continue
			}
			for _, d := range tr.Diagnoses {
				if d.Class == "write" && d.Key() == "PENDING" && d.Severity.Pages() {
					diag = d
					return true
				}
			}
		}
		return false
	})
	t.Logf("diagnosis: %s %s, peak %.0f WCU/s; fix %s: %s", diag.Cause, diag.Severity, diag.PeakUnitsPerSecond, diag.Fix.Kind, diag.Fix.Text)
	if diag.PeakUnitsPerSecond < float64(truth)/2 || diag.PeakUnitsPerSecond > 2*float64(truth) {
		t.Errorf("busiest second %.1f WCU/s, not within 2× of the truth, %d", diag.PeakUnitsPerSecond, truth)
	}
	if !strings.Contains(diag.Summary, "back-pressure") {
		t.Errorf("the diagnosis does not say why a healthy table cares: %s", diag.Summary)
	}
	if diag.Fix.Kind != report.AdviceCalculatedSuffix || diag.Fix.SuffixCount < 2 || diag.After == nil {
		t.Errorf("fix %+v, after %+v: want the index key spread, with its after-state", diag.Fix, diag.After)
	}
	for _, tr := range getReport(t, h).Tables {
		for _, d := range tr.Diagnoses {
			if tr.Table == "orders" && tr.Index == "" && d.Severity.Pages() {
				t.Errorf("the table's own keys paged: %+v", d)
			}
		}
	}

	// Phase 2: 60 PENDING orders moved to SHIPPED (two index writes each),
	// 40 orders' note updated (none: KEYS_ONLY projects no note), 20
	// PENDING orders deleted (one each).
	for i, moved := 1, 0; moved < 60; i++ {
		if statusOf(i) == "PENDING" && i%100 != 7 {
			app.update(t, fmt.Sprintf("ORDER#%05d", i), "status", "SHIPPED")
			app.statusWrites.Add(2)
			app.pendingWrite(1)
			moved++
		}
	}
	for i := range 40 {
		app.update(t, fmt.Sprintf("ORDER#%05d", 2*i+1), "note", "gift wrap")
	}
	for i, deleted := orders-1, 0; deleted < 20; i-- {
		if statusOf(i) == "PENDING" && i%100 != 7 {
			app.remove(t, fmt.Sprintf("ORDER#%05d", i))
			app.statusWrites.Add(1)
			app.pendingWrite(1)
			deleted++
		}
	}
	series := func(table string) string {
		return fmt.Sprintf(`hotkeyd_events_total{class="write",source="dynamodb-streams",table=%q}`, table)
	}
	table := float64(orders + 60 + 40 + 20)
	waitMetric(t, h, series("orders"), table, settle)
	m := waitMetric(t, h, series("orders/by-status"), float64(app.statusWrites.Load()), settle)
	if got, want := m[series("orders/by-flag")], float64(app.flagWrites.Load()); got != want {
		t.Errorf("sparse index by-flag: %v writes, want %v (its flagged orders only)", got, want)
	}
	t.Logf("table writes %v, by-status %v, by-flag %v", m[series("orders")], m[series("orders/by-status")], m[series("orders/by-flag")])

	// The KEYS_ONLY stream: its writes counted, its index heat said to be
	// unavailable, and nothing of its indexes counted.
	ko := newOrderApp(ddb.DB, "orders_ko")
	for i := range 100 {
		ko.put(t, fmt.Sprintf("ORDER#%05d", i), statusOf(i), false)
	}
	m = waitMetric(t, h, series("orders_ko"), 100, settle)
	waitMetric(t, h, `hotkeyd_index_writes_unknown_total{source="dynamodb-streams",table="orders_ko",view_type="KEYS_ONLY"}`, 100, settle)
	if _, ok := m[series("orders_ko/by-status")]; ok {
		t.Errorf("index writes counted from a KEYS_ONLY stream: %v", m[series("orders_ko/by-status")])
	}
	h.WaitLog(t, `index writes not all told`, settle)
	// The report of the next evaluation says it too.
	waitUntil(t, settle, "a report note saying orders_ko's index heat is not available", func() bool {
		notes := strings.Join(getReport(t, h).Notes, "\n")
		return strings.Contains(notes, "orders_ko") && strings.Contains(notes, "KEYS_ONLY") && strings.Contains(notes, "index heat is not available")
	})
	if _, ok := m[`hotkeyd_index_writes_unknown_total{source="dynamodb-streams",table="orders",view_type="NEW_AND_OLD_IMAGES"}`]; ok {
		t.Error("a NEW_AND_OLD_IMAGES stream counted as hiding index writes")
	}
}

// orderChange is one change of an order as DynamoDB records it: the item
// before (nil for a put of a new order) and after (nil for a delete).
type orderChange struct {
	at       time.Time
	id       string
	old, cur map[string]string
}

// orderChanges is the workload at the production rate: perSecond
// orders a second for seconds seconds, four in five PENDING, one in a
// hundred flagged (the sparse index), from start; then 60 PENDING orders
// moved to SHIPPED, 40 notes set and 20 PENDING orders deleted, 20 changes
// a second. It returns the changes, the writes they cause in by-status
// and by-flag, and the busiest second of PENDING's index partition (the
// truth), by DynamoDB's rules.
func orderChanges(start time.Time, perSecond, seconds int) (changes []orderChange, statusWrites, flagWrites, truth int) {
	items := map[string]map[string]string{}
	pending := map[int64]int{}
	add := func(at time.Time, id string, cur map[string]string) {
		old := items[id]
		changes = append(changes, orderChange{at: at, id: id, old: old, cur: cur})
		if cur == nil {
			delete(items, id)
		} else {
			items[id] = cur
		}
		switch {
		case old == nil:
			statusWrites++
		case cur == nil:
			statusWrites++
		case old["status"] != cur["status"]:
			statusWrites += 2
		}
		if cur != nil && cur["flag"] != "" || old != nil && old["flag"] != "" {
			if old == nil || cur == nil {
				flagWrites++
			}
		}
		wasPending := old != nil && old["status"] == "PENDING"
		isPending := cur != nil && cur["status"] == "PENDING"
		if wasPending != isPending {
			pending[at.Unix()]++ // a put on PENDING, or a delete from it
		}
	}
	n := perSecond * seconds
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second / time.Duration(perSecond))
		item := map[string]string{"order_id": fmt.Sprintf("ORDER#%06d", i), "status": statusOf(i), "created": at.UTC().Format(time.RFC3339Nano), "total": "42.50"}
		if i%100 == 7 {
			item["flag"] = "REVIEW"
		}
		add(at, item["order_id"], item)
	}
	at := start.Add(time.Duration(seconds) * time.Second)
	step := func() time.Time { at = at.Add(50 * time.Millisecond); return at }
	for i, moved := 1, 0; moved < 60; i++ {
		if id := fmt.Sprintf("ORDER#%06d", i); statusOf(i) == "PENDING" && i%100 != 7 {
			cur := maps.Clone(items[id])
			cur["status"] = "SHIPPED"
			add(step(), id, cur)
			moved++
		}
	}
	for i := range 40 {
		id := fmt.Sprintf("ORDER#%06d", 2*i+1)
		cur := maps.Clone(items[id])
		cur["note"] = "gift wrap"
		add(step(), id, cur)
	}
	for i, deleted := n-1, 0; deleted < 20; i-- {
		if id := fmt.Sprintf("ORDER#%06d", i); statusOf(i) == "PENDING" && i%100 != 7 {
			add(step(), id, nil)
			deleted++
		}
	}
	for _, c := range pending {
		truth = max(truth, c)
	}
	return changes, statusWrites, flagWrites, truth
}

// record renders a change as DynamoDB writes it: a Kinesis Data Streams
// for DynamoDB payload (kinesis: times in milliseconds, tableName, no view
// type: both images), or a DynamoDB Streams record as a Lambda function
// receives it (view type viewType; its images as that view type carries
// them).
func (c orderChange) record(seq int, kinesis bool, table string, viewType types.StreamViewType) string {
	image := func(item map[string]string) string {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(item)) {
			typ := "S"
			if k == "total" {
				typ = "N"
			}
			parts = append(parts, fmt.Sprintf("%q:{%q:%q}", k, typ, item[k]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	name := "MODIFY"
	switch {
	case c.old == nil:
		name = "INSERT"
	case c.cur == nil:
		name = "REMOVE"
	}
	body := fmt.Sprintf(`"Keys":{"order_id":{"S":%q}}`, c.id)
	size := 40
	if c.cur != nil && (kinesis || viewType == types.StreamViewTypeNewImage || viewType == types.StreamViewTypeNewAndOldImages) {
		body += `,"NewImage":` + image(c.cur)
		size += 120
	}
	if c.old != nil && (kinesis || viewType == types.StreamViewTypeOldImage || viewType == types.StreamViewTypeNewAndOldImages) {
		body += `,"OldImage":` + image(c.old)
		size += 120
	}
	if kinesis {
		return fmt.Sprintf(`{"awsRegion":"us-east-1","eventID":"%s-%d","eventName":%q,"userIdentity":null,"recordFormat":"application/json","tableName":%q,"dynamodb":{"ApproximateCreationDateTime":%d,%s,"SizeBytes":%d},"eventSource":"aws:dynamodb"}`,
			table, seq, name, table, c.at.UnixMilli(), body, size)
	}
	return fmt.Sprintf(`{"eventID":"%s-%d","eventName":%q,"eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"us-east-1","dynamodb":{"ApproximateCreationDateTime":%.3f,%s,"SequenceNumber":"%021d","SizeBytes":%d,"StreamViewType":%q},"eventSourceARN":"arn:aws:dynamodb:us-east-1:111122223333:table/%s/stream/2026-01-01T00:00:00.000"}`,
		table, seq, name, float64(c.at.UnixMilli())/1000, body, seq, size, viewType, table)
}

// checkIndexDiagnosis checks a report for the outcome: a write
// diagnosis of PENDING on orders/by-status at warning or above, its
// busiest second within 2× of the truth, saying why a healthy table
// cares; nothing that pages on the table's own keys.
func checkIndexDiagnosis(t *testing.T, rep report.Report, truth int) {
	t.Helper()
	var found bool
	for _, tr := range rep.Tables {
		for _, d := range tr.Diagnoses {
			switch {
			case tr.Table == "orders" && tr.Index == "" && d.Severity.Pages():
				t.Errorf("the table's own keys paged: %+v", d)
			case tr.Table == "orders" && tr.Index == "by-status" && d.Class == "write" && d.Key() == "PENDING" && d.Severity.Pages():
				found = true
				t.Logf("diagnosis: %s %s, peak %.0f WCU/s (truth %d); fix %s over %d", d.Cause, d.Severity, d.PeakUnitsPerSecond, truth, d.Fix.Kind, d.Fix.SuffixCount)
				if d.PeakUnitsPerSecond < float64(truth)/2 || d.PeakUnitsPerSecond > 2*float64(truth) {
					t.Errorf("busiest second %.1f WCU/s, not within 2× of the truth, %d", d.PeakUnitsPerSecond, truth)
				}
				if !strings.Contains(d.Summary, "back-pressure") || d.Fix.Kind != report.AdviceCalculatedSuffix || d.After == nil {
					t.Errorf("diagnosis %+v: want the back-pressure said, the index key spread and its after-state", d)
				}
			}
		}
	}
	if !found {
		t.Errorf("no write diagnosis of PENDING on orders/by-status at warning or above: %+v", rep.Tables)
	}
}

// TestIndexHeatFromKinesis writes the workload to a Kinesis stream
// (kinesalite) as Kinesis Data Streams for DynamoDB would — kinesalite
// does not connect to DynamoDB Local, so the test writes DynamoDB's change
// records itself, at the production rate: 1150 orders a second, 920 of
// them PENDING — and runs hotkeyd on it with the table's indexes learnt
// with DescribeTable from DynamoDB Local, where the table exists with its
// indexes (no tables: section).
func TestIndexHeatFromKinesis(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	if testing.Short() {
		t.Skip("starts kinesalite, DynamoDB Local and hotkeyd")
	}
	ddb := testenv.DynamoDBLocal(t)
	indexTable(t, ddb.DB, "orders", types.StreamViewTypeNewAndOldImages)
	k := testenv.StartKinesalite(t)
	ctx := context.Background()
	const stream = "orders-cdc"
	if _, err := k.Client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, settle, "the stream to be active", func() bool {
		out, err := k.Client.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
		return err == nil && out.StreamDescriptionSummary.StreamStatus == ktypes.StreamStatusActive
	})
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	cfg := fmt.Sprintf(`window: 60s
sources:
  - type: kinesis
    streams: [%s]
    region: us-east-1
    endpoint: %s
    dynamodb_endpoint: %s    # DescribeTable: the table's indexes
    start: trim_horizon
    poll_interval: 200ms
`, stream, k.Endpoint, ddb.Endpoint)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{Env: []string{
		"AWS_ACCESS_KEY_ID=hotkeyd", "AWS_SECRET_ACCESS_KEY=hotkeyd", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
	}}, "run", "--config.file", cfgPath)

	// The change records, put as they happen: a batch every 100 ms.
	changes, statusWrites, flagWrites, truth := orderChanges(time.Now(), 1150, 10)
	for i := 0; i < len(changes); {
		var entries []ktypes.PutRecordsRequestEntry
		until := changes[i].at.Add(100 * time.Millisecond)
		for ; i < len(changes) && changes[i].at.Before(until) && len(entries) < 500; i++ {
			entries = append(entries, ktypes.PutRecordsRequestEntry{
				Data: []byte(changes[i].record(i, true, "orders", "")), PartitionKey: aws.String(changes[i].id),
			})
		}
		putAll(t, k.Client, stream, entries)
		time.Sleep(time.Until(until))
	}
	series := func(table string) string {
		return fmt.Sprintf(`hotkeyd_events_total{class="write",source="kinesis",table=%q}`, table)
	}
	waitMetric(t, h, series("orders"), float64(len(changes)), settle)
	m := waitMetric(t, h, series("orders/by-status"), float64(statusWrites), settle)
	if got := m[series("orders/by-flag")]; got != float64(flagWrites) {
		t.Errorf("sparse index by-flag: %v writes, want %v", got, flagWrites)
	}
	var rep report.Report
	waitUntil(t, settle, "the index diagnosis", func() bool {
		rep = getReport(t, h)
		for _, tr := range rep.Tables {
			for _, d := range tr.Diagnoses {
				if tr.Index == "by-status" && d.Key() == "PENDING" && d.Severity.Pages() {
					return true
				}
			}
		}
		return false
	})
	checkIndexDiagnosis(t, rep, truth)
	if n := m[`hotkeyd_describe_table_errors_total{reason="access_denied",source="kinesis",table="orders"}`]; n != 0 {
		t.Errorf("DescribeTable refused %v times by DynamoDB Local", n)
	}
}

// putAll puts entries, again those Kinesis refused (kinesalite throttles
// a shard past its rate).
func putAll(t *testing.T, c *kinesis.Client, stream string, entries []ktypes.PutRecordsRequestEntry) {
	t.Helper()
	for len(entries) > 0 {
		out, err := c.PutRecords(context.Background(), &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries})
		if err != nil {
			t.Fatalf("put records: %v", err)
		}
		var again []ktypes.PutRecordsRequestEntry
		for i, r := range out.Records {
			if r.ErrorCode != nil {
				again = append(again, entries[i])
			}
		}
		if len(again) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		entries = again
	}
}

// TestIndexHeatFromDump runs hotkeyd analyze on the workload as a file of
// DynamoDB Streams records (Lambda events), with the index declared under
// tables: in the config, at the production rate; and on the same writes of
// a KEYS_ONLY stream, whose report says the index heat is not available.
func TestIndexHeatFromDump(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes and analyzes 11 500 records")
	}
	dir := t.TempDir()
	changes, _, _, truth := orderChanges(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), 1150, 10)
	write := func(name, table string, view types.StreamViewType) string {
		var b strings.Builder
		b.WriteString(`{"Records":[`)
		for i, c := range changes {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(c.record(i, false, table, view))
		}
		b.WriteString("]}\n")
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	if err := os.WriteFile(cfgPath, []byte(`tables:
  orders:
    partition_key: order_id
    indexes:
      by-status: {partition_key: status, sort_key: created, projection: KEYS_ONLY}
      by-flag: {partition_key: flag, projection: KEYS_ONLY}
  orders_ko:
    partition_key: order_id
    indexes:
      by-status: {partition_key: status, sort_key: created, projection: KEYS_ONLY}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	analyze := func(file string) report.Report {
		cmd := exec.Command(testenv.Binary(t), "analyze", "--config.file", cfgPath, "--format", "json", file)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("analyze %s: %v\n%s", file, err, stderr.String())
		}
		var rep report.Report
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("analyze %s: %v\n%s", file, err, out)
		}
		return rep
	}
	rep := analyze(write("orders.json", "orders", types.StreamViewTypeNewAndOldImages))
	checkIndexDiagnosis(t, rep, truth)
	for _, n := range rep.Notes {
		if strings.Contains(n, "Index writes") {
			t.Errorf("a NEW_AND_OLD_IMAGES stream noted as hiding index writes: %s", n)
		}
	}

	rep = analyze(write("orders_ko.json", "orders_ko", types.StreamViewTypeKeysOnly))
	for _, tr := range rep.Tables {
		if tr.Index != "" {
			t.Errorf("index writes counted from a KEYS_ONLY stream: %s/%s", tr.Table, tr.Index)
		}
		if tr.Table == "orders_ko" && tr.Events != uint64(len(changes)) {
			t.Errorf("orders_ko: %d writes counted, want %d", tr.Events, len(changes))
		}
	}
	if notes := strings.Join(rep.Notes, "\n"); !strings.Contains(notes, "orders_ko") || !strings.Contains(notes, "index heat is not available") {
		t.Errorf("the notes do not say orders_ko's index heat is not available:\n%s", notes)
	}
}
