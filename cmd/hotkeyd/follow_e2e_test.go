package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestRunSkipsPipeInFollowedGlob runs the daemon on a glob that matches a
// named pipe besides a log: the pipe is never opened (without a writer it
// would block the reader for good), the log is read, the pipe is named
// once in the log and in readiness, and SIGTERM still ends the process.
func TestRunSkipsPipeInFollowedGlob(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "a-pipe.log"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	logPath := filepath.Join(dir, "b-access.log")
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	cfg := fmt.Sprintf("sources:\n  - type: jsonl\n    paths: [%q]\n", filepath.Join(dir, "*.log"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{NoWaitReady: true}, "--config.file", cfgPath)
	h.WaitLog(t, `msg="following file"`, settle)

	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		fmt.Fprintf(f, `{"table":"orders","pk":"USER#%d","op":"PutItem"}`+"\n", i)
	}
	f.Close()

	want := `hotkeyd_events_total{class="write",source="jsonl",table="orders"} 50`
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, metrics := h.Get(t, "/metrics")
		if bytes.Contains(metrics, []byte(want)) {
			if !bytes.Contains(metrics, []byte(`hotkeyd_source_errors_total{reason="open",source="jsonl"} 1`)) {
				t.Errorf("/metrics does not count the pipe once as an open error")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %s: the log next to the pipe was not read", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := h.Get(t, "/-/ready"); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "a-pipe.log") {
		t.Errorf("/-/ready: %d %s; want 503 naming the pipe", code, body)
	}
	if n := strings.Count(h.Stderr(), "a-pipe.log"); n != 1 {
		t.Errorf("the pipe is named %d times in the log, want once:\n%s", n, h.Stderr())
	}
	if code := h.Stop(t); code != 0 {
		t.Errorf("exit status %d after SIGTERM", code)
	}
}
