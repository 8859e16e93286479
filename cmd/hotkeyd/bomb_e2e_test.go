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

// xzBomb is a 46 KB xz file whose block header asks for a 1.5 GiB
// dictionary (a valid file: the xz tool reads it) and which holds 300 MB
// of JSON lines, enough to fill that much of the dictionary. Read without
// a cap, it takes 1.6 GB of resident memory.
const xzBomb = "testdata/xz-dict-1536mib.xz"

// bombPeak is the most resident memory a process reading xzBomb may take.
const bombPeak = 256 << 20

// TestAnalyzeRefusesXZDictionaryBomb runs hotkeyd analyze on xzBomb as a
// user would: the file is refused with an error that says what it asked
// for, and the process's peak resident memory stays under 256 MiB.
func TestAnalyzeRefusesXZDictionaryBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(testenv.Binary(t), "analyze", xzBomb)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1\nstderr:\n%s", err, stderr.String())
	}
	if want := "xz dictionary of 1536 MiB over the limit of 64 MiB"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // kB on Linux
	t.Logf("peak resident memory %d MiB", peak>>20)
	if peak > bombPeak {
		t.Errorf("peak resident memory %d MiB, want at most %d MiB", peak>>20, bombPeak>>20)
	}
}

// TestRunRefusesXZDictionaryBombInCloudTrailFolder drops xzBomb into the
// folder a running daemon's cloudtrail source follows (the format is found
// by content, whatever the name): it is counted as a bad file, a good file
// beside it is read, and the daemon's peak resident memory stays under
// 256 MiB.
func TestRunRefusesXZDictionaryBombInCloudTrailFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	dir, ckpt := t.TempDir(), t.TempDir()
	day := filepath.Join(dir, "AWSLogs", ctAccount, "CloudTrail", "us-east-1", "2026", "11", "22")
	bomb, err := os.ReadFile(xzBomb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(day, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.WriteFile(filepath.Join(day, "bomb.json.gz"), bomb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(day, "bomb.json.gz"), old, old); err != nil {
		t.Fatal(err)
	}
	// A call of a minute ago: CloudTrail delivers the last minutes, and
	// an older time is refused as bad_time.
	ctWriteGz(t, filepath.Join(day, "good.json.gz"), `{"Records":[{"eventTime":"`+time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)+`","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"customer":"C-1"}}}]}`)
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := h.Get(t, "/metrics")
		bad, _ := ctMetric(string(body), "hotkeyd_input_rejected_total", `source="cloudtrail"`, `reason="bad_file"`)
		read, _ := ctMetric(string(body), "hotkeyd_events_total", `table="orders"`, `source="cloudtrail"`)
		if bad == 1 && read == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bad files %g, events %g; want 1 and 1", bad, read)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.WaitLog(t, "xz dictionary of 1536 MiB over the limit of 64 MiB", settle)
	peak := h.PeakRSS(t)
	t.Logf("peak resident memory %d MiB", peak>>20)
	if peak > bombPeak {
		t.Errorf("peak resident memory %d MiB, want at most %d MiB", peak>>20, bombPeak>>20)
	}
}
