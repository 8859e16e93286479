package jsonl

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/hotkeyd/hotkeyd/traffic"
)

func post(t *testing.T, h http.Handler, body io.Reader, header map[string]string) (*httptest.ResponseRecorder, Response) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/api/v1/events", body)
	req.Header.Set("Content-Type", "application/x-ndjson")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if header["Content-Length"] == "-1" {
		req.ContentLength = -1
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var resp Response
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatalf("response %q is not JSON: %v", w.Body.String(), err)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("response content type %q", ct)
	}
	return w, resp
}

func TestHandler(t *testing.T) {
	good := lines("a", "b")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(good))
	zw.Close()
	var bomb bytes.Buffer
	zw = gzip.NewWriter(&bomb)
	zw.Write(bytes.Repeat([]byte(lines("z")), 1000))
	zw.Close()

	cases := []struct {
		name     string
		method   string
		body     []byte
		header   map[string]string
		status   int
		accepted int64
		rejected int64
		errors   []string
		put      int
	}{
		{name: "all good", body: []byte(good), status: 200, accepted: 2, put: 2},
		{name: "last line without newline", body: []byte(strings.TrimSuffix(good, "\n")), status: 200, accepted: 2, put: 2},
		{name: "partly bad", body: []byte(lines("a") + "{nope\n" + lines("b") + `{"table":"tbl","op":"read"}` + "\n"), status: 200, accepted: 2, rejected: 2, put: 2,
			errors: []string{"line 2: bad_json: expected a member name", "line 4: missing_pk: no partition key"}},
		{name: "all bad", body: []byte("x\ny\n"), status: 400, rejected: 2, errors: []string{"line 1: bad_json: not a JSON object", "line 2: bad_json: not a JSON object"}},
		{name: "empty", body: nil, status: 400},
		{name: "blank lines only", body: []byte("\n\n  \n"), status: 400},
		{name: "GET", method: http.MethodGet, status: 405},
		{name: "form post", body: []byte(good), header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: 415},
		{name: "text/plain", body: []byte(good), header: map[string]string{"Content-Type": "text/plain; charset=utf-8"}, status: 200, accepted: 2, put: 2},
		{name: "no content type", body: []byte(good), header: map[string]string{"Content-Type": ""}, status: 200, accepted: 2, put: 2},
		{name: "too large", body: bytes.Repeat([]byte(lines("x")), 100), status: 413},
		{name: "too large, chunked", body: bytes.Repeat([]byte(lines("x")), 100), header: map[string]string{"Content-Length": "-1"}, status: 413},
		{name: "gzip", body: gz.Bytes(), header: map[string]string{"Content-Encoding": "gzip"}, status: 200, accepted: 2, put: 2},
		{name: "gzip bomb", body: bomb.Bytes(), header: map[string]string{"Content-Encoding": "gzip"}, status: 413},
		{name: "not gzip", body: []byte(good), header: map[string]string{"Content-Encoding": "gzip"}, status: 400},
		{name: "brotli", body: []byte(good), header: map[string]string{"Content-Encoding": "br"}, status: 415},
		// curl sends a Content-Length; the byte order mark is left out of
		// what is read, so the body is shorter than it.
		{name: "byte order mark", body: append([]byte("\ufeff"), good...), status: 200, accepted: 2, put: 2},
		{name: "byte order mark, gzip", body: gzipped(t, "\ufeff"+good), header: map[string]string{"Content-Encoding": "gzip"}, status: 200, accepted: 2, put: 2},
		// Content codings are case-insensitive.
		{name: "GZIP", body: gz.Bytes(), header: map[string]string{"Content-Encoding": "GZIP"}, status: 200, accepted: 2, put: 2},
		{name: "X-Gzip", body: gz.Bytes(), header: map[string]string{"Content-Encoding": " X-Gzip"}, status: 200, accepted: 2, put: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sink := &collector{}
			rec := &recorder{}
			h := NewHandler(sink, rec, HandlerConfig{MaxBodyBytes: 1024, Options: Options{Now: fixedNow}}, nil)
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, "/api/v1/events", bytes.NewReader(c.body))
			req.Header.Set("Content-Type", "application/x-ndjson")
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			if c.header["Content-Length"] == "-1" {
				req.ContentLength = -1
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			var resp Response
			if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
				t.Fatalf("response %q is not JSON: %v", w.Body.String(), err)
			}
			if w.Code != c.status {
				t.Errorf("status %d (%s), want %d", w.Code, w.Body.String(), c.status)
			}
			if resp.Accepted != c.accepted || resp.Rejected != c.rejected {
				t.Errorf("accepted %d rejected %d, want %d %d", resp.Accepted, resp.Rejected, c.accepted, c.rejected)
			}
			if strings.Join(resp.Errors, "|") != strings.Join(c.errors, "|") {
				t.Errorf("errors %q, want %q", resp.Errors, c.errors)
			}
			if c.status >= 400 && c.status != 400 && resp.Error == "" {
				t.Errorf("refusal %d without an error message", c.status)
			}
			if sink.len() != c.put {
				t.Errorf("%d events put, want %d", sink.len(), c.put)
			}
			for _, e := range sink.snapshot() {
				if e.Source != HTTPSourceName {
					t.Errorf("event source %q", e.Source)
				}
			}
			if got := int64(len(rec.reasons())); got != c.rejected {
				t.Errorf("%d rejections reported, want %d", got, c.rejected)
			}
			if c.status == 405 && w.Header().Get("Allow") != "POST" {
				t.Errorf("405 without Allow: POST")
			}
		})
	}
}

func TestHandlerRateLimit(t *testing.T) {
	sink := &collector{}
	h := NewHandler(sink, nil, HandlerConfig{RequestsPerSecond: 0.001, Burst: 1}, nil)
	w, _ := post(t, h, strings.NewReader(lines("a")), nil)
	if w.Code != 200 {
		t.Fatalf("first request: %d", w.Code)
	}
	w, resp := post(t, h, strings.NewReader(lines("b")), nil)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || resp.Error == "" {
		t.Errorf("second request: %d, Retry-After %q, error %q; want 429 with both", w.Code, w.Header().Get("Retry-After"), resp.Error)
	}
	if sink.len() != 1 {
		t.Errorf("%d events put, want the first request's 1", sink.len())
	}
}

func TestHandlerSinkStopping(t *testing.T) {
	stopped := traffic.SinkFunc(func(context.Context, []traffic.Event) error { return errors.New("pipeline stopping") })
	h := NewHandler(stopped, nil, HandlerConfig{}, nil)
	w, resp := post(t, h, strings.NewReader(lines("a")), nil)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(resp.Error, "pipeline stopping") {
		t.Errorf("status %d error %q, want 503 naming the cause", w.Code, resp.Error)
	}
}

// TestHandlerOverHTTP goes through a real server and client.
func TestHandlerOverHTTP(t *testing.T) {
	sink := &collector{}
	srv := httptest.NewServer(NewHandler(sink, nil, HandlerConfig{}, nil))
	defer srv.Close()
	res, err := http.Post(srv.URL+"/api/v1/events", "application/x-ndjson", strings.NewReader(lines("a", "b", "c")))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"accepted":3,"counted":3,"untracked":0,"rejected":0}` {
		t.Errorf("%d %s", res.StatusCode, body)
	}
	if sink.len() != 3 {
		t.Errorf("%d events put, want 3", sink.len())
	}
}

func TestHandlerZstd(t *testing.T) {
	var body bytes.Buffer
	zw, err := zstd.NewWriter(&body)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write([]byte(lines("a", "b")))
	zw.Close()
	sink := &collector{}
	h := NewHandler(sink, nil, HandlerConfig{Options: Options{Now: fixedNow}}, nil)
	w, resp := post(t, h, &body, map[string]string{"Content-Encoding": "zstd"})
	if w.Code != 200 || resp.Accepted != 2 || sink.len() != 2 {
		t.Errorf("zstd body: status %d, %+v, %d events put", w.Code, resp, sink.len())
	}
	w, _ = post(t, h, strings.NewReader(lines("a")), map[string]string{"Content-Encoding": "zstd"})
	if w.Code != 400 {
		t.Errorf("plain body sent as zstd: status %d, want 400", w.Code)
	}
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestHandlerListsEveryReason puts the handler before the daemon's own
// checks (traffic.CheckedTimes): the answer counts and lists the lines
// those refuse as it does the reader's, one list in line order.
func TestHandlerListsEveryReason(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	ok := func(pk string) string {
		return `{"table":"tbl","pk":"` + pk + `","op":"read","ts":"2026-11-22T09:59:00Z"}`
	}
	future := func(pk string) string {
		return `{"table":"tbl","pk":"` + pk + `","op":"read","ts":"2100-01-01T00:00:00Z"}`
	}
	longKey := `{"table":"tbl","pk":"` + strings.Repeat("k", 60<<10) + `","op":"read","ts":"2026-11-22T09:59:00Z"}`
	for _, c := range []struct {
		name     string
		body     []string
		status   int
		accepted int64
		rejected int64
		errors   []string
	}{
		{"long key", []string{ok("a"), longKey}, 200, 1, 1, []string{"line 2: key_too_long: partition key of 61440 bytes"}},
		{"only far-future times", []string{future("a"), future("b")}, 400, 0, 2, []string{
			"line 1: bad_time: time 2100-01-01T00:00:00Z is 73 years in the future", "line 2: bad_time: time 2100-01-01T00:00:00Z is 73 years in the future"}},
		{"both checks, in line order", []string{ok("a"), future("b"), "{nope", ok("c"), longKey, "x", future("d"), "y"}, 200, 2, 6, []string{
			"line 2: bad_time", "line 3: bad_json", "line 5: key_too_long", "line 6: bad_json", "line 7: bad_time"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sink := &collector{}
			rec := &recorder{}
			lim := traffic.TimeLimits{MaxFuture: 5 * time.Minute, Now: func() time.Time { return now }}
			// A batch of two events: the refusals of several batches are
			// listed.
			h := NewHandler(traffic.CheckedTimes(sink, rec, lim), rec, HandlerConfig{Options: Options{Now: func() time.Time { return now }, BatchSize: 2}}, nil)
			w, resp := post(t, h, strings.NewReader(strings.Join(c.body, "\n")+"\n"), nil)
			if w.Code != c.status || resp.Accepted != c.accepted || resp.Rejected != c.rejected {
				t.Errorf("status %d accepted %d rejected %d, want %d %d %d", w.Code, resp.Accepted, resp.Rejected, c.status, c.accepted, c.rejected)
			}
			if len(resp.Errors) != len(c.errors) {
				t.Fatalf("errors %q, want %d beginning %q", resp.Errors, len(c.errors), c.errors)
			}
			for i, want := range c.errors {
				if !strings.HasPrefix(resp.Errors[i], want) {
					t.Errorf("error %d is %q, want it to begin %q", i, resp.Errors[i], want)
				}
			}
			if got := int64(len(rec.reasons())); got != c.rejected {
				t.Errorf("%d rejections reported, want %d", got, c.rejected)
			}
		})
	}
}
