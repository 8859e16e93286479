package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestRunReloadsConfiguration runs the daemon on a CloudTrail folder and
// changes its configuration file under it, as an operator would:
//
//   - a file that does not load, then SIGHUP: the daemon keeps running on
//     the configuration it has, says so in the log and in
//     hotkeyd_config_last_reload_successful 0 (before, SIGHUP killed it:
//     exit 129, nothing drained, no checkpoint written);
//   - a new window, then SIGHUP: the sketches restart empty, and the
//     source with them, stopped as cleanly as on SIGTERM (drained,
//     checkpoint written) and started again from its checkpoint; the HTTP
//     server and the counters go on; the file read before is not read
//     again, and the gauge is 1;
//   - POST /-/reload (--web.enable-lifecycle) does the same, and its
//     answer says what restarted.
func TestRunReloadsConfiguration(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	dir, ckpt := t.TempDir(), t.TempDir()
	day := filepath.Join(dir, "AWSLogs", ctAccount, "CloudTrail", "us-east-1", "2026", "11", "22")
	record := func(key string) string {
		return `{"Records":[{"eventTime":"` + time.Now().UTC().Format(time.RFC3339) + `","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"customer":"` + key + `"}}}]}`
	}
	ctWriteGz(t, filepath.Join(day, "first.json.gz"), record("C-1"))
	cfg := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	writeCfg := func(window string) {
		t.Helper()
		yaml := fmt.Sprintf("window: %s\ntables:\n  orders: {partition_key: customer}\nsources:\n  - type: cloudtrail\n    paths: [%q]\n    checkpoint_dir: %q\n",
			window, filepath.Join(dir, "**", "*.json.gz"), ckpt)
		if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	metric := func(h *testenv.Hotkeyd, name string, labels ...string) float64 {
		t.Helper()
		_, body := h.Get(t, "/metrics")
		if len(labels) == 0 {
			m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(body)
			if m == nil {
				return -1
			}
			v, _ := strconv.ParseFloat(string(m[1]), 64)
			return v
		}
		v, _ := ctMetric(string(body), name, labels...)
		return v
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not happen within 30 s", what)
			}
		}
	}
	reloaded := func(h *testenv.Hotkeyd) int { return strings.Count(h.Stderr(), `msg="configuration reloaded"`) }
	events := func(h *testenv.Hotkeyd) float64 {
		return metric(h, "hotkeyd_events_total", `table="orders"`, `source="cloudtrail"`)
	}

	writeCfg("10m")
	addr := freeAddr(t)
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "run", "--config.file", cfg, "--web.listen-address", addr, "--web.enable-lifecycle")
	waitFor("the first file read", func() bool { return events(h) == 1 })
	if v := metric(h, "hotkeyd_config_last_reload_successful"); v != 1 {
		t.Errorf("hotkeyd_config_last_reload_successful %g at start, want 1", v)
	}

	// A file that does not load: kept running as it was.
	if err := os.WriteFile(cfg, []byte("window: 1ns\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.Signal(t, syscall.SIGHUP)
	h.WaitLog(t, "configuration reload failed; keeping the running configuration", settle)
	if v := metric(h, "hotkeyd_config_last_reload_successful"); v != 0 {
		t.Errorf("hotkeyd_config_last_reload_successful %g after a failed reload, want 0", v)
	}
	if !strings.Contains(h.Stderr(), "window: must be at least 12ms") || reloaded(h) != 0 || events(h) != 1 {
		t.Errorf("after a failed reload: the error must be said, and the pipeline run on (%d reloads, %g events)", reloaded(h), events(h))
	}

	// A new window: the sketches restart, and the source with them.
	writeCfg("5m")
	h.Signal(t, syscall.SIGHUP)
	waitFor("the reload", func() bool { return reloaded(h) == 1 })
	stderr := h.Stderr()
	line := stderr[strings.Index(stderr, `msg="configuration reloaded"`):]
	line = line[:strings.IndexByte(line, '\n')]
	if !strings.Contains(line, `changed=window restarted="the window (window changed): it starts empty, the counters are kept; the sources (the window restarts)`) {
		t.Errorf("the reload's log line does not say what restarted: %s", line)
	}
	if strings.Count(stderr, `msg="stopped reading CloudTrail files"`) != 1 || strings.Contains(stderr, `msg="http server stopped"`) || strings.Count(stderr, `msg="hotkeyd started"`) != 1 {
		t.Errorf("the reload must stop the source, and neither the HTTP server nor the process:\n%s", stderr)
	}
	if v := metric(h, "hotkeyd_config_last_reload_successful"); v != 1 {
		t.Errorf("hotkeyd_config_last_reload_successful %g after a reload, want 1", v)
	}
	// The file read before the reload was written down: only the new one
	// is read, and the counter goes on.
	ctWriteGz(t, filepath.Join(day, "second.json.gz"), record("C-2"))
	waitFor("the second file read", func() bool { return events(h) == 2 })
	var body []byte
	waitFor("a report with the new file's key", func() bool {
		_, body = h.Get(t, "/api/v1/hotkeys")
		return strings.Contains(string(body), `"C-2"`)
	})
	if strings.Contains(string(body), `"C-1"`) {
		t.Errorf("the window did not restart, or the file read before the reload was read again:\n%s", body)
	}

	// POST /-/reload: the same, said in the answer.
	writeCfg("7m")
	resp, err := http.Post(h.URL+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), "restarted: the window (window changed)") {
		t.Fatalf("POST /-/reload: %d %s", resp.StatusCode, answer)
	}
	waitFor("the second reload's log line", func() bool { return reloaded(h) == 2 })
	waitFor("readiness after the second reload", func() bool { code, _ := h.Get(t, "/-/ready"); return code == http.StatusOK })
}

// TestReloadNeedsLifecycle: without --web.enable-lifecycle, POST
// /-/reload is refused with 403 and a hint, and reloads nothing.
func TestReloadNeedsLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo")
	resp, err := http.Post(h.URL+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "--web.enable-lifecycle") {
		t.Errorf("POST /-/reload: %d %s, want 403 naming --web.enable-lifecycle", resp.StatusCode, b)
	}
	if strings.Contains(h.Stderr(), "reload") {
		t.Errorf("a reload was tried:\n%s", h.Stderr())
	}
}
