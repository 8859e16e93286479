package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/hotkeyd/hotkeyd/internal/app/daemon"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// startIngestOnly runs the daemon with HTTP ingest as its only source and
// the extra flags given.
func startIngestOnly(t *testing.T, flags ...string) *testenv.Hotkeyd {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfgPath, []byte("window: 30s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, append([]string{"--config.file", cfgPath, "--web.enable-ingest"}, flags...)...)
}

// post sends body to /api/v1/events with the headers given (a Content-Type
// only if one is named) and returns the status, Retry-After and body.
func post(t *testing.T, h *testenv.Hotkeyd, body []byte, header map[string]string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.URL+"/api/v1/events", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// metricsHave fails the test unless /metrics holds every line of want.
func metricsHave(t *testing.T, h *testenv.Hotkeyd, want ...string) {
	t.Helper()
	_, metrics := h.Get(t, "/metrics")
	for _, w := range want {
		if !bytes.Contains(metrics, []byte(w+"\n")) {
			t.Errorf("/metrics lacks %s", w)
		}
	}
}

// TestIngestStatuses posts as a user would: without a Content-Type (taken
// for JSON lines), with curl's form type (415, saying what to send), a body
// over the limit (413); every refusal is counted.
func TestIngestStatuses(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	h := startIngestOnly(t)
	line := []byte(`{"table":"orders","pk":"USER#1","op":"PutItem"}` + "\n")
	if code, _, body := post(t, h, line, nil); code != http.StatusOK || body != `{"accepted":1,"counted":1,"untracked":0,"rejected":0}`+"\n" {
		t.Errorf("POST without Content-Type: %d %s", code, body)
	}
	code, _, body := post(t, h, line, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	want := `{"accepted":0,"counted":0,"untracked":0,"rejected":0,"error":"content type \"application/x-www-form-urlencoded\" is not JSON lines: send Content-Type: application/x-ndjson, or none"}` + "\n"
	if code != http.StatusUnsupportedMediaType || body != want {
		t.Errorf("POST as a form: %d %s, want 415 %s", code, body, want)
	}
	// 5 MiB of lines, small once compressed, so that the whole body is
	// sent before the answer.
	var big bytes.Buffer
	zw := gzip.NewWriter(&big)
	_, _ = zw.Write(bytes.Repeat(line, 5<<20/len(line)))
	_ = zw.Close()
	if code, _, _ := post(t, h, big.Bytes(), map[string]string{"Content-Encoding": "gzip"}); code != http.StatusRequestEntityTooLarge {
		t.Errorf("POST of 5 MiB: %d, want 413", code)
	}
	metricsHave(t, h,
		`hotkeyd_http_requests_refused_total{code="415",path="/api/v1/events"} 1`,
		`hotkeyd_http_requests_refused_total{code="413",path="/api/v1/events"} 1`,
		`hotkeyd_http_requests_refused_total{code="429",path="/api/v1/events"} 0`,
		`hotkeyd_events_total{class="write",source="http",table="orders"} 1`)
}

// TestIngestRateLimitIsASetting lowers the ingest rate limit with its
// flags: the second request of a burst of one is refused with 429.
func TestIngestRateLimitIsASetting(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	h := startIngestOnly(t, "--web.ingest.rate-limit=0.1", "--web.ingest.burst=1")
	line := []byte(`{"table":"orders","pk":"USER#1","op":"PutItem"}` + "\n")
	if code, _, body := post(t, h, line, nil); code != http.StatusOK {
		t.Fatalf("first POST: %d %s", code, body)
	}
	code, retry, body := post(t, h, line, nil)
	if code != http.StatusTooManyRequests || retry == "" {
		t.Errorf("second POST: %d (Retry-After %q) %s, want 429 with Retry-After", code, retry, body)
	}
	metricsHave(t, h, `hotkeyd_http_requests_refused_total{code="429",path="/api/v1/events"} 1`)
}

// TestHTTPTimeoutsAndConnectionCap holds connections as a slow or idle
// client would: a body that never arrives and an idle keep-alive
// connection are closed by the server, and past the connection cap a new
// client is served in the place of the connection gone longest without
// progress.
func TestHTTPTimeoutsAndConnectionCap(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	h := startIngestOnly(t, "--web.read-timeout=1s", "--web.idle-timeout=1s", "--web.max-connections=2")
	addr := strings.TrimPrefix(h.URL, "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// closedWithin reads c until the server closes it, and fails unless
	// that happens within d.
	closedWithin := func(what string, c net.Conn, d time.Duration) {
		t.Helper()
		start := time.Now()
		_ = c.SetReadDeadline(start.Add(d))
		_, err := io.Copy(io.Discard, c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("%s: connection still open after %s", what, d)
		}
		c.Close()
	}

	slow := dial()
	if _, err := io.WriteString(slow, "POST /api/v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	closedWithin("a body that never arrives", slow, 5*time.Second)

	idle := dial()
	if _, err := io.WriteString(idle, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /-/healthy on a keep-alive connection: %v %v", resp, err)
	}
	resp.Body.Close()
	closedWithin("an idle keep-alive connection", idle, 5*time.Second)

	// Two connections that send nothing take the two places: a third
	// client is still served, and the connection gone longest without
	// progress, the first, is closed to make room for it.
	a, b := dial(), dial()
	defer b.Close()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err = client.Get(h.URL + "/-/healthy")
	if err != nil {
		t.Fatalf("not served past --web.max-connections=2: %v", err)
	}
	resp.Body.Close()
	closedWithin("the connection without progress the longest, past the cap", a, 5*time.Second)
	_ = b.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := b.Read(make([]byte, 1)); !isTimeout(err) {
		t.Errorf("the younger connection was closed too: %v", err)
	}
	h.WaitLog(t, "connections closed: the connection cap is full", 5*time.Second)
}

// TestProbesWithoutCredentials runs with basic auth on: the probes the
// Kubernetes manifests send (no credentials) get their answer, everything
// else asks for credentials, and the refusals are counted.
func TestProbesWithoutCredentials(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	webConfig := writeBasicAuthConfig(t)
	// StartHotkeyd waits for /-/ready without credentials.
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo", "--web.config.file", webConfig)
	for path, want := range map[string]int{"/-/healthy": 200, "/-/ready": 200, "/metrics": 401, "/api/v1/hotkeys": 401, "/": 401} {
		if code, _ := h.Get(t, path); code != want {
			t.Errorf("GET %s without credentials = %d, want %d", path, code, want)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, h.URL+"/metrics", nil)
	req.SetBasicAuth("prometheus", "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`hotkeyd_http_requests_refused_total{code="401",path="/metrics"} 1`,
		`hotkeyd_http_requests_refused_total{code="401",path="/api/v1/hotkeys"} 1`,
	} {
		if !bytes.Contains(metrics, []byte(want+"\n")) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestStuckSourceDoesNotBlockShutdown reads stdin from a pipe nobody
// closes, a read no context can interrupt: SIGTERM still ends the process,
// within the drain timeout, and the log names the source left behind.
func TestStuckSourceDoesNotBlockShutdown(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	cfgPath := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfgPath, []byte("sources:\n  - type: jsonl\n    paths: [\"-\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close() // only after the process is gone
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{Stdin: r}, "--config.file", cfgPath)
	start := time.Now()
	if code := h.Stop(t); code != 0 {
		t.Fatalf("exit status %d after SIGTERM\n%s", code, h.Stderr())
	}
	if took := time.Since(start); took < daemon.DrainTimeout {
		t.Errorf("stopped after %s, before the drain timeout %s: was the source stuck at all?", took, daemon.DrainTimeout)
	}
	if line := h.WaitLog(t, `msg="source did not stop in time; leaving it behind, its in-flight events are dropped" logged_source=jsonl timeout=10s`, time.Second); !strings.Contains(line, " level=warn ") {
		t.Errorf("drain timeout line not a warning: %s", line)
	}
	h.WaitLog(t, `msg="http server stopped"`, time.Second)
}

// TestIngestAnswerSaysWhatWasUntracked runs the daemon with max_tables: 1
// and posts events of a second table while the first is busier: the
// answer says the events were taken but not counted ("untracked"), as
// hotkeyd_untracked_events_total does, rather than only "accepted".
func TestIngestAnswerSaysWhatWasUntracked(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	cfgPath := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfgPath, []byte("window: 1m\nmax_tables: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "--config.file", cfgPath, "--web.enable-ingest")
	busy := []byte(strings.Repeat(`{"table":"orders","pk":"USER#1","op":"PutItem"}`+"\n", 5))
	if code, _, body := post(t, h, busy, nil); code != http.StatusOK || body != `{"accepted":5,"counted":5,"untracked":0,"rejected":0}`+"\n" {
		t.Errorf("the first table: %d %s", code, body)
	}
	other := []byte(`{"table":"sessions","pk":"S-1","op":"GetItem"}` + "\n" + `{"table":"orders","pk":"USER#2","op":"PutItem"}` + "\n" + `{"table":"orders","op":"PutItem"}` + "\n")
	code, _, body := post(t, h, other, nil)
	var resp struct {
		Accepted, Counted, Untracked, Rejected int
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("%d %s: %v", code, body, err)
	}
	if code != http.StatusOK || resp.Accepted != 2 || resp.Counted != 1 || resp.Untracked != 1 || resp.Rejected != 1 {
		t.Errorf("a second table past max_tables: %d %s; want 2 accepted: 1 counted, 1 untracked; 1 rejected", code, body)
	}
	metricsHave(t, h, `hotkeyd_untracked_events_total{source="http"} 1`)
}
