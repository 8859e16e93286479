package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// fedDaemon is a daemon fed JSON lines one way: POSTed to the ingest
// endpoint, or appended to a log its jsonl source follows.
type fedDaemon struct {
	*testenv.Hotkeyd
	source string // the source label of what is fed
	feed   func(t *testing.T, lines []string)
}

// feeders are the two ways lines reach a running daemon.
var feeders = []struct {
	name  string
	start func(t *testing.T, extraConfig string) *fedDaemon
}{
	{"http", startHTTPFed},
	{"file", startFileFed},
}

// fedConfig is the config of the daemons of these tests: a window long
// enough for a slow machine, and findings flagged at their first
// evaluation.
const fedConfig = "window: 30s\ndetector:\n  hold: 0s\n"

func startHTTPFed(t *testing.T, extra string) *fedDaemon {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfgPath, []byte(fedConfig+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "--config.file", cfgPath, "--web.enable-ingest", "--web.ingest.rate-limit=0")
	return &fedDaemon{Hotkeyd: h, source: "http", feed: func(t *testing.T, lines []string) {
		t.Helper()
		// Bodies of at most a few thousand lines, well under the 4 MiB limit.
		for len(lines) > 0 {
			n := min(len(lines), 5000)
			code, _, body := post(t, h, []byte(strings.Join(lines[:n], "\n")+"\n"), nil)
			if code != http.StatusOK && code != http.StatusBadRequest {
				t.Fatalf("POST: %d %s", code, body)
			}
			lines = lines[n:]
		}
	}}
}

func startFileFed(t *testing.T, extra string) *fedDaemon {
	t.Helper()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	if err := os.WriteFile(logPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	cfg := fedConfig + fmt.Sprintf("sources:\n  - type: jsonl\n    paths: [%q]\n", logPath) + extra
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "--config.file", cfgPath)
	h.WaitLog(t, `msg="following file"`, settle)
	return &fedDaemon{Hotkeyd: h, source: "jsonl", feed: func(t *testing.T, lines []string) {
		t.Helper()
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
			t.Fatal(err)
		}
	}}
}

// waitMetric waits until the series (as exposed, labels sorted) has the
// value want, and fails the test with the last value seen otherwise.
func waitMetric(t *testing.T, h *testenv.Hotkeyd, series string, want float64, timeout time.Duration) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		m := scrape(t, h)
		got, ok := m[series]
		if ok && (got == want || math.IsNaN(want)) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v (present %v), want %v", series, got, ok, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestUnitsNearTheFloatLimit feeds a running daemon accesses whose units
// no DynamoDB call can consume, next to ones at the largest a call can:
// the first are rejected as bad_units and counted, the others counted, and
// every total, the metrics and the API stay finite numbers.
func TestUnitsNearTheFloatLimit(t *testing.T) {
	for _, via := range feeders {
		t.Run(via.name, func(t *testing.T) {
			t.Parallel() // a process of its own, on a port of its own
			d := via.start(t, "")
			d.feed(t, []string{
				`{"table":"orders","pk":"USER#1","op":"PutItem","units":1.7e308}`,
				`{"table":"orders","pk":"USER#2","op":"PutItem","units":1.7e308}`,
				`{"table":"orders","pk":"USER#3","op":"GetItem","units":100.5}`,     // one item is 400 KB: 100 RCU
				`{"table":"orders","pk":"USER#4","op":"BatchGetItem","units":4197}`, // 16 MB and 100 items: 4 196 RCU
				`{"table":"orders","pk":"USER#5","op":"write","units":110001}`,      // 25 items with 5 LSIs: 110 000 WCU
				`{"table":"orders","pk":"USER#6","op":"PutItem","units":4400}`,      // one item with 5 LSIs
				`{"table":"orders","pk":"USER#7","op":"BatchWriteItem","units":110000}`,
				`{"table":"orders","pk":"USER#8","op":"BatchGetItem","units":4196}`,
			})
			rejected := fmt.Sprintf(`hotkeyd_input_rejected_total{reason="bad_units",source=%q}`, d.source)
			waitMetric(t, d.Hotkeyd, rejected, 5, 15*time.Second)
			m := waitMetric(t, d.Hotkeyd, fmt.Sprintf(`hotkeyd_events_total{class="write",source=%q,table="orders"}`, d.source), 2, 5*time.Second)
			if got := m[`hotkeyd_units_total{class="write",table="orders"}`]; got != 114400 {
				t.Errorf("write units = %v, want 114400", got)
			}
			if got := m[`hotkeyd_units_total{class="read",table="orders"}`]; got != 4196 {
				t.Errorf("read units = %v, want 4196", got)
			}
			for s, v := range m {
				if math.IsInf(v, 0) || math.IsNaN(v) {
					t.Errorf("%s = %v", s, v)
				}
			}
			// The API answers every table with a report JSON can hold.
			time.Sleep(1500 * time.Millisecond) // one evaluation after the last line
			for _, q := range []string{"", "?table=orders"} {
				code, body := d.Get(t, "/api/v1/hotkeys"+q)
				var rep report.Report
				if err := json.Unmarshal(body, &rep); code != http.StatusOK || err != nil || len(rep.Tables) != 1 {
					t.Errorf("/api/v1/hotkeys%s: %d %v %s", q, code, err, body)
				}
			}
			if !strings.Contains(d.Stderr(), "one call consumes at most 110000") {
				t.Errorf("the log does not say why units were rejected:\n%s", d.Stderr())
			}
		})
	}
}

// TestAnalyzeUnitsNearTheFloatLimit is the same input read whole: the
// report is JSON, the impossible lines are rejected.
func TestAnalyzeUnitsNearTheFloatLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.jsonl")
	lines := `{"table":"orders","pk":"USER#1","op":"PutItem","units":1.7e308}
{"table":"orders","pk":"USER#2","op":"PutItem","units":1.7e308}
{"table":"orders","pk":"USER#3","op":"PutItem","units":12}
`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runAnalyzeCmd(t, "", "analyze", "--format", "json", path)
	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("analyze: exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, errOut)
	}
	if rep.Rejected != 2 || len(rep.Tables) != 1 || rep.Tables[0].WriteUnits != 12 {
		t.Errorf("report: rejected %d, tables %+v; want 2 rejected and 12 write units", rep.Rejected, rep.Tables)
	}
}

// tableLabels returns the distinct table label values of a metric in a
// /metrics page.
func tableLabels(metrics []byte, name string) map[string]bool {
	re := regexp.MustCompile(`(?m)^` + name + `\{[^}]*table="([^"]*)"`)
	out := map[string]bool{}
	for _, m := range re.FindAllSubmatch(metrics, -1) {
		out[string(m[1])] = true
	}
	return out
}

// TestJunkTablesDoNotCrowdOutRealOnes feeds a running daemon thousands of
// junk table names, then a real table with a hot key: the real table is
// tracked and its key flagged, names DynamoDB would refuse are rejected as
// bad_table, the per-table series stay within the tables tracked, and
// what was dropped is counted and logged.
func TestJunkTablesDoNotCrowdOutRealOnes(t *testing.T) {
	maxTables := sketch.DefaultMaxTables
	for _, via := range feeders {
		t.Run(via.name, func(t *testing.T) {
			t.Parallel() // a process of its own, on a port of its own
			d := via.start(t, "")
			junk := 4 * maxTables
			var lines []string
			for i := range junk {
				lines = append(lines, fmt.Sprintf(`{"table":"junk-%06d","pk":"K","op":"GetItem"}`, i))
			}
			lines = append(lines,
				`{"table":"ab","pk":"K","op":"GetItem"}`,
				`{"table":"has space","pk":"K","op":"GetItem"}`,
				`{"table":"orders","index":"x","pk":"K","op":"Query"}`,
				`{"table":"`+strings.Repeat("t", 256)+`","pk":"K","op":"GetItem"}`)
			d.feed(t, lines)
			waitMetric(t, d.Hotkeyd, fmt.Sprintf(`hotkeyd_input_rejected_total{reason="bad_table",source=%q}`, d.source), 4, 15*time.Second)

			// A real table comes later: half its writes on one key.
			hot := hotKeySeries("orders", "write", "USER#HOT", report.KindHotKey)
			deadline := time.Now().Add(30 * time.Second)
			for round := 0; ; round++ {
				var orders []string
				for i := range 40 {
					pk := "USER#HOT"
					if i%2 == 1 {
						pk = fmt.Sprintf("USER#%d", round*40+i)
					}
					orders = append(orders, fmt.Sprintf(`{"table":"orders","pk":%q,"op":"PutItem"}`, pk))
				}
				d.feed(t, orders)
				_, metrics := d.Get(t, "/metrics")
				if hot.Match(metrics) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("orders' hot key is never flagged behind %d junk tables", junk)
				}
				time.Sleep(250 * time.Millisecond)
			}

			_, metrics := d.Get(t, "/metrics")
			for _, name := range []string{"hotkeyd_events_total", "hotkeyd_units_total", "hotkeyd_partition_keys_distinct", "hotkeyd_keys_omitted"} {
				if n := len(tableLabels(metrics, name)); n > maxTables {
					t.Errorf("%s has %d tables, more than the %d tracked", name, n, maxTables)
				}
			}
			if !tableLabels(metrics, "hotkeyd_events_total")["orders"] {
				t.Errorf("hotkeyd_events_total does not count orders")
			}
			m := scrape(t, d.Hotkeyd)
			if got := m["hotkeyd_tables_tracked"]; got != float64(maxTables) {
				t.Errorf("hotkeyd_tables_tracked = %v, want %d", got, maxTables)
			}
			if m[fmt.Sprintf(`hotkeyd_untracked_events_total{source=%q}`, d.source)] == 0 || m["hotkeyd_tables_evicted_total"] == 0 {
				t.Errorf("what was dropped is not counted: untracked %v, evicted %v",
					m[fmt.Sprintf(`hotkeyd_untracked_events_total{source=%q}`, d.source)], m["hotkeyd_tables_evicted_total"])
			}
			if n := strings.Count(d.Stderr(), `msg="table limit reached`); n < 1 || n > 2 {
				t.Errorf("%d lines say the table limit was reached, want one (rate-limited):\n%s", n, d.Stderr())
			}
			if bytes.Contains(metrics, []byte(`table="has space"`)) {
				t.Errorf("/metrics shows a table name DynamoDB would refuse")
			}
		})
	}
}

// TestAdmissionRealTablesWinOverTickingNames posts, over HTTP ingest,
// 300 made-up table names at one event a second each (one body a second)
// for 15 s, then two real tables at 200 events a second each (one of
// them declared under tables:), with a key at 30 % of 600 WCU/s: both
// real tables are tracked within 10 s of their first events, and their
// hot key is raised.
func TestAdmissionRealTablesWinOverTickingNames(t *testing.T) {
	d := startHTTPFed(t, "tables:\n  orders: {partition_key: pk}\n")
	tick := make([]string, 300)
	for i := range tick {
		tick[i] = fmt.Sprintf(`{"table":"tick-%03d","pk":"K","op":"GetItem"}`, i)
	}
	real := func(table string, sec int) []string {
		out := make([]string, 200)
		for i := range out {
			pk := fmt.Sprintf("USER#%d-%d", sec, i)
			if i%10 < 3 {
				pk = "USER#HOT"
			}
			out[i] = fmt.Sprintf(`{"table":%q,"pk":%q,"op":"PutItem","units":3}`, table, pk)
		}
		return out
	}
	// One body a second, paced by the clock: the rule weighs traffic
	// per second of the daemon's clock.
	pace := time.NewTicker(time.Second)
	defer pace.Stop()
	for range 15 {
		d.feed(t, tick)
		<-pace.C
	}
	start := time.Now()
	tracked := map[string]time.Duration{}
	hot := map[string]*regexp.Regexp{
		"orders":   hotKeySeries("orders", "write", "USER#HOT", report.KindHotKey),
		"sessions": hotKeySeries("sessions", "write", "USER#HOT", report.KindHotKey),
	}
	raised := map[string]bool{}
	for sec := 0; len(raised) < len(hot); sec++ {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("after 60 s: tracked %v, hot keys raised %v", tracked, raised)
		}
		d.feed(t, tick)
		d.feed(t, real("orders", sec))
		d.feed(t, real("sessions", sec))
		_, metrics := d.Get(t, "/metrics")
		counted := tableLabels(metrics, "hotkeyd_events_total")
		for table, re := range hot {
			if _, ok := tracked[table]; !ok && counted[table] {
				tracked[table] = time.Since(start)
			}
			if re.Match(metrics) {
				raised[table] = true
			}
		}
		<-pace.C
	}
	t.Logf("tracked after %v; hot keys raised after %v", tracked, time.Since(start))
	for _, table := range []string{"orders", "sessions"} {
		if got, ok := tracked[table]; !ok || got > 10*time.Second {
			t.Errorf("%s tracked after %v (%v), want within 10 s", table, got, ok)
		}
	}
	_, body := d.Get(t, "/api/v1/hotkeys?table=orders")
	if !strings.Contains(string(body), "USER#HOT") {
		t.Errorf("/api/v1/hotkeys?table=orders does not list USER#HOT: %s", body)
	}
}
