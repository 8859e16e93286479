package detect_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// onsetTrials is the number of keys turned hot, one after the other, in one
// run of BenchmarkOnsetDynamoDBStream.
const onsetTrials = 7

// BenchmarkOnsetDynamoDBStream measures how long hotkeyd takes to flag a key
// that turns hot on a live DynamoDB stream: the real binary (hotkeyd run, a
// 60 s window, defaults otherwise) reads the stream (NEW_IMAGE) of a
// DynamoDB Local table that the SDK writes like an application: about 300
// writes a second of items of about 5 KB (5 WCU each: 1500 WCU/s), spread
// over 1000 customers, from three writers. After a minute of that traffic
// (nothing may be flagged), one key at a time (HOT#1, HOT#2, ...) takes
// 35 % of the writes, from a moment of a second that varies from trial to
// trial; the onset is the time from its first write to the
// detector's "hot key" log line for it (the line's own timestamp, on the
// same clock), and to its hotkeyd_diagnosis series in /metrics (polled
// every 50 ms). The key then stops, and the next starts once it is
// cleared. Each run reports the median onsets of its keys; the benchmark
// reports the median of the runs' medians, the largest onset of all, and
// the median time until the key is first seen among the top keys of
// /api/v1/hotkeys (polled every 100 ms): the stream's delivery and the
// counting, without the detector's judgement.
//
//	go test -run '^$' -bench OnsetDynamoDBStream -benchtime 5x -timeout 30m ./detect/
func BenchmarkOnsetDynamoDBStream(b *testing.B) {
	ddb := testenv.DynamoDBLocal(b)
	ctx := context.Background()
	const table = "onset"
	if _, err := ddb.DB.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("customer"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("customer"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage},
	}); err != nil {
		b.Fatalf("create table: %v", err)
	}
	cfgPath := filepath.Join(b.TempDir(), "hotkeyd.yaml")
	cfg := fmt.Sprintf("window: 60s\nsources:\n  - type: dynamodb-streams\n    tables: [%s]\n    region: us-east-1\n    endpoint: %s\n    start: trim_horizon\n", table, ddb.Endpoint)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	h := testenv.StartHotkeyd(b, testenv.HotkeydOptions{Env: []string{
		"AWS_ACCESS_KEY_ID=hotkeyd", "AWS_SECRET_ACCESS_KEY=hotkeyd", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
	}}, "run", "--config.file", cfgPath)

	// The writers: each writes every 10 ms; 35 % of the writes go to the
	// hot key of the moment, if any. Every write changes its item
	// (DynamoDB writes no stream record for a put that leaves an item as
	// it was).
	var hot atomic.Pointer[string]
	var firstWrite sync.Map // hot key -> time of its first write
	var serial, written atomic.Int64
	body := strings.Repeat("x", 4500)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(1, uint64(w)))
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				key := "CUSTOMER#" + strconv.Itoa(rnd.IntN(1000))
				if k := hot.Load(); k != nil && rnd.Float64() < 0.35 {
					key = *k
					firstWrite.LoadOrStore(key, time.Now())
				}
				if _, err := ddb.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
					"customer": &types.AttributeValueMemberS{Value: key},
					"serial":   &types.AttributeValueMemberN{Value: strconv.FormatInt(serial.Add(1), 10)},
					"body":     &types.AttributeValueMemberS{Value: body},
				}}); err != nil {
					b.Errorf("put item: %v", err)
					return
				}
				written.Add(1)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	// A minute of uniform traffic fills the window: nothing is flagged,
	// in the log or in /metrics.
	h.WaitLog(b, `msg="hotkeyd started"`, 10*time.Second)
	began := written.Load()
	for range 60 {
		time.Sleep(time.Second)
		if seriesHold(h.URL+"/metrics", `hotkeyd_diagnosis{`, "") {
			b.Fatalf("the uniform traffic was flagged in /metrics:\n%s", h.Stderr())
		}
	}
	if regexp.MustCompile(`(?m)msg=.* logger=detector$`).MatchString(h.Stderr()) {
		b.Fatalf("the uniform traffic was flagged:\n%s", h.Stderr())
	}
	b.Logf("warm-up: %d writes a second, nothing flagged", (written.Load()-began)/60)

	tsRE := regexp.MustCompile(`^ts=(\S+) `)
	phases := rand.New(rand.NewPCG(3, 4))
	var runs struct {
		log, metrics, seen []float64
		max                float64
	}
	b.ResetTimer()
	for run := 1; b.Loop(); run++ {
		var onsets, series, seen []float64
		for i := range onsetTrials {
			key := fmt.Sprintf("HOT#%d-%d", run, i+1)
			seenAt, seriesAt := make(chan time.Time, 1), make(chan time.Time, 1)
			go func() {
				for {
					if topKeysHold(h.URL+"/api/v1/hotkeys?table="+table, key) {
						seenAt <- time.Now()
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
			go func() {
				for {
					if seriesHold(h.URL+"/metrics", `hotkeyd_diagnosis{`, `key="`+key+`"`) {
						seriesAt <- time.Now()
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
			// Keys turn hot at any moment, not as a second begins (when the
			// last one's clearing was logged).
			time.Sleep(time.Duration(phases.IntN(1000)) * time.Millisecond)
			hot.Store(&key)
			line := h.WaitLog(b, `msg="hot key" table=`+table+` class=write key=`+key+` `, 60*time.Second)
			hot.Store(nil)
			m := tsRE.FindStringSubmatch(line)
			at, err := time.Parse(time.RFC3339Nano, m[1])
			first, ok := firstWrite.Load(key)
			if m == nil || err != nil || !ok {
				b.Fatalf("line %q: %v", line, err)
			}
			onset := at.Sub(first.(time.Time)).Seconds()
			onsets = append(onsets, onset)
			series = append(series, (<-seriesAt).Sub(first.(time.Time)).Seconds())
			seen = append(seen, (<-seenAt).Sub(first.(time.Time)).Seconds())
			b.Logf("%s seen among the top keys %.2f s, flagged in the log %.2f s and in /metrics %.2f s after its first write", key, seen[len(seen)-1], onset, series[len(series)-1])
			h.WaitLog(b, `msg="hot key cleared" table=`+table+` class=write key=`+key, 90*time.Second)
		}
		slices.Sort(onsets)
		slices.Sort(series)
		slices.Sort(seen)
		b.Logf("run %d: onsets (log) %.2f; (/metrics) %.2f; load %s", run, onsets, series, loadAverage())
		runs.log = append(runs.log, onsets[len(onsets)/2])
		runs.metrics = append(runs.metrics, series[len(series)/2])
		runs.seen = append(runs.seen, seen[len(seen)/2])
		runs.max = max(runs.max, onsets[len(onsets)-1], series[len(series)-1])
	}
	// The medians of the runs' medians (-benchtime 5x: of five runs).
	median := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.Logf("run medians: log %.2f, /metrics %.2f", runs.log, runs.metrics)
	b.ReportMetric(median(runs.log), "s-onset-median")
	b.ReportMetric(median(runs.metrics), "s-metrics-median")
	b.ReportMetric(runs.max, "s-onset-max")
	b.ReportMetric(median(runs.seen), "s-seen-median")
}

// topKeysHold reports whether the live report at url lists key among its
// top keys; a failed request is a no.
func topKeysHold(url, key string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return err == nil && bytes.Contains(body, []byte(`"key": "`+key+`"`))
}

// seriesHold reports whether the metrics page at url has a line that
// starts with prefix and holds part; a failed request is a no.
func seriesHold(url, prefix, part string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, prefix) && strings.Contains(line, part) {
			return true
		}
	}
	return false
}

// loadAverage returns the machine's load averages, as /proc/loadavg says.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
