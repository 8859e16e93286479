package export

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// gate is a collector whose Collect waits until the test opens it, and
// counts its calls: a gathering in flight that the test holds.
type gate struct {
	desc  *prometheus.Desc
	open  chan struct{}
	calls atomic.Int32
}

func newGate() *gate {
	return &gate{desc: prometheus.NewDesc("test_gate", "A gathering the test holds.", nil, nil), open: make(chan struct{})}
}

func (g *gate) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *gate) Collect(ch chan<- prometheus.Metric) {
	g.calls.Add(1)
	<-g.open
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, 1)
}

// scrapeAll sends n GET /metrics at once with header, and returns their
// statuses and bodies (decompressed) once all are answered.
func scrapeAll(t *testing.T, url string, n int, header func(i int) http.Header) ([]int, []string) {
	t.Helper()
	codes, bodies := make([]int, n), make([]string, n)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true, MaxConnsPerHost: n}}
	defer client.CloseIdleConnections()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", url+"/metrics", nil)
			for k, v := range header(i) {
				req.Header[k] = v
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("scrape %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			var r io.Reader = resp.Body
			if resp.Header.Get("Content-Encoding") == "gzip" {
				if r, err = gzip.NewReader(resp.Body); err != nil {
					t.Errorf("scrape %d: %v", i, err)
					return
				}
			}
			b, err := io.ReadAll(r)
			if err != nil {
				t.Errorf("scrape %d: %v", i, err)
			}
			codes[i], bodies[i] = resp.StatusCode, string(b)
		}()
	}
	wg.Wait()
	return codes, bodies
}

// waitScrapes waits until n scrapes wait for answers being made.
func waitScrapes(t *testing.T, ts *testServer, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ts.scrapes.waiting() != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d scrapes wait for an answer, want %d", ts.scrapes.waiting(), n)
		}
	}
}

// TestScrapesShareOneGathering holds the registry's gathering while 50
// scrapes arrive, then lets it go: the registry was gathered once for
// all of them, and each got the whole answer.
func TestScrapesShareOneGathering(t *testing.T) {
	const n = 50
	g := newGate()
	gathered := prometheus.NewRegistry()
	gathered.MustRegister(g)
	ts := startServer(t, ServerConfig{Gatherer: gathered}, "")

	done := make(chan struct{})
	var codes []int
	var bodies []string
	go func() {
		defer close(done)
		codes, bodies = scrapeAll(t, ts.url, n, func(int) http.Header { return http.Header{"Accept-Encoding": {"gzip"}} })
	}()
	waitScrapes(t, ts, n)
	close(g.open)
	<-done

	if calls := g.calls.Load(); calls != 1 {
		t.Errorf("%d scrapes at once gathered the registry %d times, want once", n, calls)
	}
	for i := range n {
		if codes[i] != http.StatusOK || !strings.Contains(bodies[i], "test_gate 1") {
			t.Errorf("scrape %d: %d %q", i, codes[i], bodies[i])
		}
	}
}

// TestScrapesOfDifferentKinds: scrapes asking for different formats and
// compressions at once share the gathering, and each gets its own kind of
// answer; a scrape that leaves early does not spoil the others'.
func TestScrapesOfDifferentKinds(t *testing.T) {
	const n = 8
	g := newGate()
	gathered := prometheus.NewRegistry()
	gathered.MustRegister(g)
	ts := startServer(t, ServerConfig{Gatherer: gathered}, "")

	headers := func(i int) http.Header {
		h := http.Header{}
		if i%2 == 1 {
			h.Set("Accept", "application/openmetrics-text;version=1.0.0")
		}
		if i%4 >= 2 {
			h.Set("Accept-Encoding", "gzip")
		}
		return h
	}
	// One scrape, of the kind of some below, starts the gathering and
	// gives up while it is held.
	ctx, leave := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.url+"/metrics", nil)
		req.Header = headers(2)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		left <- err
	}()
	waitScrapes(t, ts, 1)
	done := make(chan struct{})
	var codes []int
	var bodies []string
	go func() {
		defer close(done)
		codes, bodies = scrapeAll(t, ts.url, n, headers)
	}()
	waitScrapes(t, ts, n+1)
	leave()
	if err := <-left; err == nil {
		t.Fatal("the scrape that left got an answer")
	}
	close(g.open)
	<-done

	if calls := g.calls.Load(); calls != 1 {
		t.Errorf("the registry was gathered %d times, want once", calls)
	}
	for i := range n {
		openMetrics := strings.HasSuffix(bodies[i], "# EOF\n")
		if codes[i] != http.StatusOK || !strings.Contains(bodies[i], "test_gate 1") || openMetrics != (i%2 == 1) {
			t.Errorf("scrape %d (%v): %d %q", i, headers(i), codes[i], bodies[i])
		}
	}
}

// TestScrapeAnswersBounded: past maxScrapeAnswers different answers in
// the making, a scrape of yet another kind is told to retry.
func TestScrapeAnswersBounded(t *testing.T) {
	g := newGate()
	gathered := prometheus.NewRegistry()
	gathered.MustRegister(g)
	ts := startServer(t, ServerConfig{Gatherer: gathered}, "")

	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for i := range maxScrapeAnswers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := http.Get(ts.url + "/metrics?name[]=m" + strings.Repeat("x", i))
				if err == nil {
					resp.Body.Close()
				}
			}()
		}
		wg.Wait()
	}()
	waitScrapes(t, ts, maxScrapeAnswers)
	code, hdr, _ := ts.do(t, "GET", "/metrics?name[]=another", "", nil)
	close(g.open)
	<-done
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("a scrape past %d answers in the making: %d (Retry-After %q), want 503 with Retry-After", maxScrapeAnswers, code, hdr.Get("Retry-After"))
	}
}

func TestAcceptsGzip(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"deflate, gzip;q=1.0, *;q=0.5"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.0, *"}, false},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"identity"}, false},
		{[]string{"br", "x-gzip"}, true},
		{[]string{"zstd, gzip;q=bad"}, false},
	} {
		if got := acceptsGzip(c.values); got != c.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", c.values, got, c.want)
		}
	}
}

// heldWriter is a ResponseWriter whose Write waits until the test
// releases it, then keeps what it was given: a slow client's answer.
type heldWriter struct {
	h        http.Header
	entered  chan struct{}
	release  chan struct{}
	received []byte
}

func (w *heldWriter) Header() http.Header { return w.h }
func (w *heldWriter) WriteHeader(int)     {}
func (w *heldWriter) Write(p []byte) (int, error) {
	close(w.entered)
	<-w.release
	w.received = append(w.received, p...)
	return len(p), nil
}

// TestScrapeAnswersReuseTheirBuffer: an answer is made into the body of
// the last answer whose scrapes were all written, so that a scrape of
// idle tables allocates far less than its answer; an answer a slow
// client is still being written is never written over.
func TestScrapeAnswersReuseTheirBuffer(t *testing.T) {
	live := scrapeState()
	s := newScrapes(nopLogger(), NewExposition(prometheus.NewRegistry(), NewCollector(live, CollectorConfig{})), prometheus.NewRegistry())
	get := func(w http.ResponseWriter) {
		s.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	}
	body := func() string {
		rec := httptest.NewRecorder()
		get(rec)
		return rec.Body.String()
	}
	first := body()
	if len(first) < 1<<20 {
		t.Fatalf("answer of %d bytes, want a large one", len(first))
	}
	get(&discard{h: http.Header{}})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	get(&discard{h: http.Header{}})
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(len(first))/4 {
		t.Errorf("an idle scrape allocated %d bytes for an answer of %d", n, len(first))
	}

	held := &heldWriter{h: http.Header{}, entered: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		get(held)
	}()
	<-held.entered
	// Other answers are made and written meanwhile, of another report.
	rep := live.Load().Report
	rep.Tables = rep.Tables[:10]
	live.Update(rep)
	second := body()
	if again := body(); again != second || second == first {
		t.Errorf("answers of the second report: %d and %d bytes, the first's %d", len(second), len(again), len(first))
	}
	close(held.release)
	<-done
	if got := string(held.received); got != first {
		t.Errorf("the slow client's answer was written over: %d bytes, want the %d of the first", len(got), len(first))
	}
}
