package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// postReload asks base for a reload and returns the status and answer.
func postReload(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: time.Minute}).Post(base+"/-/reload", "", nil)
	if err != nil {
		t.Fatalf("POST /-/reload: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// hammer asks base for /-/healthy and posts an event of table pings, each
// on a new connection, from 4 clients back to back until stop is called;
// stop returns how many requests were made and the errors seen.
func hammer(base string) (stop func() (int64, []string)) {
	var n atomic.Int64
	var mu sync.Mutex
	var errs []string
	done := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) < 10 {
			errs = append(errs, err.Error())
		}
	}
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				resp, err := client.Get(base + "/-/healthy")
				if err == nil {
					resp.Body.Close()
					resp, err = client.Post(base+"/api/v1/events", "application/x-ndjson", strings.NewReader(`{"table":"pings","pk":"P","op":"PutItem"}`+"\n"))
				}
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("POST /api/v1/events: %s", resp.Status)
					}
				}
				if err != nil {
					fail(err)
				}
				n.Add(1)
			}
		})
	}
	return func() (int64, []string) {
		close(done)
		wg.Wait()
		return n.Load(), errs
	}
}

// waitEvaluations waits until the detector has evaluated twice after now,
// as hotkeyd_last_evaluation_timestamp_seconds says.
func waitEvaluations(t *testing.T, h *testenv.Hotkeyd) {
	t.Helper()
	after := float64(time.Now().Add(time.Second).UnixNano()) / 1e9
	deadline := time.Now().Add(30 * time.Second)
	for {
		if v, ok := scrape(t, h)["hotkeyd_last_evaluation_timestamp_seconds"]; ok && v > after {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the detector did not evaluate twice within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReloadKeepsTheWindow makes a key hot (20 % of a table's writes),
// then reloads a threshold of 15 % and one of 50 %, each while clients
// connect back to back: no connection is refused, the counts and the
// counters go on, the key stays flagged under 15 % and clears under 50 %,
// and each answer says what was applied.
func TestReloadKeepsTheWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	t.Parallel() // a process of its own, on a port of its own
	cfg := writeConfig(t, "window: 10m\nthreshold: 0.1\n")
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "run", "--config.file", cfg, "--web.enable-ingest", "--web.ingest.rate-limit=0", "--web.enable-lifecycle")

	var body bytes.Buffer
	for range 200 {
		body.WriteString(`{"table":"orders","pk":"USER#hot","op":"PutItem"}` + "\n")
	}
	for k := range 40 {
		for range 20 {
			fmt.Fprintf(&body, `{"table":"orders","pk":"USER#%d","op":"PutItem"}`+"\n", k)
		}
	}
	if code, _, answer := post(t, h, body.Bytes(), nil); code != http.StatusOK {
		t.Fatalf("POST /api/v1/events: %d %s", code, answer)
	}
	hot := regexp.MustCompile(`(?m)^hotkeyd_diagnosis\{cause="hot_key",class="write",fix="[a-z_]+",key="USER#hot",severity="[a-z]+",table="orders"\} 1$`)
	const events = `hotkeyd_events_total{class="write",source="http",table="orders"}`
	waitMetric(t, h, events, 1000, 30*time.Second)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, m := h.Get(t, "/metrics"); hot.Match(m) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("USER#hot never flagged")
		}
	}

	reload := func(threshold string) string {
		t.Helper()
		if err := os.WriteFile(cfg, []byte("window: 10m\nthreshold: "+threshold+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		stop := hammer(h.URL)
		time.Sleep(50 * time.Millisecond) // the clients are connecting
		code, answer := postReload(t, h.URL)
		waitEvaluations(t, h)
		n, errs := stop()
		if code != http.StatusOK || !strings.Contains(answer, "applied from the next evaluation, the window and every counter kept: threshold.") || strings.Contains(answer, "restarted") {
			t.Errorf("POST /-/reload (threshold %s): %d %q", threshold, code, answer)
		}
		if len(errs) > 0 {
			t.Errorf("during the reload to threshold %s, %d requests, errors: %s", threshold, n, strings.Join(errs, "; "))
		}
		return answer
	}

	reload("0.15")
	m := scrape(t, h)
	if m[events] != 1000 || m["hotkeyd_config_last_reload_successful"] != 1 {
		t.Errorf("after the reload: %s %g, hotkeyd_config_last_reload_successful %g; want 1000 and 1", events, m[events], m["hotkeyd_config_last_reload_successful"])
	}
	if _, metrics := h.Get(t, "/metrics"); !hot.Match(metrics) || strings.Contains(h.Stderr(), `msg="hot key cleared"`) {
		t.Errorf("USER#hot (20 %%) no longer flagged under a threshold of 15 %%")
	}
	h.WaitLog(t, `msg="configuration reloaded" changed=threshold applied=threshold`, 10*time.Second)

	reload("0.5")
	h.WaitLog(t, `msg="hot key cleared" table=orders class=write key=USER#hot`, 10*time.Second)
	if v := scrape(t, h)[events]; v != 1000 {
		t.Errorf("%s = %g after two reloads, want 1000", events, v)
	}
	if n := strings.Count(h.Stderr(), `msg="hotkeyd started"`); n != 1 {
		t.Errorf("started %d times; a reload restarts nothing", n)
	}
}

// TestReloadRefusals reloads files that cannot be applied — a listen
// address in use, a named pipe, a file of 2 MiB — each refused at once
// with its reason while the daemon runs on as it was, then a new address,
// which it moves to; --config.check refuses the pipe too, and the daemon
// still stops on SIGTERM within the 15 s the cleanup allows.
func TestReloadRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	t.Parallel() // a process of its own, on ports of its own
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hotkeyd.yaml")
	write := func(listen string) {
		t.Helper()
		os.Remove(cfg)
		if err := os.WriteFile(cfg, []byte("window: 10m\nlisten: "+listen+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first := freeAddr(t)
	write(first)
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{ListenFromConfig: true}, "run", "--config.file", cfg, "--web.enable-ingest", "--web.enable-lifecycle")
	if h.URL != "http://"+first {
		t.Fatalf("listening on %s, want %s", h.URL, first)
	}
	refused := func(what, want string) {
		t.Helper()
		code, answer := postReload(t, h.URL)
		if code != http.StatusInternalServerError || !strings.Contains(answer, "the running configuration is kept") || !strings.Contains(answer, want) {
			t.Errorf("reload of %s: %d %q, want 500 saying %q", what, code, answer, want)
		}
		if code, _ := h.Get(t, "/-/ready"); code != http.StatusOK {
			t.Errorf("not ready after the refused reload of %s", what)
		}
		if v := scrape(t, h)["hotkeyd_config_last_reload_successful"]; v != 0 {
			t.Errorf("hotkeyd_config_last_reload_successful %g after the reload of %s, want 0", v, what)
		}
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	write(busy.Addr().String())
	refused("an address in use", "listen: listen tcp "+busy.Addr().String()+": bind: address already in use")

	os.Remove(cfg)
	if err := syscall.Mkfifo(cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	refused("a named pipe", "not a regular file (a named pipe)")
	h.Signal(t, syscall.SIGHUP)
	h.WaitLog(t, `msg="configuration reload failed; keeping the running configuration" error="read config: `+cfg+`: not a regular file (a named pipe)`, 10*time.Second)
	if code, _, stderr := runBinary(t, dir, nil, "--config.check", "--config.file", cfg); code != 1 || !strings.Contains(stderr, "not a regular file (a named pipe)") {
		t.Errorf("--config.check on a named pipe: exit %d, %s", code, stderr)
	}

	os.Remove(cfg)
	if err := os.WriteFile(cfg, append([]byte("window: 10m\n"), bytes.Repeat([]byte("# padding\n"), 2<<20/10)...), 0o644); err != nil {
		t.Fatal(err)
	}
	refused("a file of 2 MiB", "more than the 1 MiB allowed")

	second := freeAddr(t)
	write(second)
	code, answer := postReload(t, h.URL)
	if code != http.StatusOK || !strings.Contains(answer, "restarted: the listener (listen changed): now on "+second) {
		t.Fatalf("reload to %s: %d %q", second, code, answer)
	}
	h.URL = "http://" + second
	if code, _ := h.Get(t, "/-/ready"); code != http.StatusOK {
		t.Errorf("/-/ready on the new address: %d", code)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.Dial("tcp", first)
		if err != nil {
			break // closed once its connections were answered
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("%s still accepts connections after the move", first)
		}
	}
	if v := scrape(t, h)["hotkeyd_config_last_reload_successful"]; v != 1 {
		t.Errorf("hotkeyd_config_last_reload_successful %g after the move, want 1", v)
	}
}
