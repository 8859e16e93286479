// Command membench measures the memory of the real daemon holding a given
// set of tables and keys in its window: it starts the hotkeyd binary with
// HTTP ingest, posts every key of every table (reads and writes), waits
// until all of it is counted and a few evaluations ran, then reads the
// process's resident memory (VmRSS, VmHWM) and the Go heap from /metrics,
// next to what the memory model predicts (sketch.Config.MemoryFor).
// scripts/bench-memory.sh runs it; the figures are in docs/limits.md.
//
//	membench -bin ./hotkeyd -profile large [-max-tables N] [-gomemlimit 460MiB] [-settle 3s] [-idle 30s]
//	membench -bin ./hotkeyd -profile scrape -gomemlimit 460MiB -scrapes 50 [-scrape-rounds 5]
//
// With -idle, it then leaves the daemon running with no traffic (its
// detector ticking, /metrics scraped every 5 s) for that long and reports
// the CPU the daemon used meanwhile and its resident memory at the end:
// what the garbage collector costs and keeps once the burst is over.
//
// Profiles: empty, ten, small, mixed, large, full, long (keys of 2 KiB),
// scrape (the most series /metrics serves by default).
//
// With -ingest http or -ingest file it measures the live path's speed
// instead: -events JSON lines over -tables tables, every key drawn at
// random from 5 million (key churn: nearly every access a key the
// sketches have not seen), are posted to the HTTP endpoint from two
// connections, or written to a file the daemon follows; it reports the
// events per second from the first byte until every event is counted, the
// CPU the daemon used meanwhile (cores, and events per CPU-second), and
// its peak resident memory.
//
//	membench -bin ./hotkeyd -ingest http [-events 4000000] [-tables 20] [-tsv]
//
// With -scrapes N, it then sends rounds of N scrapes of /metrics at once
// and reports how long they took and the peak resident memory meanwhile
// (scripts/bench-scrapes.sh).
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// group is n tables of keys partition keys each, of keyBytes bytes each
// (0: the short keys "KEY#000001").
type group struct{ tables, keys, keyBytes int }

// profiles are the accounts measured.
var profiles = map[string][]group{
	// 1 000 tables of 2 500 keys each: every table past the exact
	// candidates, in the sketch.
	"large": {{1000, 2500, 0}},
	// 1 000 tables of 200 keys each: every table counted exactly.
	"small": {{1000, 200, 0}},
	// 300 tables of 20 000 keys each: every table at its full sketch.
	"full": {{300, 20000, 0}},
	// A mixed account: most tables small, a few large.
	"mixed": {{200, 50, 0}, {80, 500, 0}, {20, 5000, 0}},
	// 300 tables of 400 keys of 2 KiB each, the longest string partition
	// key DynamoDB allows: key bytes, not counters, take the memory.
	"long": {{300, 400, 2048}},
	// 300 tables of 3 000 keys each: the most series /metrics serves with
	// the default max_tables and top (about 21 000), for -scrapes.
	"scrape": {{300, 3000, 0}},
	// No table: the process's base.
	"empty": {},
	// 10 tables of 200 keys each: a sidecar's few tables.
	"ten": {{10, 200, 0}},
}

func main() {
	bin := flag.String("bin", "./hotkeyd", "hotkeyd binary")
	profile := flag.String("profile", "large", "large, small, full, mixed, long, ten, scrape or empty")
	maxTables := flag.Int("max-tables", 0, "max_tables of the daemon's config (0: the default)")
	memLimit := flag.String("gomemlimit", "", "GOMEMLIMIT of the daemon (empty: none)")
	tsv := flag.Bool("tsv", false, "print one tab-separated line")
	idle := flag.Duration("idle", 0, "then run idle this long and report CPU and memory")
	scrapes := flag.Int("scrapes", 0, "then send this many GET /metrics at once, -scrape-rounds times, and report how long they took and the peak resident memory meanwhile")
	scrapeRoundsN := flag.Int("scrape-rounds", 5, "rounds of -scrapes")
	settle := flag.Duration("settle", 3*time.Second, "how long the daemon runs once its counts settled, before it is measured (past a minute: the live page's history holds a full window)")
	ingest := flag.String("ingest", "", "measure the live path's speed instead: http (the HTTP endpoint) or file (a followed file)")
	events := flag.Int("events", 4_000_000, "with -ingest: events to feed")
	tables := flag.Int("tables", 20, "with -ingest: tables the events spread over")
	flag.Parse()
	if *ingest != "" {
		if err := runIngest(*bin, *ingest, *events, *tables, *tsv); err != nil {
			fmt.Fprintf(os.Stderr, "membench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	groups, ok := profiles[*profile]
	if !ok {
		fmt.Fprintf(os.Stderr, "membench: unknown profile %q\n", *profile)
		os.Exit(2)
	}
	if err := run(*bin, *profile, groups, *maxTables, *memLimit, *tsv, *settle, *idle, *scrapes, *scrapeRoundsN); err != nil {
		fmt.Fprintf(os.Stderr, "membench: %v\n", err)
		os.Exit(1)
	}
}

func run(bin, profile string, groups []group, maxTables int, memLimit string, tsv bool, settle, idle time.Duration, scrapes, rounds int) error {
	dir, err := os.MkdirTemp("", "membench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := "window: 60s\n"
	if maxTables > 0 {
		cfg += fmt.Sprintf("max_tables: %d\n", maxTables)
	}
	// gctrace's lines give the live heap after each collection, the
	// figure the tables' memory is compared with.
	env := []string{"GODEBUG=gctrace=1"}
	if memLimit != "" {
		env = append(env, "GOMEMLIMIT="+memLimit)
	}
	d, err := startDaemon(bin, dir, cfg, env)
	if err != nil {
		return err
	}
	defer d.stop()
	url := d.url
	var live liveHeap
	go live.follow(d.stderr)

	start := time.Now()
	events, err := feed(url, groups)
	if err != nil {
		return err
	}
	fed := time.Since(start)
	if err := waitSettled(url); err != nil {
		return err
	}
	time.Sleep(settle) // a few evaluations: snapshots allocate too
	m, err := scrape(url)
	if err != nil {
		return err
	}
	rss, hwm, err := procMemory(d.pid)
	if err != nil {
		return err
	}
	c, model := memoryModel(groups, maxTables)
	tracked := m.sum("hotkeyd_tables_tracked")
	heap := m.sum("go_memstats_heap_inuse_bytes")
	liveMB := live.last()
	idleCPU, idleRSS, load, err := loads(url, d.pid, idle, scrapes, rounds)
	if err != nil {
		return err
	}
	if tsv {
		if scrapes > 0 {
			fmt.Printf("%s\t%d\t%s\t%.0f\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%d\t%d\n", profile, c.MaxTables, memLimit, tracked, events, rss, hwm,
				scrapes, load.quantile(0.5).Seconds(), load.quantile(0.99).Seconds(), load.quantile(1).Seconds(), load.failed, load.hwm)
			return nil
		}
		fmt.Printf("%s\t%d\t%s\t%.0f\t%d\t%d\t%d\t%.0f\t%d\t%d\t%.1f\t%.3f\t%d\n", profile, c.MaxTables, memLimit, tracked, events, rss, hwm, heap, liveMB<<20, model, fed.Seconds(), idleCPU, idleRSS)
		return nil
	}
	fmt.Printf("profile %s, max_tables %d, GOMEMLIMIT %q: %.0f tables tracked (%.0f evicted), %d events fed in %.1fs, %.0f of them not tracked\n",
		profile, c.MaxTables, memLimit, tracked, m.sum("hotkeyd_tables_evicted_total"), events, fed.Seconds(), m.sum("hotkeyd_untracked_events_total"))
	fmt.Printf("  RSS %.1f MiB (peak %.1f MiB), Go heap in use %.1f MiB, live heap after the last GC %d MiB; model (sketch.Config.MemoryFor) %.1f MiB\n",
		mib(rss), mib(hwm), heap/(1<<20), liveMB, mib(model))
	if scrapes > 0 {
		fmt.Printf("  %d × %d scrapes at once: median %s, p99 %s, slowest %s, %d failed; peak RSS while scraped %.1f MiB\n",
			rounds, scrapes, load.quantile(0.5).Round(time.Millisecond), load.quantile(0.99).Round(time.Millisecond), load.quantile(1).Round(time.Millisecond), load.failed, mib(load.hwm))
	}
	if idle > 0 {
		fmt.Printf("  idle %s: CPU %.1f %% of a core, RSS at the end %.1f MiB\n", idle, 100*idleCPU, mib(idleRSS))
	}
	return nil
}

// loads measures the daemon idle for idle (its CPU and RSS at the end)
// and under rounds of scrapes concurrent scrapes; each when asked for.
func loads(url string, pid int, idle time.Duration, scrapes, rounds int) (idleCPU float64, idleRSS int, load scrapeLoad, err error) {
	if idle > 0 {
		if idleCPU, idleRSS, err = idleRun(url, pid, idle); err != nil {
			return 0, 0, load, err
		}
	}
	if scrapes > 0 {
		if load, err = scrapeRounds(url, pid, scrapes, rounds); err != nil {
			return 0, 0, load, err
		}
	}
	return idleCPU, idleRSS, load, nil
}

// waitSettled waits, at most two minutes, for the daemon's counts to
// settle. Every POST is answered once its events are counted; the series
// of a table evicted on the way are gone, so it waits for the counts to
// stop moving rather than for a sum.
func waitSettled(url string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for last := -1.0; ; {
		m, err := scrape(url)
		if err != nil {
			return err
		}
		counted := m.sum("hotkeyd_events_total") + m.sum("hotkeyd_untracked_events_total")
		if counted == last {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("counts did not settle in time")
		}
		last = counted
		time.Sleep(500 * time.Millisecond)
	}
}

// memoryModel is the daemon's sketches, as its config builds them, and the
// memory they take for the groups' tables (sketch.Config.MemoryFor).
func memoryModel(groups []group, maxTables int) (sketch.Config, int) {
	daemon := config.Default()
	if maxTables > 0 {
		daemon.MaxTables = maxTables
	}
	c := daemon.Pipeline().Sketch
	var keys []sketch.TableKeys
	for _, g := range groups {
		for range g.tables {
			keys = append(keys, sketch.TableKeys{Keys: g.keys, KeyBytes: max(g.keyBytes, len("KEY#000001"))})
		}
	}
	return c, c.MemoryFor(keys)
}

// liveHeap keeps the live heap of the last collection gctrace reported
// ("gc 12 @1.2s 3%: ... 450->460->230 MB, ...": 230).
type liveHeap struct {
	mu sync.Mutex
	mb int
}

var gcRE = regexp.MustCompile(`\d+->\d+->(\d+) MB`)

func (l *liveHeap) follow(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if m := gcRE.FindStringSubmatch(sc.Text()); m != nil {
			n, _ := strconv.Atoi(m[1])
			l.mu.Lock()
			l.mb = n
			l.mu.Unlock()
		}
	}
}

func (l *liveHeap) last() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mb
}

func mib(n int) float64 { return float64(n) / (1 << 20) }

var addrRE = regexp.MustCompile(`hotkeyd started.*?address=(\S+)`)

// daemon is a hotkeyd run process started by startDaemon.
type daemon struct {
	cmd    *exec.Cmd
	url    string // its base URL
	pid    int
	stderr io.Reader // its log past the line with its address; read it to the end
}

// startDaemon writes cfg to dir and starts bin run on it with HTTP ingest
// unlimited, on a free port, env added to this process's environment; it
// returns once the daemon has logged its address.
func startDaemon(bin, dir, cfg string, env []string) (*daemon, error) {
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "run", "--config.file", cfgPath, "--web.listen-address=127.0.0.1:0",
		"--web.enable-ingest", "--web.ingest.rate-limit=0", "--history.path", filepath.Join(dir, "history"))
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemon{cmd: cmd, pid: cmd.Process.Pid, stderr: stderr}
	if d.url, err = address(stderr); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

// stop ends the daemon as a service manager would, and waits for it.
func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()
}

// address reads the log until the "hotkeyd started" line and returns the
// base URL it names.
func address(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
			return "http://" + m[1], nil
		}
	}
	return "", errors.New("hotkeyd exited before it listened")
}

// feed posts every key of every table once as a read and once as a write,
// in bodies of at most 3 MiB, from two connections, and returns the
// number of events.
func feed(url string, groups []group) (int, error) {
	bodies := make(chan []byte, 4)
	var events int
	go func() {
		defer close(bodies)
		var b bytes.Buffer
		t := 0
		for _, g := range groups {
			for range g.tables {
				for k := range g.keys {
					key := fmt.Sprintf("KEY#%06d", k)
					if g.keyBytes > len(key) {
						key += strings.Repeat("x", g.keyBytes-len(key))
					}
					for _, op := range []string{"GetItem", "PutItem"} {
						fmt.Fprintf(&b, `{"table":"table-%04d","pk":%q,"op":%q}`+"\n", t, key, op)
						events++
						if b.Len() > 3<<20 {
							bodies <- bytes.Clone(b.Bytes())
							b.Reset()
						}
					}
				}
				t++
			}
		}
		if b.Len() > 0 {
			bodies <- b.Bytes()
		}
	}()
	err := post(url, bodies)
	return events, err
}

// metrics is a scraped /metrics page: series as exposed, and values.
type metrics map[string]float64

func (m metrics) sum(name string) float64 {
	var s float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			s += v
		}
	}
	return s
}

func scrape(url string) (metrics, error) {
	// Patient: on a busy machine a scrape of many tables by an older build
	// took over 10 s (Prometheus's default timeout), and the run is to measure
	// it, not to fail.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

// idleRun lets the daemon run for d with no traffic, scraping /metrics
// every 5 s as Prometheus would, and returns the CPU it used (seconds per
// second) and its resident memory at the end.
func idleRun(url string, pid int, d time.Duration) (cpu float64, rss int, err error) {
	before, err := procCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for time.Since(start) < d {
		time.Sleep(min(5*time.Second, d-time.Since(start)))
		if _, err := scrape(url); err != nil {
			return 0, 0, err
		}
	}
	after, err := procCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	rss, _, err = procMemory(pid)
	return (after - before) / time.Since(start).Seconds(), rss, err
}

// procCPU returns the CPU seconds process pid used so far (user and
// system, /proc/pid/stat fields 14 and 15, in clock ticks of 1/100 s).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("read /proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	s, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	return (u + s) / 100, nil
}

// procMemory returns the process's resident memory and its peak, in bytes.
func procMemory(pid int) (rss, hwm int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "VmRSS:":
			rss = n << 10
		case "VmHWM:":
			hwm = n << 10
		}
	}
	return rss, hwm, nil
}
