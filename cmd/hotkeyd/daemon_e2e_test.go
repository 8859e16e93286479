package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// hotKeySeries matches the hotkeyd_hot_key series of one finding in a
// /metrics page (labels in the exposition's sorted order).
func hotKeySeries(table, class, key string, kind report.Kind) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`(?m)^hotkeyd_hot_key\{class="%s",key="%s",kind="%s",recommendation="[a-z_]+",table="%s"\} 1$`,
		regexp.QuoteMeta(class), regexp.QuoteMeta(key), kind, regexp.QuoteMeta(table)))
}

// diagnosisSeries matches the hotkeyd_diagnosis series of one diagnosis; an
// empty key matches any.
func diagnosisSeries(table, class, key, cause, severity, fix string) *regexp.Regexp {
	k := regexp.QuoteMeta(key)
	if key == "" {
		k = `[^"]*`
	}
	return regexp.MustCompile(fmt.Sprintf(`(?m)^hotkeyd_diagnosis\{cause="%s",class="%s",fix="%s",key="%s",severity="%s",table="%s"\} 1$`,
		cause, regexp.QuoteMeta(class), fix, k, severity, regexp.QuoteMeta(table)))
}

func getReport(t *testing.T, h *testenv.Hotkeyd) report.Report {
	t.Helper()
	code, body := h.Get(t, "/api/v1/hotkeys")
	if code != http.StatusOK {
		t.Fatalf("/api/v1/hotkeys: %d %s", code, body)
	}
	var rep report.Report
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatalf("/api/v1/hotkeys is not a report: %v\n%s", err, body)
	}
	return rep
}

// waitJudged polls the daemon's report until ok holds of it, failing the
// test (waiting for what) at deadline; it is waitUntilOr for a report. The
// report is the last evaluation's, and an evaluation can come while input
// the test sent is still being taken: a log line it waited on may be of
// that earlier evaluation.
func waitJudged(t *testing.T, h *testenv.Hotkeyd, deadline time.Time, what string, ok func(report.Report) bool) report.Report {
	t.Helper()
	var rep report.Report
	waitUntilOr(t, time.Until(deadline), what, func() (bool, string) {
		rep = getReport(t, h)
		return ok(rep), fmt.Sprintf("the last report has %d events, ends %s", rep.Events, rep.End.Format(time.RFC3339Nano))
	})
	return rep
}

func TestDemoFlagsPlantedHotKeys(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	if testing.Short() {
		t.Skip("runs the demo for several seconds")
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo")
	for _, want := range []string{h.URL + "/metrics", h.URL + "/api/v1/hotkeys", "'hot key'"} {
		if !strings.Contains(h.Stdout(), want) {
			t.Errorf("demo does not say where to look (%s):\n%s", want, h.Stdout())
		}
	}

	// Every planted hot key at warning or above is announced in the log
	// within seconds, at warn (or error when critical), with its fix.
	var hot []demo.Plant
	for _, p := range demo.Planted() {
		if p.Cause == string(report.KindHotKey) && p.Severity != "info" && p.Key != "" {
			hot = append(hot, p)
		}
	}
	if len(hot) == 0 {
		t.Fatal("the demo plants no hot key")
	}
	for _, p := range hot {
		// A second's noise may make a warning hot key a key near the limit.
		line := h.WaitLog(t, fmt.Sprintf(`table=%s class=%s key=%s `, p.Table, p.Class, p.Key), settle)
		if !regexp.MustCompile(`level=(warn|error) caller=\S+ msg="(hot key|key near the partition limit)" .* logger=detector$`).MatchString(line) || !strings.Contains(line, "fix="+p.Fix) {
			t.Errorf("hot key line for %s: %s, want level=warn or error and fix=%s", p.Key, line, p.Fix)
		}
	}

	// Every planted cause is one diagnosis in /metrics and in the API, at
	// the promised severity, and the only one at warning or above on its
	// table; the info one is shown, logged at info and quiet says why. The
	// info table is slow: it passes the 100-event floor after 5 s.
	for _, p := range demo.Planted() {
		if p.Severity == "info" {
			line := h.WaitLog(t, fmt.Sprintf(`msg="hot key" table=%s class=%s key=%s `, p.Table, p.Class, p.Key), settle)
			if !strings.Contains(line, " level=info ") || !strings.HasSuffix(line, " logger=detector") {
				t.Errorf("info hot key line for %s: %s, want level=info from the detector", p.Key, line)
			}
		}
	}
	_, metrics := h.Get(t, "/metrics")
	rep := getReport(t, h)
	entries := map[string]report.TableReport{}
	for _, tr := range rep.Tables {
		entries[tr.Table+"/"+tr.Index] = tr
	}
	for _, p := range demo.Planted() {
		if p.Cause == "" {
			continue
		}
		severity := "(warning|critical)"
		if p.Severity != "warning" {
			severity = p.Severity
		}
		label := p.Table
		if p.Index != "" {
			label += "/" + p.Index
		}
		if !diagnosisSeries(label, p.Class.String(), p.Key, "("+strings.Join(p.Causes(), "|")+")", severity, p.Fix).Match(metrics) {
			t.Errorf("/metrics has no %v hotkeyd_diagnosis series for %s %s at %s", p.Causes(), p.Table, p.Key, p.Severity)
		}
		tr := entries[p.Table+"/"+p.Index]
		paging := 0
		found := false
		for _, d := range tr.Diagnoses {
			if d.Severity.Pages() {
				paging++
			}
			found = found || slices.Contains(p.Causes(), string(d.Cause)) && d.Class == p.Class.String() && (p.Key == "" || d.Key() == p.Key)
		}
		if !found {
			t.Errorf("/api/v1/hotkeys has no %s diagnosis for %s %s: %+v", p.Cause, p.Table, p.Key, tr.Diagnoses)
		}
		if p.Severity == "info" {
			if paging != 0 || tr.Quiet == nil || tr.Quiet.Reason != report.QuietInfoOnly {
				t.Errorf("%s: %d diagnoses at warning or above, quiet %+v; want none, and quiet saying info only", p.Table, paging, tr.Quiet)
			}
			if regexp.MustCompile(`(?m)level=(warn|error) caller=\S+ msg="[^"]+" table=` + regexp.QuoteMeta(p.Table) + ` .*logger=detector$`).MatchString(h.Stderr()) {
				t.Errorf("the log pages for %s, whose diagnosis is info", p.Table)
			}
		} else if paging != 1 {
			t.Errorf("%s: %d diagnoses at warning or above for one planted cause: %+v", p.Table, paging, tr.Diagnoses)
		}
	}

	// The uniform tables stay quiet: no diagnosis or finding in the API,
	// the log or /metrics.
	for _, p := range demo.Planted() {
		if p.Cause != "" {
			continue
		}
		tr, ok := entries[p.Table+"/"+p.Index]
		if !ok {
			t.Errorf("uniform table %s %s is not in the report", p.Table, p.Index)
		}
		if len(tr.Findings) != 0 || len(tr.Diagnoses) != 0 {
			t.Errorf("uniform table %s %s has diagnoses %+v and findings %+v", p.Table, p.Index, tr.Diagnoses, tr.Findings)
		}
		// A line of the table's index names the table too, then the index.
		label, where := p.Table, "table="+p.Table+" class="
		if p.Index != "" {
			label, where = p.Table+"/"+p.Index, "table="+p.Table+" index="+p.Index+" "
		}
		if regexp.MustCompile(`(?m)msg="[^"]+" ` + regexp.QuoteMeta(where) + `.*logger=detector$`).MatchString(h.Stderr()) {
			t.Errorf("the log announces a diagnosis on uniform table %s", label)
		}
		if regexp.MustCompile(`(?m)^hotkeyd_(hot_key|diagnosis)\{[^}]*table="` + regexp.QuoteMeta(label) + `"\} 1$`).Match(metrics) {
			t.Errorf("/metrics flags uniform table %s", label)
		}
	}
}

func TestRunFollowsFilesAndHTTPIngest(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	cfg := fmt.Sprintf("window: 30s\nsources:\n  - type: jsonl\n    paths: [%q]\n", filepath.Join(dir, "*.log"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "--config.file", cfgPath, "--web.enable-ingest", "--log.level", "debug")

	// 2000 writes: USER#42 takes 30%, the rest spread over 700 keys.
	var lines strings.Builder
	for i := range 2000 {
		pk := fmt.Sprintf("USER#%d", i%700)
		if i%10 < 3 {
			pk = "USER#42x"
		}
		fmt.Fprintf(&lines, `{"table":"orders","pk":%q,"op":"PutItem"}`+"\n", pk)
	}
	lines.WriteString("this line is not JSON\n")
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(lines.String()); err != nil {
		t.Fatal(err)
	}
	f.Close()

	// 300 reads over HTTP, spread evenly over 300 keys.
	var body bytes.Buffer
	for i := range 300 {
		fmt.Fprintf(&body, `{"table":"users","pk":"U-%d","op":"GetItem"}`+"\n", i)
	}
	resp, err := http.Post(h.URL+"/api/v1/events", "application/x-ndjson", &body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v1/events: %s", resp.Status)
	}

	line := h.WaitLog(t, `msg="hot key" table=orders class=write key=USER#42x `, settle)
	if !strings.Contains(line, "fix=") {
		t.Errorf("hot key line without advice: %s", line)
	}
	_, metrics := h.Get(t, "/metrics")
	for _, want := range []string{
		`hotkeyd_events_total{class="write",source="jsonl",table="orders"} 2000`,
		`hotkeyd_events_total{class="read",source="http",table="users"} 300`,
		`hotkeyd_input_rejected_total{reason="bad_json",source="jsonl"} 1`,
	} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !hotKeySeries("orders", "write", "USER#42x", report.KindHotKey).Match(metrics) {
		t.Errorf("/metrics does not flag USER#42x")
	}
	rep := waitJudged(t, h, time.Now().Add(settle), "the 2300 events", func(r report.Report) bool { return r.Events >= 2300 })
	if rep.Rejected != 1 || rep.Events != 2300 {
		t.Errorf("report: %d events, %d rejected; want 2300 and 1", rep.Events, rep.Rejected)
	}
	for _, tr := range rep.Tables {
		if tr.Table == "users" && len(tr.Findings) != 0 {
			t.Errorf("uniform table users has findings: %+v", tr.Findings)
		}
	}

	// SIGTERM: not ready, sources stopped, server stopped, exit 0.
	if code := h.Stop(t); code != 0 {
		t.Fatalf("exit status %d after SIGTERM\n%s", code, h.Stderr())
	}
	stderr := h.Stderr()
	stopped, served := strings.Index(stderr, `msg="source stopped"`), strings.Index(stderr, `msg="http server stopped"`)
	if stopped < 0 || served < 0 || stopped > served {
		t.Errorf("sources must stop before the HTTP server:\n%s", stderr)
	}
	if !strings.Contains(stderr, "msg=stopped signal=terminated") {
		t.Errorf("no clean stop in the log:\n%s", stderr)
	}
}

// TestHashedKeysNeverLeave runs the demo with keys: hash and checks that the
// planted key's value shows nowhere: not in the log, /metrics or the API.
func TestHashedKeysNeverLeave(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	if testing.Short() {
		t.Skip("runs the demo for several seconds")
	}
	cfgPath := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfgPath, []byte("keys: hash\nkey_hash_secret: test-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo", "--config.file", cfgPath)
	line := h.WaitLog(t, `msg="hot key" table=orders class=write key=USER#`, settle)
	if strings.Contains(line, demo.CelebrityUser) {
		t.Fatalf("hot key line shows the key: %s", line)
	}
	_, metrics := h.Get(t, "/metrics")
	_, api := h.Get(t, "/api/v1/hotkeys")
	// A hashed key is the prefix and 8 hex digits, so the plain key is the
	// key followed by anything but a hex digit.
	plain := regexp.MustCompile(regexp.QuoteMeta(demo.CelebrityUser) + `([^0-9a-f]|$)`)
	for where, text := range map[string]string{"log": h.Stderr(), "/metrics": string(metrics), "/api/v1/hotkeys": string(api)} {
		if plain.MatchString(text) {
			t.Errorf("%s shows the planted key %s in plain", where, demo.CelebrityUser)
		}
	}
	if !regexp.MustCompile(`hotkeyd_hot_key\{class="write",key="USER#[0-9a-f]{8}",kind="hot_key"`).Match(metrics) ||
		!regexp.MustCompile(`hotkeyd_diagnosis\{cause="hot_key",class="write",fix="calculated_suffix",key="USER#[0-9a-f]{8}"`).Match(metrics) {
		t.Errorf("/metrics does not flag the hashed key")
	}
}

// TestRunOnStdinKeepsServing pipes a log into a jsonl source on "-": the
// daemon reads it to its end and keeps serving what it counted.
func TestRunOnStdinKeepsServing(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	cfgPath := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfgPath, []byte("sources:\n  - type: jsonl\n    paths: [\"-\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for i := range 1000 {
		pk := fmt.Sprintf("C-%d", i%400)
		if i%4 == 0 {
			pk = "C-7781"
		}
		fmt.Fprintf(&lines, `{"table":"carts","pk":%q,"op":"UpdateItem","units":2}`+"\n", pk)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{Stdin: strings.NewReader(lines.String())}, "--config.file", cfgPath)
	h.WaitLog(t, `msg="source finished its input"`, settle)
	h.WaitLog(t, `msg="hot key" table=carts class=write key=C-7781 `, settle)
	if code, body := h.Get(t, "/-/ready"); code != http.StatusOK {
		t.Errorf("not ready after stdin ended: %d %s", code, body)
	}
	_, metrics := h.Get(t, "/metrics")
	if !bytes.Contains(metrics, []byte(`hotkeyd_units_total{class="write",table="carts"} 2000`)) {
		t.Errorf("/metrics does not count the 2000 WCU read from stdin")
	}
}
