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
// 60 s window, defaults otherwise) reads the stream of a DynamoDB Local table
// that the SDK writes like an application, about 100 writes a second spread
// over 1000 customers. After a minute of that traffic, one key at a time
// (HOT#1, HOT#2, ...) takes a third of the writes; the onset is the time from
// its first write to the detector's "hot key" log line for it (the line's own
// timestamp, on the same clock). The key then stops, and the next starts once
// it is cleared. It reports the median and the largest onset in seconds,
// and the median time until the key is first seen among the top keys of
// /api/v1/hotkeys (polled every 100 ms): the stream's delivery and the
// counting, without the detector's judgement.
//
//	go test -run '^$' -bench OnsetDynamoDBStream -benchtime 1x ./detect/
func BenchmarkOnsetDynamoDBStream(b *testing.B) {
	ddb := testenv.DynamoDBLocal(b)
	ctx := context.Background()
	const table = "onset"
	if _, err := ddb.DB.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("customer"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("customer"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly},
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

	// The writer: one write every 10 ms; a third of them to the hot key
	// of the moment, if any. Every write changes its item (DynamoDB writes
	// no stream record for a put that leaves an item as it was).
	var hot atomic.Pointer[string]
	var firstWrite sync.Map // hot key -> time of its first write
	var serial atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		rnd := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			key := "CUSTOMER#" + strconv.Itoa(rnd.IntN(1000))
			if k := hot.Load(); k != nil && rnd.IntN(3) == 0 {
				key = *k
				firstWrite.LoadOrStore(key, time.Now())
			}
			if _, err := ddb.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
				"customer": &types.AttributeValueMemberS{Value: key},
				"body":     &types.AttributeValueMemberN{Value: strconv.FormatInt(serial.Add(1), 10)},
			}}); err != nil {
				b.Errorf("put item: %v", err)
				return
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	// A minute of uniform traffic fills the window: nothing is flagged.
	h.WaitLog(b, `msg="hotkeyd started"`, 10*time.Second)
	time.Sleep(60 * time.Second)
	if regexp.MustCompile(`(?m)msg=.* logger=detector$`).MatchString(h.Stderr()) {
		b.Fatalf("the uniform traffic was flagged:\n%s", h.Stderr())
	}

	tsRE := regexp.MustCompile(`^ts=(\S+) `)
	b.ResetTimer()
	for run := 1; b.Loop(); run++ {
		var onsets, seen []float64
		for i := range onsetTrials {
			key := fmt.Sprintf("HOT#%d-%d", run, i+1)
			seenAt := make(chan time.Time, 1)
			go func() {
				for {
					if topKeysHold(h.URL+"/api/v1/hotkeys?table="+table, key) {
						seenAt <- time.Now()
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
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
			seen = append(seen, (<-seenAt).Sub(first.(time.Time)).Seconds())
			b.Logf("%s seen among the top keys %.2f s and flagged %.2f s after its first write", key, seen[len(seen)-1], onset)
			h.WaitLog(b, `msg="hot key cleared" table=`+table+` class=write key=`+key, 90*time.Second)
		}
		slices.Sort(onsets)
		slices.Sort(seen)
		b.ReportMetric(onsets[len(onsets)/2], "s-onset-median")
		b.ReportMetric(onsets[len(onsets)-1], "s-onset-max")
		b.ReportMetric(seen[len(seen)/2], "s-seen-median")
	}
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
