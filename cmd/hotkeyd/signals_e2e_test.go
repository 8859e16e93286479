package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestRunStopsCleanlyOnSIGHUP sends SIGHUP to the daemon reading a
// CloudTrail folder: it stops as on SIGTERM (sources stopped and drained
// before the HTTP server, exit 0, the files read written down), rather than
// dying of the signal's default action (exit 129, nothing written). A
// second daemon on the same checkpoints does not read the file again.
func TestRunStopsCleanlyOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	dir, ckpt := t.TempDir(), t.TempDir()
	day := filepath.Join(dir, "AWSLogs", ctAccount, "CloudTrail", "us-east-1", "2026", "11", "22")
	record := func(key string) string {
		return `{"Records":[{"eventTime":"2026-11-22T11:00:00Z","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"customer":"` + key + `"}}}]}`
	}
	ctWriteGz(t, filepath.Join(day, "first.json.gz"), record("C-1"))
	cfg := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	yaml := fmt.Sprintf("window: 10m\ntables:\n  orders: {partition_key: customer}\nsources:\n  - type: cloudtrail\n    paths: [%q]\n    checkpoint_dir: %q\n",
		filepath.Join(dir, "**", "*.json.gz"), ckpt)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	events := func(h *testenv.Hotkeyd, want float64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, body := h.Get(t, "/metrics")
			if v, _ := ctMetric(string(body), "hotkeyd_events_total", `table="orders"`, `source="cloudtrail"`); v == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("hotkeyd_events_total never reached %g", want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "run", "--config.file", cfg)
	events(h, 1)
	h.Signal(t, syscall.SIGHUP)
	select {
	case <-h.Exited():
	case <-time.After(15 * time.Second):
		t.Fatal("hotkeyd did not exit within 15 s of SIGHUP")
	}
	if code := h.Stop(t); code != 0 {
		t.Fatalf("exit status %d after SIGHUP, want 0\n%s", code, h.Stderr())
	}
	stderr := h.Stderr()
	stopped, served := strings.Index(stderr, `msg="stopped reading CloudTrail files"`), strings.Index(stderr, `msg="http server stopped"`)
	if stopped < 0 || served < 0 || stopped > served {
		t.Errorf("the source must stop before the HTTP server:\n%s", stderr)
	}
	if !strings.Contains(stderr, "msg=stopped signal=hangup") {
		t.Errorf("no clean stop in the log:\n%s", stderr)
	}

	// The file read before SIGHUP was written down: a new daemon reads only
	// the file that came since.
	ctWriteGz(t, filepath.Join(day, "second.json.gz"), record("C-2"))
	h = testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "run", "--config.file", cfg)
	events(h, 1)
	var body []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var code int
		if code, body = h.Get(t, "/api/v1/hotkeys"); code == 200 || time.Now().After(deadline) {
			break // the first report, made at the first detector tick
		}
	}
	if !strings.Contains(string(body), `"C-2"`) || strings.Contains(string(body), `"C-1"`) {
		t.Errorf("the file read before SIGHUP was read again:\n%s", body)
	}
}
