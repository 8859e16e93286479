package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// shippedMemoryLimit is the memory the shipped manifests give the daemon
// (deploy/: 512 MiB, GOMEMLIMIT 460 MiB): no input may take a process
// past it.
const shippedMemoryLimit = 512 << 20

// bigBatchRecord generates a CloudTrail file of one BatchWriteItem record
// of n put requests (170 000 of them make 7.9 MB, under the 8 MiB a record
// may take), stamped at, followed by a GetItem that counts.
func bigBatchRecord(n int, at time.Time) string {
	var b strings.Builder
	ts := at.UTC().Format(time.RFC3339)
	fmt.Fprintf(&b, `{"Records":[{"eventTime":%q,"eventSource":"dynamodb.amazonaws.com","eventName":"BatchWriteItem","requestParameters":{"requestItems":{"orders":[`, ts)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"putRequest":{"key":{"customer":"C-%06d"}}}`, i)
	}
	fmt.Fprintf(&b, `]}}},{"eventTime":%q,"eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"customer":"C-1"}}}]}`, ts)
	return b.String()
}

// TestAnalyzeCloudTrailBatchBeyondDynamoDBLimits runs hotkeyd analyze on a
// 7.9 MB CloudTrail file whose one BatchWriteItem record lists 170 000 put
// requests (DynamoDB accepts 25): the record is refused as
// beyond_dynamodb_limits, the GetItem beside it counted, and the
// process's peak resident memory stays under the shipped limit (344 MB at
// 100 000 items when every request was materialised).
func TestAnalyzeCloudTrailBatchBeyondDynamoDBLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	path := filepath.Join(t.TempDir(), "big.json")
	rec := bigBatchRecord(170000, time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	if err := os.WriteFile(path, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("file of %.1f MB", float64(len(rec))/1e6)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(testenv.Binary(t), "analyze", "--format", "json", "--key-schema", "orders=customer", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		t.Fatalf("exit %v\nstderr:\n%s", err, stderr.String())
	}
	if want := "beyond_dynamodb_limits"; !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "170000 items in one call: DynamoDB accepts at most 25") {
		t.Errorf("stderr does not refuse the record as %s:\n%s", want, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"events":1,`) && !strings.Contains(stdout.String(), `"events": 1,`) {
		t.Errorf("the GetItem beside it is not the one event counted:\n%.2000s", stdout.String())
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // kB on Linux
	t.Logf("peak resident memory %d MiB", peak>>20)
	if peak > shippedMemoryLimit {
		t.Errorf("peak resident memory %d MiB, want at most %d MiB", peak>>20, shippedMemoryLimit>>20)
	}
}

// TestRunCloudTrailBatchBeyondDynamoDBLimits drops the same file into the
// folder a running daemon's cloudtrail source follows: the record is
// counted as rejected for beyond_dynamodb_limits, the GetItem counted, and
// the daemon's peak resident memory (605 MB before) stays under the
// shipped limit.
func TestRunCloudTrailBatchBeyondDynamoDBLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	dir, ckpt := t.TempDir(), t.TempDir()
	day := filepath.Join(dir, "AWSLogs", ctAccount, "CloudTrail", "us-east-1", "2026", "11", "22")
	if err := os.MkdirAll(day, 0o755); err != nil {
		t.Fatal(err)
	}
	ctWriteGz(t, filepath.Join(day, "big.json.gz"), bigBatchRecord(170000, time.Now().Add(-time.Minute)))
	cfg := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	yaml := fmt.Sprintf(`window: 10m
tables:
  orders: {partition_key: customer}
sources:
  - type: cloudtrail
    paths: [%q]
    checkpoint_dir: %q
`, filepath.Join(dir, "**", "*.json.gz"), ckpt)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "run", "--config.file", cfg)
	deadline := time.Now().Add(time.Minute)
	for {
		_, body := h.Get(t, "/metrics")
		refused, _ := ctMetric(string(body), "hotkeyd_input_rejected_total", `source="cloudtrail"`, `reason="beyond_dynamodb_limits"`)
		read, _ := ctMetric(string(body), "hotkeyd_events_total", `table="orders"`, `source="cloudtrail"`)
		if refused == 1 && read == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refused %g, events %g; want 1 and 1", refused, read)
		}
		time.Sleep(100 * time.Millisecond)
	}
	peak := h.PeakRSS(t)
	t.Logf("peak resident memory %d MiB", peak>>20)
	if peak > shippedMemoryLimit {
		t.Errorf("peak resident memory %d MiB, want at most %d MiB", peak>>20, shippedMemoryLimit>>20)
	}
}
