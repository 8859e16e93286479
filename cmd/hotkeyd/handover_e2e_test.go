package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
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
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// handoverDurationEnv names the environment variable that sets how long
// TestHandoversLoseNothing writes (a Go duration): a minute unless set,
// so that CI stays within its budget; scripts/handover.sh runs it for
// three minutes.
const handoverDurationEnv = "HOTKEYD_HANDOVER_DURATION"

// recordingProxy stands between one replica and DynamoDB Local and notes,
// by the replica's life (each start is a new life), the sequence numbers
// of every stream record DynamoDB Local answered it with and the
// checkpoints it wrote to the lease table. DynamoDB Local cannot tell what
// it gave whom; everything passes through unchanged, and a request is
// carried out whole even when the replica died waiting for it, so that
// what it noted is what DynamoDB Local did.
type recordingProxy struct {
	srv         *httptest.Server
	life        atomic.Int32
	mu          sync.Mutex
	got         map[int32]map[string]bool // life → sequence numbers answered
	checkpoints map[int32]string          // life → the last checkpoint written
	inflight    map[int32]int             // life → requests under way
}

type lifeKey struct{}

func newRecordingProxy(t *testing.T, endpoint string) *recordingProxy {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{got: map[int32]map[string]bool{}, checkpoints: map[int32]string{}, inflight: map[int32]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		if !strings.HasSuffix(resp.Request.Header.Get("X-Amz-Target"), ".GetRecords") || resp.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		plain := body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				return err
			}
			if plain, err = io.ReadAll(zr); err != nil {
				return err
			}
		}
		var out struct {
			Records []struct {
				Dynamodb struct{ SequenceNumber string }
			}
		}
		if err := json.Unmarshal(plain, &out); err != nil {
			return fmt.Errorf("GetRecords answer: %w", err)
		}
		life := resp.Request.Context().Value(lifeKey{}).(int32)
		p.mu.Lock()
		if p.got[life] == nil {
			p.got[life] = map[string]bool{}
		}
		for _, r := range out.Records {
			p.got[life][r.Dynamodb.SequenceNumber] = true
		}
		p.mu.Unlock()
		return nil
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		life := p.life.Load()
		p.mu.Lock()
		p.inflight[life]++
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.inflight[life]--
			p.mu.Unlock()
		}()
		var cp string
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".UpdateItem") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			cp = checkpointOf(body)
		}
		sw := &statusWriter{ResponseWriter: w}
		rp.ServeHTTP(sw, r.WithContext(context.WithValue(context.WithoutCancel(r.Context()), lifeKey{}, life)))
		if cp != "" && sw.status == http.StatusOK {
			p.mu.Lock()
			if prev := p.checkpoints[life]; prev == "" || seqLess(prev, cp) {
				p.checkpoints[life] = cp
			}
			p.mu.Unlock()
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// statusWriter keeps the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// checkpointOf returns the sequence number an UpdateItem of a lease sets
// as its checkpoint ("" for another update, or a position that is not a
// sequence number).
func checkpointOf(body []byte) string {
	var in struct {
		ExpressionAttributeNames  map[string]string
		ExpressionAttributeValues map[string]struct{ S string }
	}
	if json.Unmarshal(body, &in) != nil {
		return ""
	}
	for name, attr := range in.ExpressionAttributeNames {
		if attr == "checkpoint" && strings.HasPrefix(name, "#s") {
			v := in.ExpressionAttributeValues[":s"+strings.TrimPrefix(name, "#s")].S
			if v != "" && strings.Trim(v, "0123456789") == "" {
				return v
			}
		}
	}
	return ""
}

// idle reports whether none of life's requests is under way.
func (p *recordingProxy) idle(life int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inflight[life] == 0
}

// checkpoint returns the last checkpoint life wrote ("" for none).
func (p *recordingProxy) checkpoint(life int32) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checkpoints[life]
}

// received returns the sequence numbers handed to life.
func (p *recordingProxy) received(life int32) map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.got[life])
}

// seqLess orders DynamoDB sequence numbers (decimal strings).
func seqLess(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// handoverReplica is one of the three replicas: its proxy, its current
// process, and its life.
type handoverReplica struct {
	name  string
	proxy *recordingProxy
	cfg   string
	h     *testenv.Hotkeyd
}

func (r *handoverReplica) start(t *testing.T) {
	t.Helper()
	r.h = testenv.StartHotkeyd(t, testenv.HotkeydOptions{Env: replicaEnv}, "run", "--config.file", r.cfg)
}

// deadLife is what a killed process was handed, the lease's checkpoint
// right after it died, and its log.
type deadLife struct {
	replica    string
	received   map[string]bool
	checkpoint string
	log        string
}

// TestHandoversLoseNothing runs three replicas sharing one table's stream
// through a lease table, and kills the one reading it with SIGKILL every
// 20 s (the first time before anything is written, so that its lease is
// still at LATEST), restarting it at once, while a writer writes about 20
// records a second: every record is counted at least once (each was
// handed to a replica that checkpointed past it, or that lives on and
// counted all it was handed), the records handed twice are at most those
// a dead owner was handed after its last checkpoint, and the catch-ups of
// the takeovers page nobody (a key at a fifth of a tight ceiling, which a
// catch-up counted at its reading rate would push past half).
func TestHandoversLoseNothing(t *testing.T) {
	t.Parallel() // a DynamoDB Local and processes of its own, on ports of its own
	if testing.Short() {
		t.Skip("kills and restarts replicas for a minute")
	}
	duration := time.Minute
	if v := os.Getenv(handoverDurationEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %v", handoverDurationEnv, err)
		}
		duration = d
	}
	ddb := testenv.DynamoDBLocal(t)
	const table, leaseTable = "handover", "handover_leases"
	createStreamTable(t, ddb, table)
	replicas := make([]*handoverReplica, 3)
	for i := range replicas {
		r := &handoverReplica{name: fmt.Sprintf("replica-%c", 'a'+i), proxy: newRecordingProxy(t, ddb.Endpoint)}
		r.cfg = filepath.Join(t.TempDir(), r.name+".yaml")
		cfg := fmt.Sprintf(`window: 10m
detector:
  write_limit: 20
  top: 200
sources:
  - type: dynamodb-streams
    tables: [%s]
    endpoint: %s
    region: us-east-1
    start: latest
    lease_table: %s
    worker_id: %s
    failover_time: 3s
`, table, r.proxy.srv.URL, leaseTable, r.name)
		if err := os.WriteFile(r.cfg, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		r.start(t)
		replicas[i] = r
	}
	owner := func() *handoverReplica {
		var held *handoverReplica
		waitUntil(t, settle, "one replica holding the lease", func() bool {
			held = nil
			for _, r := range replicas {
				if heldOf(scrape(t, r.h), leaseTable) == 1 {
					if held != nil {
						return false
					}
					held = r
				}
			}
			return held != nil
		})
		return held
	}
	var dead []deadLife
	kill := func(then func()) {
		t.Helper()
		r := owner()
		r.h.Kill(t)
		life := r.proxy.life.Add(1) - 1
		then()
		// What it was answered and wrote is complete once the requests
		// under way when it died are done (the proxy carries them out).
		waitUntil(t, settle, r.name+"'s last requests done", func() bool { return r.proxy.idle(life) })
		dead = append(dead, deadLife{replica: r.name, received: r.proxy.received(life), checkpoint: r.proxy.checkpoint(life), log: r.h.Stderr()})
		r.start(t)
	}

	// The first owner began at LATEST and is killed before it read a
	// record; the writing starts at once, so that records are written
	// before another replica takes its lease, still at LATEST.
	var written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	write := func() {
		wg.Go(func() {
			// STEADY at 4 writes a second, 16 other keys, each write changing
			// its item (a write that changes nothing makes no record).
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				key := fmt.Sprintf("KEY#%03d", i%200)
				if i%5 == 0 {
					key = "STEADY"
				}
				if _, err := ddb.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: key}, "n": &types.AttributeValueMemberN{Value: strconv.Itoa(i)},
				}}); err != nil {
					t.Errorf("put item: %v", err)
					return
				}
				written.Add(1)
			}
		})
	}
	kill(write)
	for end := time.Now().Add(duration); time.Now().Before(end); {
		time.Sleep(min(20*time.Second, time.Until(end)))
		if time.Now().Before(end) {
			kill(func() {})
		}
	}
	close(stop)
	wg.Wait()

	// Every record of the shard, as the stream holds them.
	all := streamRecords(t, ddb, table)
	if int64(len(all)) != written.Load() {
		t.Fatalf("the stream holds %d records, %d were written", len(all), written.Load())
	}
	// The replicas alive now read on until one was handed the last record.
	last := all[len(all)-1]
	live := func() []map[string]bool {
		var out []map[string]bool
		for _, r := range replicas {
			out = append(out, r.proxy.received(r.proxy.life.Load()))
		}
		return out
	}
	waitUntil(t, settle, "the last record handed to a live replica", func() bool {
		for _, got := range live() {
			if got[last] {
				return true
			}
		}
		return false
	})
	// A live replica counted what it was handed.
	for i, r := range replicas {
		handed := len(live()[i])
		waitUntil(t, settle, r.name+"'s count of what it was handed", func() bool {
			return recordsOf(scrape(t, r.h), table) == float64(handed)
		})
	}

	handedTwice, afterCheckpoint := -len(all), 0
	counted := map[string]bool{}
	for _, got := range live() {
		handedTwice += len(got)
		for s := range got {
			counted[s] = true
		}
	}
	for _, d := range dead {
		handedTwice += len(d.received)
		for s := range d.received {
			if d.checkpoint != "" && !seqLess(d.checkpoint, s) {
				counted[s] = true // it checkpointed past s: it counted s
			} else {
				afterCheckpoint++
			}
		}
	}
	var lost []string
	for _, s := range all {
		if !counted[s] {
			lost = append(lost, s)
		}
	}
	t.Logf("%d records written over %v, %d replica deaths; %d handed twice, %d handed to a dead owner after its last checkpoint",
		len(all), duration, len(dead), handedTwice, afterCheckpoint)
	if len(lost) > 0 {
		t.Errorf("%d of %d records counted by no replica, first %s", len(lost), len(all), lost[0])
	}
	if handedTwice > afterCheckpoint {
		t.Errorf("%d records handed twice, more than the %d a dead owner was handed after its last checkpoint", handedTwice, afterCheckpoint)
	}

	// No page: no life of any replica ever flagged a diagnosis at warning
	// or above.
	paged := regexp.MustCompile(`(?m)^.*severity=(warning|critical).*$`)
	logs := map[string]string{}
	for i, d := range dead {
		logs[fmt.Sprintf("%s (life %d, killed)", d.replica, i)] = d.log
	}
	for _, r := range replicas {
		logs[r.name+" (last life)"] = r.h.Stderr()
	}
	for name, log := range logs {
		if m := paged.FindString(log); m != "" {
			t.Errorf("%s paged: %s", name, m)
		}
	}
}

// streamRecords returns the sequence numbers of every record of table's
// one-shard stream, in order.
func streamRecords(t *testing.T, ddb *testenv.DDBLocal, table string) []string {
	t.Helper()
	ctx := context.Background()
	dt, err := ddb.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	arn := dt.Table.LatestStreamArn
	ds, err := ddb.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})
	if err != nil || len(ds.StreamDescription.Shards) != 1 {
		t.Fatalf("describe stream: %v, %+v", err, ds)
	}
	it, err := ddb.Streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: arn, ShardId: ds.StreamDescription.Shards[0].ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
	})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []string
	for iter := it.ShardIterator; iter != nil; {
		out, err := ddb.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Records {
			seqs = append(seqs, aws.ToString(r.Dynamodb.SequenceNumber))
		}
		if len(out.Records) == 0 {
			break
		}
		iter = out.NextShardIterator
	}
	slices.SortFunc(seqs, func(a, b string) int {
		switch {
		case seqLess(a, b):
			return -1
		case seqLess(b, a):
			return 1
		}
		return 0
	})
	return seqs
}
