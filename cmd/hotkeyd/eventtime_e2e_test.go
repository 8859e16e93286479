package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
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
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// The backlog scenario of the event-time tests: a modest table, one key
// at 30 % of 200 writes/s (60 WCU/s: nothing to page anyone for), and a hot
// table, one key at about 1100 WCU/s (11 writes/s of 100 KB items): near
// the partition's 1000 WCU/s ceiling, and paged (at half of it) even when
// a loaded machine lets DynamoDB Local take only half the writes on time.
// Read as a backlog in a second or two, counted by arrival the modest key
// would peak at thousands of WCU/s.
const (
	backlogModest    = "ev_modest"
	backlogHot       = "ev_hot"
	backlogRate      = 200 // writes per second to the modest table
	backlogHotRate   = 11  // writes per second of HOT#1 to the hot table
	backlogHotItemKB = 100
)

// anyAtOrAbove matches a flagged diagnosis of table at warning or
// critical.
func anyAtOrAbove(table string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^hotkeyd_diagnosis\{[^}]*severity="(warning|critical)",table="` + regexp.QuoteMeta(table) + `"\} 1$`)
}

// pagedKey matches a flagged diagnosis of key in table at warning or
// critical. DynamoDB Local's creation times are whole minutes, so a key
// near the ceiling for part of a minute is spread over the seconds it may
// have been written in (docs/streams.md#event-time): raised, at warning at
// least; with whole seconds or milliseconds, critical.
func pagedKey(table, key string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^hotkeyd_diagnosis\{[^}]*key="` + regexp.QuoteMeta(key) + `",severity="(warning|critical)",table="` + regexp.QuoteMeta(table) + `"\} 1$`)
}

// judgeBacklog watches a daemon reading the backlog: every /metrics page
// until the modest and hot tables' events reach their counts and, when
// page is set, the hot key is raised (at warning or above), then 5 s more.
// No page may show a diagnosis of the modest table at warning or above.
func judgeBacklog(t *testing.T, d *streamsDaemon, source string, modest, hot float64, page bool) {
	t.Helper()
	modestSeries := fmt.Sprintf(`hotkeyd_events_total{class="write",source=%q,table=%q}`, source, backlogModest)
	hotSeries := fmt.Sprintf(`hotkeyd_events_total{class="write",source=%q,table=%q}`, source, backlogHot)
	bad, raised := anyAtOrAbove(backlogModest), pagedKey(backlogHot, "HOT#1")
	began := time.Now()
	var doneAt time.Time
	for {
		_, body := d.get("/metrics")
		if m := bad.FindString(body); m != "" {
			t.Fatalf("the modest backlog was paged after %v: %s\n%s", time.Since(began).Round(time.Millisecond), m, grepLines(body, "hotkeyd_diagnosis"))
		}
		if doneAt.IsZero() && (raised.MatchString(body) || !page) && d.metric(t, modestSeries) >= modest && d.metric(t, hotSeries) >= hot {
			doneAt = time.Now()
			t.Logf("backlog read and HOT#1 raised %v after the start: %s", doneAt.Sub(began).Round(time.Millisecond), raised.FindString(body))
		}
		if !doneAt.IsZero() && time.Since(doneAt) > 5*time.Second {
			break
		}
		if doneAt.IsZero() && time.Since(began) > settle {
			t.Fatalf("after %v: modest %v of %v events, hot %v of %v, HOT#1 raised %v\n%s\n%s", settle,
				d.metric(t, modestSeries), modest, d.metric(t, hotSeries), hot, raised.MatchString(body),
				grepLines(body, "hotkeyd_diagnosis"), grepLines(body, "hotkeyd_key_peak_units_per_second"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	rep := d.report(t)
	for _, tr := range rep.Tables {
		for _, k := range tr.TopKeys {
			if k.Key == "HOT#1" || strings.HasPrefix(k.Key, "MODEST") {
				t.Logf("%s %s: busiest second %.0f WCU/s, mean %.1f", tr.Table, k.Key, k.PeakUnitsPerSecond, k.UnitsPerSecond)
			}
		}
	}
	checkCaughtUp(t, d, rep, source)
}

// checkCaughtUp checks that source says it is caught up once its backlog
// was read: lag 0 in the metrics and in the report.
func checkCaughtUp(t *testing.T, d *streamsDaemon, rep report.Report, source string) {
	t.Helper()
	if lag := d.metric(t, `hotkeyd_source_lag_seconds{source="`+source+`"}`); lag != 0 {
		t.Errorf("hotkeyd_source_lag_seconds{source=%q} = %v once caught up, want 0", source, lag)
	}
	if late := d.metric(t, `hotkeyd_late_events_total{source="`+source+`"}`); late < 0 {
		t.Errorf("no hotkeyd_late_events_total series for %s", source)
	}
	for _, s := range rep.Sources {
		if s.Source == source {
			if s.CatchingUp || s.LagSeconds != 0 || s.Watermark.IsZero() {
				t.Errorf("source %s in /api/v1/hotkeys once caught up: %+v", source, s)
			}
			return
		}
	}
	t.Errorf("/api/v1/hotkeys names no source %s: %+v", source, rep.Sources)
}

// report returns the daemon's /api/v1/hotkeys, once it has one.
func (d *streamsDaemon) report(t *testing.T) report.Report {
	t.Helper()
	code, body := d.get("/api/v1/hotkeys")
	for deadline := time.Now().Add(settle); code == 503 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		code, body = d.get("/api/v1/hotkeys")
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(body), &rep); code != 200 || err != nil {
		t.Fatalf("/api/v1/hotkeys: %d %v\n%s", code, err, body)
	}
	return rep
}

// TestStreamsBacklogJudgedAtItsRates writes 60 s of traffic to DynamoDB
// Local before hotkeyd starts with start: trim_horizon: the modest key is
// never paged, the key near the ceiling is. Then hotkeyd is killed
// (SIGKILL), 40 s more are written, and the restarted process, reading
// them from its checkpoints, judges them the same. DynamoDB Local gives
// creation times in whole minutes, so this also tests their narrowing
// (docs/streams.md#event-time).
func TestStreamsBacklogJudgedAtItsRates(t *testing.T) {
	t.Parallel() // a DynamoDB Local and processes of its own, on ports of its own
	if testing.Short() {
		t.Skip("writes two minutes of traffic to DynamoDB Local")
	}
	ddb := testenv.DynamoDBLocal(t)
	write := streamsBacklog(t, ddb)
	cpDir := t.TempDir()
	cfgPath := writeConfig(t, fmt.Sprintf(`window: 10m
sources:
  - type: dynamodb-streams
    tables: [%s, %s]
    region: us-east-1
    endpoint: %s
    start: trim_horizon
    checkpoint_dir: %s
`, backlogModest, backlogHot, ddb.Endpoint, cpDir))

	modest, hot, page := write(60 * time.Second)
	d1 := startStreamsDaemon(t, cfgPath)
	judgeBacklog(t, d1, "dynamodb-streams", modest, hot, page)
	d1.kill()

	// A backlog left behind by a crash: read from the checkpoints.
	modest2, hot2, page2 := write(40 * time.Second)
	d2 := startStreamsDaemon(t, cfgPath)
	judgeBacklog(t, d2, "dynamodb-streams", modest2, hot2, page2)
	d2.stop(t)
}

// TestStreamsBacklogTakenOverByReplica: a replica holding the shards'
// leases is killed; 40 s of traffic are written; another replica takes
// the leases once they expire and reads that backlog from the dead one's
// checkpoints, judging it at the rates it was written.
func TestStreamsBacklogTakenOverByReplica(t *testing.T) {
	t.Parallel() // a DynamoDB Local and processes of its own, on ports of its own
	if testing.Short() {
		t.Skip("writes 40 s of traffic to DynamoDB Local")
	}
	ddb := testenv.DynamoDBLocal(t)
	write := streamsBacklog(t, ddb)
	cfg := func(worker string) string {
		return writeConfig(t, fmt.Sprintf(`window: 10m
sources:
  - type: dynamodb-streams
    tables: [%s, %s]
    region: us-east-1
    endpoint: %s
    start: trim_horizon
    lease_table: ev_leases
    worker_id: %s
    failover_time: 3s
`, backlogModest, backlogHot, ddb.Endpoint, worker))
	}
	a := startStreamsDaemon(t, cfg("a"))
	for deadline := time.Now().Add(settle); a.metric(t, `hotkeyd_leases_held{lease_table="ev_leases"}`) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("replica a holds not both shards' leases within %v", settle)
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.kill()
	modest, hot, page := write(40 * time.Second)
	b := startStreamsDaemon(t, cfg("b"))
	judgeBacklog(t, b, "dynamodb-streams", modest, hot, page)
	b.stop(t)
}

// streamsBacklog creates the scenario's tables in ddb and returns the
// function that writes d of its traffic, paced per second, and returns
// the writes made to each table and whether the hot key's busiest second,
// as written, warrants a page: DynamoDB Local on a loaded machine may
// take fewer writes a second than asked, and a backlog is judged at the
// rates it was written, whatever they were.
func streamsBacklog(t *testing.T, ddb *testenv.DDBLocal) func(d time.Duration) (modest, hot float64, page bool) {
	t.Helper()
	ctx := context.Background()
	for _, tb := range []struct {
		name string
		view types.StreamViewType
	}{{backlogModest, types.StreamViewTypeKeysOnly}, {backlogHot, types.StreamViewTypeNewImage}} {
		if _, err := ddb.DB.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(tb.name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
			StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: tb.view},
		}); err != nil {
			t.Fatalf("create table %s: %v", tb.name, err)
		}
	}
	var serial atomic.Int64
	big := strings.Repeat("x", backlogHotItemKB*1024-100)
	put := func(table, key, body string) bool {
		_, err := ddb.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk":   &types.AttributeValueMemberS{Value: key},
			"n":    &types.AttributeValueMemberN{Value: strconv.FormatInt(serial.Add(1), 10)},
			"body": &types.AttributeValueMemberS{Value: body},
		}})
		if err != nil {
			t.Errorf("put item into %s: %v", table, err)
		}
		return err == nil
	}
	return func(d time.Duration) (modest, hot float64, page bool) {
		var nm, nh atomic.Int64
		var hotMu sync.Mutex
		hotPerSecond := map[int64]int{} // HOT#1 writes done, by second of the clock
		jobs := make(chan func(), 512)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for j := range jobs {
					j()
				}
			})
		}
		rnd := rand.New(rand.NewPCG(uint64(serial.Load()), 7))
		began := time.Now()
		for s := 0; time.Since(began) < d; s++ {
			second := began.Add(time.Duration(s) * time.Second)
			for i := range backlogRate {
				key := "MODEST#1"
				if i%10 >= 3 { // 30 % on MODEST#1
					key = fmt.Sprintf("OTHER#%d", rnd.IntN(2000))
				}
				jobs <- func() {
					if put(backlogModest, key, "v") {
						nm.Add(1)
					}
				}
				if i%(backlogRate/backlogHotRate) == 0 && i/(backlogRate/backlogHotRate) < backlogHotRate {
					jobs <- func() {
						if put(backlogHot, "HOT#1", big) {
							nh.Add(1)
							hotMu.Lock()
							hotPerSecond[time.Now().Unix()]++
							hotMu.Unlock()
						}
					}
				}
			}
			time.Sleep(time.Until(second.Add(time.Second)))
		}
		close(jobs)
		wg.Wait()
		busiest := 0
		for _, n := range hotPerSecond {
			busiest = max(busiest, n)
		}
		// A warning is half the 1000 WCU/s ceiling; DynamoDB Local's
		// creation times are whole minutes, placed in seconds again by
		// their order, so ask for a margin above it.
		page = busiest*backlogHotItemKB >= 700
		t.Logf("wrote %d modest and %d hot writes in %v, HOT#1 at most %d WCU/s in a second (page expected: %v)",
			nm.Load(), nh.Load(), time.Since(began).Round(time.Millisecond), busiest*backlogHotItemKB, page)
		return float64(nm.Load()), float64(nh.Load()), page
	}
}

// kinesisBacklog writes d of the scenario ending now into stream, as
// Kinesis Data Streams for DynamoDB does: each record's payload carries
// its creation time in milliseconds. It returns the records of each
// table.
func kinesisBacklog(t *testing.T, k *testenv.Kinesalite, stream string, d time.Duration) (modest, hot float64) {
	t.Helper()
	ctx := context.Background()
	end := time.Now()
	start := end.Add(-d)
	rnd := rand.New(rand.NewPCG(uint64(end.UnixNano()), 3))
	var entries []ktypes.PutRecordsRequestEntry
	add := func(table, key string, at time.Time, size int) {
		data := fmt.Sprintf(`{"awsRegion":"us-east-1","eventID":"e-%d","eventName":"MODIFY","userIdentity":null,"recordFormat":"application/json","tableName":%q,"dynamodb":{"ApproximateCreationDateTime":%d,"Keys":{"pk":{"S":%q}},"SizeBytes":%d},"eventSource":"aws:dynamodb"}`,
			len(entries)+int(end.UnixNano()%1e9), table, at.UnixMilli(), key, size)
		entries = append(entries, ktypes.PutRecordsRequestEntry{Data: []byte(data), PartitionKey: aws.String(key)})
	}
	for s := 0; s < int(d/time.Second); s++ {
		for i := range backlogRate {
			at := start.Add(time.Duration(s)*time.Second + time.Duration(i)*time.Second/backlogRate)
			key := "MODEST#1"
			if i%10 >= 3 {
				key = fmt.Sprintf("OTHER#%d", rnd.IntN(2000))
			}
			add(backlogModest, key, at, 100)
			modest++
			if i < backlogHotRate {
				add(backlogHot, "HOT#1", start.Add(time.Duration(s)*time.Second+time.Duration(i)*time.Second/backlogHotRate), backlogHotItemKB*1024)
				hot++
			}
		}
	}
	for len(entries) > 0 {
		n := min(len(entries), 500)
		if _, err := k.Client.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries[:n]}); err != nil {
			t.Fatal(err)
		}
		entries = entries[n:]
	}
	return modest, hot
}

// TestKinesisBacklogJudgedAtItsRates is the backlog test on kinesalite:
// 60 s of records (millisecond creation times) written before hotkeyd
// starts, then 40 s more while it is killed, read after the restart from
// its checkpoints.
func TestKinesisBacklogJudgedAtItsRates(t *testing.T) {
	t.Parallel() // a kinesalite and processes of its own, on ports of its own
	if testing.Short() {
		t.Skip("starts kinesalite and hotkeyd twice")
	}
	k := testenv.StartKinesalite(t)
	ctx := context.Background()
	const stream = "ev-cdc"
	if _, err := k.Client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(settle); ; {
		out, err := k.Client.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
		if err == nil && out.StreamDescriptionSummary.StreamStatus == ktypes.StreamStatusActive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not active: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The window holds the backlog however long the upload and the start
	// take on a loaded machine: its times are those of its writing.
	cfgPath := writeConfig(t, fmt.Sprintf(`window: 10m
sources:
  - type: kinesis
    streams: [%s]
    region: us-east-1
    endpoint: %s
    start: trim_horizon
    checkpoint_dir: %s
    poll_interval: 100ms
`, stream, k.Endpoint, t.TempDir()))

	modest, hot := kinesisBacklog(t, k, stream, 60*time.Second)
	d1 := startStreamsDaemon(t, cfgPath)
	judgeBacklog(t, d1, "kinesis", modest, hot, true)
	d1.kill()

	modest2, hot2 := kinesisBacklog(t, k, stream, 40*time.Second)
	d2 := startStreamsDaemon(t, cfgPath)
	judgeBacklog(t, d2, "kinesis", modest2, hot2, true)
	d2.stop(t)
}

// ctDelivery returns a CloudTrail file's content: key read with GetItem
// perSecond times a second from start for d, and a background of 20 reads
// a second over 500 other keys.
func ctDelivery(table, key string, start time.Time, d time.Duration, perSecond int) string {
	rnd := rand.New(rand.NewPCG(uint64(start.Unix()), 11))
	var recs []string
	rec := func(at time.Time, k string) string {
		return fmt.Sprintf(`{"eventVersion":"1.09","eventTime":%q,"eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","awsRegion":"us-east-1","requestParameters":{"tableName":%q,"key":{"customer":%q}},"eventType":"AwsApiCall","managementEvent":false,"eventCategory":"Data"}`,
			at.UTC().Format(time.RFC3339), table, k)
	}
	for s := 0; s < int(d/time.Second); s++ {
		at := start.Add(time.Duration(s) * time.Second)
		for range perSecond {
			recs = append(recs, rec(at, key))
		}
		for range 20 {
			recs = append(recs, rec(at, fmt.Sprintf("C-%d", rnd.IntN(500))))
		}
	}
	// CloudTrail does not sort a file's records.
	rnd.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	return `{"Records":[` + strings.Join(recs, ",") + `]}`
}

// ctKey returns the top key entry of key in table, or nil.
func ctKey(rep report.Report, table, key string) *report.TopKey {
	for _, tr := range rep.Tables {
		if tr.Table != table {
			continue
		}
		for i := range tr.TopKeys {
			if tr.TopKeys[i].Key == key {
				return &tr.TopKeys[i]
			}
		}
	}
	return nil
}

// judgeDelivery waits until key of table is in the daemon's report with
// want units, and checks it is judged at the rate it was read (40 RCU/s),
// not as all its reads in one second, and that the table has no diagnosis
// at warning or above.
func judgeDelivery(t *testing.T, d *streamsDaemon, table, key string, want float64, newest time.Time) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		rep := d.report(t)
		if k := ctKey(rep, table, key); k != nil && k.Units >= want {
			if k.PeakUnitsPerSecond > 100 || k.PeakUnitsPerSecond < 20 {
				t.Errorf("%s: busiest second %.0f RCU/s, want its 40 RCU/s (%.0f units read)", key, k.PeakUnitsPerSecond, k.Units)
			}
			t.Logf("%s: %.0f units, busiest second %.0f RCU/s", key, k.Units, k.PeakUnitsPerSecond)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s of %s not counted with %v units within %v: %+v", key, table, want, settle, rep.Tables)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Held for the detector's hold and more: nothing pages.
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		_, body := d.get("/metrics")
		if m := anyAtOrAbove(table).FindString(body); m != "" {
			t.Fatalf("a CloudTrail delivery read at 40 RCU/s was paged: %s", m)
		}
	}
	if late := d.metric(t, `hotkeyd_late_events_total{source="cloudtrail"}`); late != 0 {
		t.Errorf("hotkeyd_late_events_total{source=\"cloudtrail\"} = %v, want 0: every delivery is in the window", late)
	}
	// Caught up, CloudTrail's watermark is the newest event delivered, not
	// 15 minutes before now, and it lags nothing.
	rep := d.report(t)
	checkCaughtUp(t, d, rep, "cloudtrail")
	for _, s := range rep.Sources {
		if s.Source == "cloudtrail" && (s.Watermark.Sub(newest).Abs() > time.Second || s.DelaySeconds != 900) {
			t.Errorf("cloudtrail's watermark %v (delay %v s), want the newest event delivered, %v",
				s.Watermark, s.DelaySeconds, newest)
		}
	}
}

// TestCloudTrailDeliveryJudgedAtItsRates drops a CloudTrail file of five
// minutes into a followed folder, a key read at 40 RCU/s in it: it is
// judged at 40 RCU/s, not at its 12 000 reads in the second the file was
// read, and nothing pages. A delivery that comes minutes late lands in the
// seconds it happened. The same for an object in an S3 bucket (s3rver).
func TestCloudTrailDeliveryJudgedAtItsRates(t *testing.T) {
	t.Parallel() // an s3rver and processes of its own, on ports of its own
	if testing.Short() {
		t.Skip("runs hotkeyd and s3rver")
	}
	const table = "ct_orders"
	// The window holds CloudTrail's delivery delay (up to 15 min).
	head := fmt.Sprintf(`window: 20m
tables:
  %s: {partition_key: customer}
`, table)
	now := time.Now().Truncate(time.Second)
	// The newest event of both deliveries: the last second of C-HOT's.
	newest := now.Add(-6*time.Minute + 5*time.Minute - time.Second)

	t.Run("folder", func(t *testing.T) {
		dir := t.TempDir()
		cfgPath := writeConfig(t, head+fmt.Sprintf(`sources:
  - type: cloudtrail
    paths: [%q]
    poll_interval: 200ms
`, filepath.Join(dir, "**", "*.json.gz")))
		d := startStreamsDaemon(t, cfgPath)
		ctWriteGz(t, filepath.Join(dir, "2026", "a.json.gz"), ctDelivery(table, "C-HOT", now.Add(-6*time.Minute), 5*time.Minute, 40))
		judgeDelivery(t, d, table, "C-HOT", 40*300, newest)
		// Minutes late: events of 12 to 10 minutes ago.
		ctWriteGz(t, filepath.Join(dir, "2026", "b.json.gz"), ctDelivery(table, "C-LATE", now.Add(-12*time.Minute), 2*time.Minute, 40))
		judgeDelivery(t, d, table, "C-LATE", 40*120, newest)
		d.stop(t)
	})

	t.Run("s3", func(t *testing.T) {
		srv := testenv.StartS3rver(t)
		ctx := context.Background()
		if _, err := srv.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("trail")}); err != nil {
			t.Fatal(err)
		}
		folder := "AWSLogs/111122223333/CloudTrail/us-east-1/" + now.UTC().Format("2006/01/02") + "/"
		cfgPath := writeConfig(t, head+fmt.Sprintf(`sources:
  - type: cloudtrail
    poll_interval: 200ms
    s3: {bucket: trail, region: us-east-1, endpoint: %s}
`, srv.Endpoint))
		d := startS3Daemon(t, cfgPath)
		putObject := func(name, content string) {
			t.Helper()
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write([]byte(content))
			zw.Close()
			if _, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String("trail"), Key: aws.String(folder + name), Body: bytes.NewReader(buf.Bytes()),
			}); err != nil {
				t.Fatal(err)
			}
		}
		putObject("111122223333_CloudTrail_us-east-1_"+now.UTC().Format("20060102T1504Z")+"_a.json.gz",
			ctDelivery(table, "C-HOT", now.Add(-6*time.Minute), 5*time.Minute, 40))
		judgeDelivery(t, d, table, "C-HOT", 40*300, newest)
		putObject("111122223333_CloudTrail_us-east-1_"+now.UTC().Format("20060102T1504Z")+"_b.json.gz",
			ctDelivery(table, "C-LATE", now.Add(-12*time.Minute), 2*time.Minute, 40))
		judgeDelivery(t, d, table, "C-LATE", 40*120, newest)
		d.stop(t)
	})
}

// TestImplausibleTimesAreBadTime posts lines whose ts no window can judge:
// further in the future than max_future, older than max_event_age, year
// 9999 and year 1. Each is refused as bad_time and counted; the line with
// a plausible time is counted, in the second it happened.
func TestImplausibleTimesAreBadTime(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	h := startIngestOnly(t)
	now := time.Now().UTC()
	line := func(ts string) string {
		return `{"ts":"` + ts + `","table":"orders","pk":"USER#1","op":"PutItem"}` + "\n"
	}
	body := line(now.Add(-10*time.Second).Format(time.RFC3339)) +
		line(now.Add(10*time.Minute).Format(time.RFC3339)) +
		line(now.Add(-48*time.Hour).Format(time.RFC3339)) +
		line("9999-12-31T23:59:59Z") +
		line("0001-01-01T00:00:01Z")
	if code, _, answer := post(t, h, []byte(body), nil); code != 200 {
		t.Fatalf("POST: %d %s", code, answer)
	}
	deadline := time.Now().Add(settle)
	for {
		_, metrics := h.Get(t, "/metrics")
		if bytes.Contains(metrics, []byte(`hotkeyd_input_rejected_total{reason="bad_time",source="http"} 4`+"\n")) &&
			bytes.Contains(metrics, []byte(`hotkeyd_events_total{class="write",source="http",table="orders"} 1`+"\n")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("want 4 bad_time rejections and 1 event:\n%s\n%s", grepLines(string(metrics), "hotkeyd_input_rejected_total"), grepLines(string(metrics), "hotkeyd_events_total"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(h.Stderr(), "max_future") {
		t.Errorf("the log does not say which setting refused a time in the future:\n%s", h.Stderr())
	}
}

// TestLivePageSaysWhileASourceCatchesUp serves the live page over a report
// whose kinesis source reads a backlog 90 s behind: the page says so in a
// line, and says nothing of the source that is caught up.
func TestLivePageSaysWhileASourceCatchesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	now := time.Now().UTC()
	live := export.NewLive(time.Now)
	live.Update(report.Report{
		Start: now.Add(-time.Minute), End: now, Tables: []report.TableReport{},
		Sources: []report.SourceProgress{
			{Source: "dynamodb-streams", Watermark: now},
			{Source: "kinesis", Watermark: now.Add(-90 * time.Second), LagSeconds: 90, CatchingUp: true},
		},
	})
	ready := export.NewReadiness()
	ready.SetRunning(true, "")
	srv, err := export.NewServer(zap.NewNop(), export.ServerConfig{Gatherer: prometheus.NewRegistry(), Live: live, Readiness: ready})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	tab := testenv.NewTab(t)
	tab.Run(t, settle, chromedp.Navigate(ts.URL+"/"))
	tab.WaitFor(t, `document.querySelector('.banner.catching-up') !== null`, settle, "the catching-up line")
	var lines []string
	tab.Eval(t, `Array.from(document.querySelectorAll('.banner.catching-up')).map(e => e.dataset.source + ': ' + e.textContent)`, &lines)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "kinesis: kinesis is catching up: 90 s behind") {
		t.Errorf("catching-up lines %q, want one for kinesis, 90 s behind", lines)
	}
}
