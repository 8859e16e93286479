package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// streamsDaemon is a hotkeyd run process started by the streams test itself,
// because the test must kill it with SIGKILL (a crash) and start it again.
type streamsDaemon struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
	mu     *sync.Mutex
	done   chan struct{}
}

type lockedBuf struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// startedRE finds the address the daemon bound in its "hotkeyd started"
// log line, logfmt (address=127.0.0.1:1234) or JSON
// ("address":"127.0.0.1:1234").
var startedRE = regexp.MustCompile(`hotkeyd started.*?"?address"?[=:]"?([^"\s]+)`)

// startStreamsDaemon runs hotkeyd on cfgPath and waits until it is ready.
// It listens on a port the kernel picks, read from its log: a process
// started again never finds its old port taken by another test's, nor
// takes another's answers for its own.
func startStreamsDaemon(t *testing.T, cfgPath string, env ...string) *streamsDaemon {
	t.Helper()
	d := &streamsDaemon{stderr: &bytes.Buffer{}, mu: &sync.Mutex{}, done: make(chan struct{})}
	d.cmd = exec.Command(testenv.Binary(t), "run", "--config.file", cfgPath, "--web.listen-address", "127.0.0.1:0", "--history.path", t.TempDir())
	// DynamoDB Local takes any credentials; no instance metadata lookups.
	d.cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=hotkeyd", "AWS_SECRET_ACCESS_KEY=hotkeyd",
		"AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true")
	d.cmd.Env = append(d.cmd.Env, env...)
	d.cmd.Stderr = lockedBuf{d.mu, d.stderr}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start hotkeyd: %v", err)
	}
	go func() { _ = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.done
		if t.Failed() {
			t.Logf("hotkeyd stderr:\n%s", d.log())
		}
	})
	deadline := time.Now().Add(settle)
	for {
		if d.url == "" {
			if m := startedRE.FindStringSubmatch(d.log()); m != nil {
				d.url = "http://" + m[1]
			}
		}
		if d.url != "" {
			if code, _ := d.get("/-/ready"); code == http.StatusOK {
				return d
			}
		}
		select {
		case <-d.done:
			t.Fatalf("hotkeyd exited before it was ready:\n%s", d.log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("hotkeyd not ready within %v:\n%s", settle, d.log())
		}
	}
}

func (d *streamsDaemon) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}

func (d *streamsDaemon) get(path string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.url+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return resp.StatusCode, b.String()
}

// metric returns the value of the series starting with prefix (name and
// labels as exposed), or -1 when there is none.
func (d *streamsDaemon) metric(t *testing.T, prefix string) float64 {
	t.Helper()
	_, body := d.get("/metrics")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return v
		}
	}
	return -1
}

// kill crashes the process (SIGKILL: no shutdown checkpoint).
func (d *streamsDaemon) kill() {
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// TestStreamsEndToEnd runs hotkeyd on a DynamoDB Local table written by the
// SDK like an application: a uniform warm-up flags nothing, a skewed load
// flags its hot key within 15 s, and a crash (kill -9) in the middle of the
// stream loses no record: the restarted process counts exactly the records
// after its checkpoint.
func TestStreamsEndToEnd(t *testing.T) {
	t.Parallel() // a DynamoDB Local and processes of its own, on ports of its own
	if testing.Short() {
		t.Skip("starts DynamoDB Local and hotkeyd twice")
	}
	ddb := testenv.DynamoDBLocal(t)
	ctx := context.Background()
	const table = "e2e_orders"
	if _, err := ddb.DB.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("customer"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("customer"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly},
	}); err != nil {
		t.Fatalf("create table: %v", err)
	}
	dir := t.TempDir()
	cpDir := filepath.Join(dir, "checkpoints")
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	cfg := fmt.Sprintf(`window: 60s
threshold: 0.10
sources:
  - type: dynamodb-streams
    tables: [%s]
    region: us-east-1
    endpoint: %s
    start: trim_horizon
    checkpoint_dir: %s
`, table, ddb.Endpoint, cpDir)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// Every write changes its item: DynamoDB writes no stream record for a
	// put that leaves the item as it was.
	var written, serial atomic.Int64
	put := func(key string) {
		if _, err := ddb.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"customer": &types.AttributeValueMemberS{Value: key},
			"body":     &types.AttributeValueMemberN{Value: strconv.FormatInt(serial.Add(1), 10)},
		}}); err != nil {
			t.Errorf("put item: %v", err)
			return
		}
		written.Add(1)
	}
	eventsSeries := `hotkeyd_events_total{class="write",source="dynamodb-streams",table="` + table + `"}`
	hotSeries := hotKeySeries(table, "write", "HOT#1", "hot_key")

	d1 := startStreamsDaemon(t, cfgPath)

	// Uniform warm-up: 300 keys written once each. Nothing is hot.
	for i := range 300 {
		put(fmt.Sprintf("CUSTOMER#%d", i))
	}
	waitForMetric(t, d1, eventsSeries, 300, settle)
	time.Sleep(4 * time.Second) // more than the detector's hold of 3 evaluations
	if _, body := d1.get("/metrics"); strings.Contains(body, `kind="hot_key"`) {
		t.Errorf("a hot key was flagged during the uniform warm-up:\n%s", grepLines(body, "hotkeyd_hot_key"))
	}

	// Skewed load, about 100 writes per second, half of them on HOT#1.
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
			if rnd.IntN(2) == 0 {
				put("HOT#1")
			} else {
				put(fmt.Sprintf("CUSTOMER#%d", rnd.IntN(300)))
			}
		}
	})
	began := time.Now()
	for {
		_, body := d1.get("/metrics")
		if hotSeries.MatchString(body) {
			break
		}
		if time.Since(began) > settle {
			close(stop)
			wg.Wait()
			t.Fatalf("HOT#1 not flagged within %v of its traffic starting:\n%s", settle, grepLines(body, "hotkeyd_"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("HOT#1 flagged %.1fs after its traffic started", time.Since(began).Seconds())

	// Crash in the middle of the stream, the writer still writing.
	time.Sleep(time.Second)
	before := d1.metric(t, eventsSeries)
	d1.kill()
	seq := checkpointSequence(t, cpDir)
	time.Sleep(500 * time.Millisecond)
	d2 := startStreamsDaemon(t, cfgPath)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	total := written.Load()

	// DynamoDB Local numbers a stream's records 1, 2, 3...: the records
	// after the checkpoint are total - seq, and the new process must count
	// exactly those (none lost, none before the checkpoint).
	want := float64(total - seq)
	waitForMetric(t, d2, eventsSeries, want, settle)
	time.Sleep(1500 * time.Millisecond) // a record counted twice would show by now
	got := d2.metric(t, eventsSeries)
	if got != want {
		t.Errorf("restarted hotkeyd counted %v writes, want %v (written %d, checkpoint at record %d)", got, want, total, seq)
	}
	// Read twice: what the crashed process counted after its last
	// checkpoint. It is at most one GetRecords batch.
	if dup := before - float64(seq); dup > 1000 {
		t.Errorf("%v records counted before the crash were past the checkpoint (%d), more than one batch", dup, seq)
	}
	t.Logf("written %d, first process counted ≥ %v, checkpoint at %d, second process counted %v", total, before, seq, got)

	_ = d2.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d2.done:
		if code := d2.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("hotkeyd exited with %d after SIGTERM", code)
		}
	case <-time.After(15 * time.Second):
		t.Error("hotkeyd did not stop within 15s of SIGTERM")
	}
}

func waitForMetric(t *testing.T, d *streamsDaemon, series string, want float64, timeout time.Duration) float64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := d.metric(t, series)
		if got >= want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v after %v, want %v", series, got, timeout, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkpointSequence reads the one shard checkpoint in dir.
func checkpointSequence(t *testing.T, dir string) int64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if len(files) != 1 {
		t.Fatalf("checkpoint files %v, want one", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var cp struct {
		Sequence string `json:"sequence_number"`
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatalf("checkpoint %s: %v", files[0], err)
	}
	n, err := strconv.ParseInt(cp.Sequence, 10, 64)
	if err != nil {
		t.Fatalf("checkpoint %s sequence %q: %v", files[0], cp.Sequence, err)
	}
	return n
}

func grepLines(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
