// Command soak runs the daemon for a long while under the load of a
// busy account and checks that it stays flat and loses nothing: HTTP
// ingest of about 100 000 events a second with keys that churn, a DynamoDB
// Local table whose stream carries a key that turns hot and cools down
// again, a reload of the configuration every five minutes (in place, and
// every other one restarting the sources) and a scrape every second. It
// prints, every minute, the daemon's resident memory, Go heap,
// goroutines, open files and counts, and at the end checks that
//
//   - every event sent was counted, or refused with a reason (by the
//     answers, and by the daemon's counters);
//   - every write to the table was counted from its stream;
//   - the hot key was raised in each of its hot phases;
//   - every reload and every scrape was answered;
//   - after the warm-up, resident memory stayed within 10 % and the
//     goroutines and open files within the load's own connections.
//
// scripts/soak.sh runs it; the figures are in docs/limits.md.
//
//	soak [-duration 30m] [-rate 100000] [-reload-every 5m] [-warmup 5m]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// window is the daemon's window in the soak.
const window = time.Minute

// minPhase is the shortest hot phase judged: a phase cut short by the end
// of the load need not have been raised.
const minPhase = 10 * time.Second

// options are the soak's flags.
type options struct {
	duration, warmup, reloadEvery time.Duration
	hotOn, hotOff                 time.Duration
	rate                          float64
	batch, tables, keys           int
	background, hot               float64
	memLimit                      string
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 30*time.Minute, "how long the load runs")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Minute, "the start left out of the flatness checks")
	flag.DurationVar(&o.reloadEvery, "reload-every", 5*time.Minute, "time between two reloads")
	flag.DurationVar(&o.hotOn, "hot-on", 2*time.Minute, "how long the hot key stays hot")
	flag.DurationVar(&o.hotOff, "hot-off", 3*time.Minute, "how long it stays cool between")
	flag.Float64Var(&o.rate, "rate", 100_000, "HTTP ingest events per second")
	flag.IntVar(&o.batch, "batch", 5000, "events per HTTP ingest request")
	flag.IntVar(&o.tables, "tables", 10, "tables of the HTTP ingest")
	flag.IntVar(&o.keys, "keys", 20_000, "keys a minute draws from, per table (a new set every minute)")
	flag.Float64Var(&o.background, "stream-rate", 20, "background writes per second to the table with a stream")
	flag.Float64Var(&o.hot, "hot-rate", 30, "writes per second to the hot key while it is hot")
	flag.StringVar(&o.memLimit, "gomemlimit", "460MiB", "GOMEMLIMIT of the daemon, as shipped (empty: none)")
	flag.Parse()
	if o.hotOff <= window {
		// A key hot again before its last hot phase left the window is
		// still raised: no new raise to find.
		fmt.Fprintf(os.Stderr, "soak: -hot-off %v must be longer than the window (%v), so that the hot key cools down between its phases\n", o.hotOff, window)
		os.Exit(2)
	}
	t := &soakTB{}
	ok := run(t, o)
	t.finish() // stops the daemon (SIGTERM, checked) and the emulator
	if !ok || t.Failed() {
		fmt.Println("\nsoak: FAILED")
		os.Exit(1)
	}
	fmt.Println("\nsoak: passed")
}

// sample is the daemon as one scrape saw it.
type sample struct {
	at                       time.Duration // since the load began
	rss, heap                float64
	goroutines, fds          float64
	httpEvents, streamEvents float64
	maxScrape                time.Duration // the slowest scrape of the minute
}

func run(t *soakTB, o options) bool {
	ddb := testenv.DynamoDBLocal(t)
	ctx := context.Background()
	if err := createTable(ctx, ddb.DB); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "soak")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	writeConfig := func(n int) { writeSoakConfig(t, cfgPath, dir, ddb.Endpoint, n) }
	writeConfig(0)
	env := []string{"AWS_ACCESS_KEY_ID=hotkeyd", "AWS_SECRET_ACCESS_KEY=hotkeyd", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"}
	if o.memLimit != "" {
		env = append(env, "GOMEMLIMIT="+o.memLimit)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{Env: env}, "run", "--config.file", cfgPath, "--web.enable-ingest", "--web.enable-lifecycle")
	fmt.Printf("soak: %s of %g events/s over HTTP (%d tables, keys churning every minute), a stream with a hot key %s on / %s off, a reload every %s, a scrape every second; daemon at %s\n",
		o.duration, o.rate, o.tables, o.hotOn, o.hotOff, o.reloadEvery, h.URL)

	load := newIngest(h.URL, o.rate, o.batch, o.tables, o.keys)
	w := &writes{db: ddb.DB, background: o.background, hot: o.hot, keys: 100, on: o.hotOn, off: o.hotOff}
	lctx, stop := context.WithTimeout(ctx, o.duration)
	defer stop()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { load.run(lctx) })
	wg.Go(func() { w.run(lctx) })
	var reloads []string
	wg.Go(func() { reloads = reloadEvery(lctx, t, h.URL, o.reloadEvery, start, writeConfig) })
	samples, scrapes, failedScrapes := sampleEveryMinute(lctx, t, h.URL, start)
	wg.Wait()
	elapsed := time.Since(start)
	m := settle(t, h.URL, w)
	return report(t, o, h, load, w, m, samples, reloads, scrapes, failedScrapes, elapsed)
}

// writeSoakConfig writes the n-th configuration: the threshold and the
// stream's polling change from one to the next, so that each reload
// applies something.
func writeSoakConfig(t *soakTB, path, dir, endpoint string, n int) {
	threshold, poll := 0.10, "200ms"
	if n%2 == 1 {
		threshold = 0.12
	}
	if n%4 >= 2 {
		poll = "250ms"
	}
	cfg := fmt.Sprintf("window: %gs\nthreshold: %g\nsources:\n  - type: dynamodb-streams\n    tables: [%s]\n    region: us-east-1\n    endpoint: %s\n    start: trim_horizon\n    checkpoint_dir: %s\n    poll_interval: %s\n",
		window.Seconds(), threshold, streamTable, endpoint, filepath.Join(dir, "checkpoints"), poll)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// reloadEvery writes a new configuration and POSTs /-/reload every
// interval until ctx ends, and returns each reload's answer.
func reloadEvery(ctx context.Context, t *soakTB, url string, every time.Duration, start time.Time, writeConfig func(int)) []string {
	var reloads []string
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return reloads
		case <-time.After(every):
		}
		writeConfig(n)
		code, answer := post(url + "/-/reload")
		reloads = append(reloads, fmt.Sprintf("%s: %d %s", time.Since(start).Round(time.Second), code, strings.ReplaceAll(answer, "\n", " ")))
		if code != http.StatusOK {
			t.Errorf("reload %d: %d %s", n, code, answer)
		}
	}
}

// sampleEveryMinute scrapes the daemon once a second until ctx ends and
// keeps a sample every minute, printed as a table row; it returns the
// samples, the scrapes made and those that failed.
func sampleEveryMinute(ctx context.Context, t *soakTB, url string, start time.Time) (samples []sample, scrapes, failed int) {
	var slowest time.Duration
	fmt.Println()
	fmt.Println("| minute | RSS MiB | Go heap MiB | goroutines | open files | HTTP events counted | stream events counted | slowest scrape |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	nextSample := start.Add(time.Minute)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
		}
		began := time.Now()
		m, err := scrape(url)
		took := time.Since(began)
		scrapes++
		slowest = max(slowest, took)
		if err != nil {
			failed++
			if failed <= 3 {
				t.Errorf("scrape: %v", err)
			}
			continue
		}
		if time.Now().Before(nextSample) && !done {
			continue
		}
		nextSample = nextSample.Add(time.Minute)
		s := sample{at: time.Since(start), rss: m.sum("process_resident_memory_bytes", ""), heap: m.sum("go_memstats_heap_inuse_bytes", ""),
			goroutines: m.sum("go_goroutines", ""), fds: m.sum("process_open_fds", ""),
			httpEvents: m.sum("hotkeyd_events_total", `source="http"`), streamEvents: m.sum("hotkeyd_events_total", `source="dynamodb-streams"`),
			maxScrape: slowest}
		slowest = 0
		samples = append(samples, s)
		fmt.Printf("| %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s |\n", s.at.Minutes(), s.rss/(1<<20), s.heap/(1<<20), s.goroutines, s.fds, s.httpEvents, s.streamEvents, s.maxScrape.Round(time.Millisecond))
	}
	return samples, scrapes, failed
}

// settle lets the stream reader catch up and the counts settle (at most
// two minutes) and returns the last scrape.
func settle(t *soakTB, url string, w *writes) metrics {
	var m metrics
	var err error
	for deadline, last := time.Now().Add(2*time.Minute), -1.0; ; time.Sleep(2 * time.Second) {
		if m, err = scrape(url); err != nil {
			t.Fatalf("scrape: %v", err)
		}
		counted := m.sum("hotkeyd_events_total", "")
		if counted == last && m.sum("hotkeyd_events_total", `source="dynamodb-streams"`) >= float64(w.written.Load()) || time.Now().After(deadline) {
			return m
		}
		last = counted
	}
}

// report prints the checks and returns whether all passed.
func report(t *soakTB, o options, h *testenv.Hotkeyd, load *ingest, w *writes, m metrics, samples []sample, reloads []string, scrapes, failedScrapes int, elapsed time.Duration) bool {
	ok := true
	check := func(pass bool, format string, args ...any) {
		mark := "ok  "
		if !pass {
			mark, ok = "FAIL", false
		}
		fmt.Printf("%s %s\n", mark, fmt.Sprintf(format, args...))
	}
	fmt.Println()
	load.mu.Lock()
	defer load.mu.Unlock()

	sent, counted, untracked, rejected, refused, lost := load.sent.Load(), load.counted.Load(), load.untracked.Load(), load.rejected.Load(), load.refused.Load(), load.lost.Load()
	check(sent == counted+untracked+rejected+refused && lost == 0,
		"HTTP ingest: %d events sent in %s (%.0f/s): %d counted, %d untracked, %d rejected, %d in requests refused, %d without an answer; statuses %v; reasons %v; answers took %s on average, %s at most; %v",
		sent, elapsed.Round(time.Second), float64(sent)/elapsed.Seconds(), counted, untracked, rejected, refused, lost, load.statuses, load.reasons,
		(load.sumAnswers / time.Duration(max(load.answers, 1))).Round(time.Millisecond), load.maxAnswer.Round(time.Millisecond), load.failures)
	dc, du, dr := m.sum("hotkeyd_events_total", `source="http"`), m.sum("hotkeyd_untracked_events_total", `source="http"`), m.sum("hotkeyd_input_rejected_total", `source="http"`)
	check(dc == float64(counted) && du == float64(untracked) && dr == float64(rejected),
		"the daemon's counters agree: hotkeyd_events_total %0.f, hotkeyd_untracked_events_total %.0f, hotkeyd_input_rejected_total %.0f (source http)", dc, du, dr)

	written, failed := w.written.Load(), w.failed.Load()
	sc := m.sum("hotkeyd_events_total", `source="dynamodb-streams"`)
	check(sc >= float64(written) && sc <= float64(written+failed),
		"stream: %d writes (%d failed: %s), %.0f events counted from the stream (%+.0f)", written, failed, w.firstErr, sc, sc-float64(written))

	w.mu.Lock()
	phases := slices.Clone(w.phases)
	w.mu.Unlock()
	raised := raises(h.Stderr())
	missed, judged := 0, 0
	for i, p := range phases {
		hit := slices.ContainsFunc(raised, func(at time.Time) bool { return !at.Before(p.start) && !at.After(p.end.Add(5*time.Second)) })
		line := fmt.Sprintf("     hot phase %d: %s to %s, raised: %v", i+1, p.start.Format(time.TimeOnly), p.end.Format(time.TimeOnly), hit)
		switch {
		case p.end.Sub(p.start) < minPhase:
			line += fmt.Sprintf(" (cut short by the end of the load: not judged, under %v)", minPhase)
		case !hit:
			judged++
			missed++
		default:
			judged++
		}
		fmt.Println(line)
	}
	check(judged > 0 && missed == 0, "the hot key was raised in %d of %d hot phases judged (%d raise lines in all)", judged-missed, judged, len(raised))

	reloadsOK := !slices.ContainsFunc(reloads, func(r string) bool { return !strings.Contains(r, ": 200 ") })
	check(reloadsOK && len(reloads) >= int(o.duration/o.reloadEvery)-1, "%d reloads, all answered 200", len(reloads))
	for _, r := range reloads {
		fmt.Printf("     %s\n", r)
	}
	check(failedScrapes == 0, "%d scrapes, %d failed", scrapes, failedScrapes)

	var after []sample
	for _, s := range samples {
		if s.at >= o.warmup {
			after = append(after, s)
		}
	}
	if len(after) < 2 {
		fmt.Printf("     (too short for the flatness checks: %d samples after the %s warm-up)\n", len(after), o.warmup)
		return ok
	}
	lo, hi := spread(after, func(s sample) float64 { return s.rss })
	check(hi <= lo*1.10, "resident memory after the warm-up: %.0f to %.0f MiB (%+.1f %%)", lo/(1<<20), hi/(1<<20), 100*(hi-lo)/lo)
	glo, ghi := spread(after, func(s sample) float64 { return s.goroutines })
	flo, fhi := spread(after, func(s sample) float64 { return s.fds })
	// The load's own connections come and go: 4 ingest clients and a
	// scraper, each a descriptor and two goroutines on the daemon's side.
	check(ghi-glo <= 2*connections && fhi-flo <= connections, "goroutines after the warm-up: %.0f to %.0f; open files: %.0f to %.0f (the load's %d connections come and go)", glo, ghi, flo, fhi, connections)
	return ok
}

// connections is how many connections the soak holds to the daemon at
// most: the ingest clients, the scraper, a reload.
const connections = 8

func spread(ss []sample, v func(sample) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		lo, hi = min(lo, v(s)), max(hi, v(s))
	}
	return lo, hi
}

// raiseRE finds the detector's lines raising the hot key.
var raiseRE = regexp.MustCompile(`(?m)^ts=(\S+) level=\S+ caller=\S+ msg="(hot key|key near the partition limit)" table=` + streamTable + ` class=write key=` + hotKey + ` `)

// raises returns when the hot key was raised, from the daemon's log.
func raises(log string) []time.Time {
	var out []time.Time
	for _, m := range raiseRE.FindAllStringSubmatch(log, -1) {
		if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
			out = append(out, at)
		}
	}
	return out
}

// post POSTs to url and returns the status and answer.
func post(url string) (int, string) {
	resp, err := (&http.Client{Timeout: time.Minute}).Post(url, "", nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// metrics is a scraped /metrics page: series as exposed, and values.
type metrics map[string]float64

// sum adds the series of name whose labels hold label (all when empty).
func (m metrics) sum(name, label string) float64 {
	var s float64
	for k, v := range m {
		if (k == name || strings.HasPrefix(k, name+"{")) && strings.Contains(k, label) {
			s += v
		}
	}
	return s
}

// scrape GETs /metrics as Prometheus does (text format; gzip is taken by
// the client).
func scrape(url string) (metrics, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}
