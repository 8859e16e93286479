package main

import (
	"context"
	"encoding/json"
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
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// The live page, in Debian's chromium driven by chromedp, against a real
// `hotkeyd demo`: the planted diagnoses appear within seconds, the numbers
// the page shows are the API's, nothing goes wrong in the console, and it
// keeps its credentials, its masking and its footing through a restart.
// Screenshots of each view go to the folder each test logs
// (testenv.ArtifactDir: $TEST_ARTIFACTS/<test>, or
// $TMPDIR/hotkeyd-test-artifacts/<test>).
func TestLivePage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hotkeyd demo and a browser")
	}
	for _, c := range []struct {
		name    string
		auth    bool
		keys    export.KeyMode
		restart bool
	}{
		{name: "plain", keys: export.KeysPlain, restart: true},
		{name: "basic_auth", auth: true, keys: export.KeysPlain, restart: true},
		{name: "redact", keys: export.KeysRedact},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // a process of its own, on a port of its own
			args := []string{"demo", "--keys", string(c.keys)}
			api := pageAPI{}
			if c.auth {
				args = append(args, "--web.config.file", writeBasicAuthConfig(t))
				api.user, api.password = "prometheus", "s3cret"
			}
			h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, args...)
			api.base = h.URL
			// Until the first report the API answers 503, which the
			// browser logs as an error: open the page once there is one.
			api.waitReport(t, settle)
			masker, err := export.NewKeyMasker(c.keys, "")
			if err != nil {
				t.Fatal(err)
			}

			tab := testenv.NewTab(t)
			if c.auth {
				// The person types the password once, for the page; the
				// page's own requests then carry what the browser kept.
				tab.SignIn(t, api.user, api.password)
			}
			tab.Run(t, settle, chromedp.Navigate(h.URL+"/"))
			if c.auth {
				tab.SignedIn(t)
			}
			waitPlanted(t, tab, masker, settle)
			compareWithAPI(t, tab, api)
			tab.Screenshot(t, "overview.png")
			if c.name == "plain" {
				// The demo's page as the README's picture shows it.
				matchScreenshot(t, tab, "live-page.png")
			}
			headersOnOneLine(t, tab)

			// A table's page: its history chart and every top key.
			tab.Run(t, settle, chromedp.Evaluate(`location.hash = '#/table/orders'`, nil))
			tab.WaitFor(t, `document.getElementById('app').dataset.view === 'table' && document.querySelector('tr.topkey[data-table="orders"]') && document.querySelector('[data-chart^="history:"] canvas')`, settle, "the orders table's page")
			compareWithAPI(t, tab, api.table("orders", ""))
			tab.Screenshot(t, "table-orders.png")

			// A phone: the page fits its width.
			tab.Run(t, settle, chromedp.Evaluate(`location.hash = '#/'`, nil), chromedp.EmulateViewport(390, 844))
			tab.WaitFor(t, `document.getElementById('app').dataset.view === 'overview' && document.querySelector('article.diag')`, settle, "the overview on a phone")
			// The page redraws its charts to the new width 150 ms after a
			// resize: give it a few seconds on a loaded machine.
			fits := `document.documentElement.scrollWidth <= window.innerWidth`
			deadline := time.Now().Add(5 * time.Second)
			for ok := false; !ok && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				tab.Eval(t, fits, &ok)
			}
			headersOnOneLine(t, tab)
			var widths []float64
			tab.Eval(t, `[document.documentElement.scrollWidth, window.innerWidth]`, &widths)
			if len(widths) != 2 || widths[0] > widths[1] {
				t.Errorf("on a 390 px wide phone the page is %v px wide (scroll width, window width) after 5 s: it scrolls sideways", widths)
			}
			tab.Screenshot(t, "phone.png")
			tab.Run(t, settle, chromedp.EmulateViewport(1280, 900))

			if c.keys == export.KeysRedact {
				noRawKeys(t, tab)
			}
			if c.auth {
				// Every answer the page had from the API came with its
				// credentials: none refused.
				answers := tab.Answers(regexp.MustCompile(`/api/v1/hotkeys`))
				for _, a := range answers {
					if a.Status != http.StatusOK {
						t.Errorf("%s answered the page %d", a.URL, a.Status)
					}
				}
				if len(answers) < 10 {
					t.Errorf("the page had %d answers from the API, want one a second", len(answers))
				}
			}
			if errs := tab.Errors(); len(errs) > 0 {
				t.Errorf("errors in the page: %q", errs)
			}
			if c.restart {
				restartUnderThePage(t, tab, h, args)
			}
		})
	}
}

// pageAPI fetches the daemon's API as the test, with the page's
// credentials when it has some.
type pageAPI struct {
	base, user, password string
	query                string // of /api/v1/hotkeys, for a table's page
}

func (a pageAPI) table(name, index string) pageAPI {
	a.query = "?table=" + name + "&index=" + index
	return a
}

// get fetches path, failing the test on a transport error.
func (a pageAPI) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.user != "" {
		req.SetBasicAuth(a.user, a.password)
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, body
}

// waitReport waits until the API has a report.
func (a pageAPI) waitReport(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body := a.get(t, "/api/v1/hotkeys")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/v1/hotkeys: %d %s after %s", code, body, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (a pageAPI) report(t *testing.T) report.Report {
	t.Helper()
	code, body := a.get(t, "/api/v1/hotkeys"+a.query)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/hotkeys%s: %d %s", a.query, code, body)
	}
	var rep report.Report
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatalf("/api/v1/hotkeys is not a report: %v", err)
	}
	return rep
}

// waitPlanted waits until the page shows every planted diagnosis of the
// demo, at its severity, with its fix and its key as the API shows it.
func waitPlanted(t *testing.T, tab *testenv.Tab, masker *export.KeyMasker, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, p := range demo.Planted() {
		if p.Cause == "" {
			continue
		}
		severities := []string{"warning", "critical"}
		if p.Severity != "warning" {
			severities = []string{p.Severity}
		}
		spec, _ := json.Marshal(map[string]any{
			"table": p.Table, "index": p.Index, "causes": p.Causes(), "class": p.Class.String(),
			"severities": severities, "fix": p.Fix, "key": masker.Mask(p.Key),
		})
		expr := fmt.Sprintf(`((p) => Array.from(document.querySelectorAll('article.diag')).some((e) =>
			e.dataset.table === p.table && e.dataset.index === p.index && p.causes.includes(e.dataset.cause) &&
			e.dataset.class === p.class && p.severities.includes(e.dataset.severity) && e.dataset.fix === p.fix &&
			(p.key === '' || JSON.parse(e.dataset.keys)[0] === p.key) && e.textContent.includes('Fix:')))(%s)`, spec)
		tab.WaitFor(t, expr, time.Until(deadline), fmt.Sprintf("%v diagnosis of %s %s %s", p.Causes(), p.Table, p.Index, p.Key))
	}
}

// pageView is what the page shows, read from its DOM.
type pageView struct {
	End string `json:"end"`
	// Thresholds are those the share bars are drawn against.
	Thresholds []float64 `json:"thresholds"`
	TopKeys    []struct {
		Table, Index, Class, Key string
		Rank                     int
		Units, Share, Peak       float64
		ShareText                string
	} `json:"topKeys"`
	Diagnoses []struct {
		Table, Index, Cause, Class, Severity, Fix string
		Keys                                      []string
		Share, Peak                               float64
		ShareText                                 string
	} `json:"diagnoses"`
	Classes []struct {
		Table, Index, Class string
		Ups, Peak           float64
		UpsText             string
	} `json:"classes"`
}

const readPageView = `(() => {
	const tr = (e) => ({Table: e.closest('[data-table]').dataset.table, Index: e.closest('[data-table]').dataset.index});
	return {
		end: document.getElementById('app').dataset.end || '',
		thresholds: Array.from(document.querySelectorAll('tr.topkey .thr')).map((e) => +e.dataset.threshold),
		topKeys: Array.from(document.querySelectorAll('tr.topkey')).map((e) => ({
			Table: e.dataset.table, Index: e.dataset.index, Class: e.dataset.class, Key: e.dataset.key, Rank: +e.dataset.rank,
			Units: +e.dataset.units, Share: +e.dataset.share, Peak: +e.dataset.peak,
			ShareText: e.querySelector('.pct.share').textContent })),
		diagnoses: Array.from(document.querySelectorAll('article.diag')).map((e) => ({
			Table: e.dataset.table, Index: e.dataset.index, Cause: e.dataset.cause, Class: e.dataset.class,
			Severity: e.dataset.severity, Fix: e.dataset.fix, Keys: JSON.parse(e.dataset.keys),
			Share: +e.dataset.share, Peak: +e.dataset.peak, ShareText: e.querySelector('.nums b').textContent })),
		classes: Array.from(document.querySelectorAll('b.cls-ups')).map((e) => Object.assign(tr(e), {
			Class: e.dataset.class, Ups: +e.dataset.ups, Peak: +e.dataset.peak, UpsText: e.textContent })),
	};
})()`

// compareWithAPI reads the page and the API's report of the same moment
// and checks that the page shows that report (compareView). The detector
// publishes a report a second and the page asks for one a second, at its
// own times: the test asks the API several times a second, keeps every
// report it saw, and reads the page until it shows one of them.
func compareWithAPI(t *testing.T, tab *testenv.Tab, api pageAPI) {
	t.Helper()
	seen := map[int64]report.Report{}
	var view pageView
	var rep report.Report
	matched := false
	for try := 0; try < 60 && !matched; try++ {
		r := api.report(t)
		seen[r.End.UnixNano()] = r
		tab.Eval(t, readPageView, &view)
		if end, err := time.Parse(time.RFC3339Nano, view.End); err == nil {
			rep, matched = seen[end.UnixNano()]
		}
		if !matched {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !matched {
		var state string
		tab.Eval(t, `document.getElementById('app').dataset.status + ': ' + (document.getElementById('banner') || {}).textContent`, &state)
		var last []string
		for _, a := range tab.Answers(regexp.MustCompile(`/api/v1/hotkeys`)) {
			last = append(last, fmt.Sprintf("%d %s", a.Status, a.URL))
		}
		if len(last) > 6 {
			last = last[len(last)-6:]
		}
		t.Fatalf("the page never showed a report the API served (page's end %s, its state %s, its last answers %q; the API served %d reports)", view.End, state, last, len(seen))
	}
	if api.query == "" {
		compareView(t, view, rep, 5, "")
	} else {
		compareView(t, view, rep, 0, "orders")
	}
}

// compareView checks that every key, share, rate and diagnosis the page
// shows is the report's, and that it shows them all: perClass keys per
// table and class (0: all), of every table and index or of the base table
// named.
func compareView(t *testing.T, view pageView, rep report.Report, perClass int, table string) {
	t.Helper()
	var wantKeys, wantDiags, wantClasses int
	for _, tr := range rep.Tables {
		if table != "" && (tr.Table != table || tr.Index != "") {
			continue
		}
		ranks := map[string]int{}
		for _, k := range tr.TopKeys {
			ranks[k.Class]++
			if perClass > 0 && ranks[k.Class] > perClass {
				continue
			}
			wantKeys++
			found := false
			for _, v := range view.TopKeys {
				if v.Table != tr.Table || v.Index != tr.Index || v.Class != k.Class || v.Rank != ranks[k.Class] {
					continue
				}
				found = true
				if v.Key != k.Key || v.Units != k.Units || v.Share != k.Share || v.Peak != k.PeakUnitsPerSecond || !sameShare(v.ShareText, k.Share) {
					t.Errorf("%s %s %s key #%d: the page shows %+v, the report %+v", tr.Table, tr.Index, k.Class, v.Rank, v, k)
				}
			}
			if !found {
				t.Errorf("%s %s: the page does not show %s key #%d %s", tr.Table, tr.Index, k.Class, ranks[k.Class], k.Key)
			}
		}
		// Diagnoses are matched whole: masked keys may repeat.
		for _, d := range tr.Diagnoses {
			wantDiags++
			found := false
			for _, v := range view.Diagnoses {
				found = found || v.Table == tr.Table && v.Index == tr.Index && v.Cause == string(d.Cause) && v.Class == d.Class &&
					slices.Equal(v.Keys, d.Keys) && v.Severity == string(d.Severity) && v.Fix == string(d.Fix.Kind) &&
					v.Share == d.Share && v.Peak == d.PeakUnitsPerSecond && sameShare(v.ShareText, d.Share)
			}
			if !found {
				t.Errorf("%s %s: the page does not show the %s diagnosis of %v as the report has it: %+v\nthe page's: %+v", tr.Table, tr.Index, d.Cause, d.Keys, d, view.Diagnoses)
			}
		}
		for _, c := range tr.Classes {
			wantClasses++
			found := false
			for _, v := range view.Classes {
				if v.Table == tr.Table && v.Index == tr.Index && v.Class == c.Class {
					found = true
					if v.Ups != c.UnitsPerSecond || v.Peak != c.PeakUnitsPerSecond {
						t.Errorf("%s %s %ss: the page shows %+v, the report %+v", tr.Table, tr.Index, c.Class, v, c)
					}
				}
			}
			if !found {
				t.Errorf("%s %s: the page does not show its %ss", tr.Table, tr.Index, c.Class)
			}
		}
	}
	if len(view.TopKeys) != wantKeys || len(view.Diagnoses) != wantDiags || len(view.Classes) != wantClasses {
		t.Errorf("the page shows %d keys, %d diagnoses and %d class rates; the report has %d, %d and %d",
			len(view.TopKeys), len(view.Diagnoses), len(view.Classes), wantKeys, wantDiags, wantClasses)
	}
	if wantKeys == 0 || wantDiags == 0 {
		t.Errorf("nothing to compare: the report has %d keys and %d diagnoses", wantKeys, wantDiags)
	}
	// The share bars are drawn against the threshold the report was
	// judged by, which only the report carries.
	if len(view.Thresholds) != wantKeys {
		t.Errorf("the page draws the threshold on %d share bars, want %d", len(view.Thresholds), wantKeys)
	}
	for _, th := range view.Thresholds {
		if th != rep.Settings.Threshold || th == 0 {
			t.Errorf("the page draws the threshold at %v, the report was judged at %v", th, rep.Settings.Threshold)
			break
		}
	}
}

// sameShare tells whether text, a percentage with one decimal, is share
// (JavaScript's toFixed and Go round halves apart: either is fine).
func sameShare(text string, share float64) bool {
	v, err := strconv.ParseFloat(strings.TrimSuffix(text, "%"), 64)
	return err == nil && strings.HasSuffix(text, "%") && math.Abs(v-share*100) <= 0.05+1e-9
}

// noRawKeys checks that no planted key, as it is, is anywhere in the page:
// its HTML, its text, or the answers it received.
func noRawKeys(t *testing.T, tab *testenv.Tab) {
	t.Helper()
	var html string
	tab.Eval(t, `document.documentElement.outerHTML + '\n' + document.body.innerText`, &html)
	var redacted int
	tab.Eval(t, `Array.from(document.querySelectorAll('tr.topkey')).filter((e) => e.dataset.key.endsWith('<redacted>')).length`, &redacted)
	if redacted == 0 {
		t.Errorf("the page shows no redacted key")
	}
	for _, p := range demo.Planted() {
		if p.Key == "" {
			continue
		}
		if strings.Contains(html, p.Key) {
			t.Errorf("the page shows the raw key %s", p.Key)
		}
		for _, a := range tab.Answers(regexp.MustCompile(`/api/`)) {
			if strings.Contains(string(a.Body), p.Key) {
				t.Errorf("%s answered the page the raw key %s", a.URL, p.Key)
			}
		}
	}
	// The date-keyed events table's key, and the demo's other families.
	if m := regexp.MustCompile(`(EVENTS|USER|DEVICE|PRODUCT|STATUS|SKU|SESSION)#[^<"&]`).FindString(html); m != "" {
		t.Errorf("the page shows a raw key starting %q", m)
	}
}

// restartUnderThePage freezes the daemon a while, then stops it and starts
// it again on the same address: each time the page says it is
// reconnecting, keeps what it had, and recovers without a reload.
func restartUnderThePage(t *testing.T, tab *testenv.Tab, h *testenv.Hotkeyd, args []string) {
	t.Helper()
	var before string
	tab.Eval(t, `(window.hotkeydTestMark = 'kept', document.getElementById('app').dataset.end)`, &before)

	// A frozen daemon accepts connections and answers none: the page
	// gives up on each request after 5 s, says so, and recovers when the
	// daemon does.
	h.Signal(t, syscall.SIGSTOP)
	tab.WaitFor(t, `document.getElementById('app').dataset.status === 'down' && document.querySelector('article.diag')`, settle, "the reconnecting state while the daemon is frozen")
	h.Signal(t, syscall.SIGCONT)
	tab.WaitFor(t, fmt.Sprintf(`document.getElementById('app').dataset.status === 'live' && document.getElementById('app').dataset.end > %q`, before), settle, "the page live again after the freeze")
	tab.Eval(t, `document.getElementById('app').dataset.end`, &before)

	if code := h.Stop(t); code != 0 {
		t.Fatalf("hotkeyd exited %d on SIGTERM", code)
	}
	tab.WaitFor(t, `document.getElementById('app').dataset.status === 'down' && document.getElementById('banner') && document.querySelector('article.diag')`, settle, "the reconnecting banner over the last report")
	tab.Screenshot(t, "reconnecting.png")

	addr := strings.TrimPrefix(h.URL, "http://")
	h2 := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, append(args, "--web.listen-address="+addr)...)
	if h2.URL != h.URL {
		t.Fatalf("restarted on %s, want %s", h2.URL, h.URL)
	}
	tab.WaitFor(t, fmt.Sprintf(`document.getElementById('app').dataset.status === 'live' && document.getElementById('app').dataset.end > %q && !document.getElementById('banner') && document.querySelector('tr.topkey')`, before),
		20*time.Second, "the page live again after the restart")
	var mark string
	tab.Eval(t, `window.hotkeydTestMark || ''`, &mark)
	if mark != "kept" {
		t.Errorf("the page was reloaded during the restart")
	}
	// While the daemon was away the browser logged the refused
	// connections and the new daemon's 503 before its first report: those
	// and nothing else (an aborted request is not logged).
	expected := regexp.MustCompile(`ERR_CONNECTION_REFUSED|status of 503`)
	for _, e := range tab.Errors() {
		if !expected.MatchString(e) {
			t.Errorf("error in the page through the restart: %s", e)
		}
	}
}

// The HTML report of analyze, opened from a file in the browser: one
// self-contained page (nothing fetched) with the same diagnoses, keys and
// numbers as analyze --format json on the same input, charts over the
// whole input, no console errors, and a screenshot of each view.
func TestAnalyzeHTMLReport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	generated := writeWorkload(t, t.TempDir(), 200)
	for _, c := range []struct {
		name, input string
		keys        export.KeyMode
	}{
		{"access_log", "testdata/access.jsonl", export.KeysPlain},
		{"five_minutes", generated.path, export.KeysPlain},
		{"five_minutes_redact", generated.path, export.KeysRedact},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"analyze", "--keys", string(c.keys), c.input}
			code, out, stderr := runAnalyzeCmd(t, "", append(args, "--format", "json")...)
			if code != 0 {
				t.Fatalf("analyze --format json: exit %d: %s", code, stderr)
			}
			var rep report.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			code, page, stderr := runAnalyzeCmd(t, "", append(args, "--format", "html")...)
			if code != 0 {
				t.Fatalf("analyze --format html: exit %d: %s", code, stderr)
			}
			path := filepath.Join(testenv.ArtifactDir(t), "report.html")
			if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("report: %s", path)
			checkSeries(t, page, rep)
			checkCells(t, page, rep)

			tab := testenv.NewTab(t)
			tab.Run(t, settle, chromedp.Navigate("file://"+path))
			tab.WaitFor(t, `document.getElementById('app').dataset.status === 'report' && document.querySelector('tr.topkey') && document.querySelector('[data-chart^="traffic:"] canvas')`, settle, "the report")
			var view pageView
			tab.Eval(t, readPageView, &view)
			if end, err := time.Parse(time.RFC3339Nano, view.End); err != nil || !end.Equal(rep.End) {
				t.Errorf("the page's report ends at %s, analyze's at %s", view.End, rep.End)
			}
			compareView(t, view, rep, 5, "")
			tab.Screenshot(t, "overview.png")
			if c.input == "testdata/access.jsonl" {
				// The README's picture of the report is of this input.
				matchScreenshot(t, tab, "analyze-report.png")
			}
			headersOnOneLine(t, tab)

			tab.Run(t, settle, chromedp.Evaluate(`location.hash = '#/table/orders'`, nil))
			tab.WaitFor(t, `document.getElementById('app').dataset.view === 'table' && document.querySelector('[data-chart^="history:"] canvas')`, settle, "the orders table's page")
			tab.Eval(t, readPageView, &view)
			compareView(t, view, rep, 0, "orders")
			checkReportHeatmap(t, tab, rep)
			tab.Screenshot(t, "table-orders.png")

			for _, a := range tab.Answers(nil) {
				if !strings.HasPrefix(a.URL, "file://") {
					t.Errorf("the report fetched %s", a.URL)
				}
			}
			if c.keys == export.KeysRedact && regexp.MustCompile(`USER#\d`).MatchString(page) {
				t.Errorf("the redacted report holds a raw key: %s", regexp.MustCompile(`USER#\d+`).FindString(page))
			}
			if errs := tab.Errors(); len(errs) > 0 {
				t.Errorf("errors in the page: %q", errs)
			}
		})
	}
}

// checkSeries reads the data the report page holds and checks its charts
// against the report: every table has a series over the whole input, its
// classes add up to the table's units, and each top key's points to its
// units where the points are all known.
func checkSeries(t *testing.T, page string, rep report.Report) {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script id="hotkeyd-data" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the page holds no data")
	}
	var data export.HTMLReport
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatalf("the page's data: %v", err)
	}
	if len(data.Series.Tables) != len(rep.Tables) {
		t.Fatalf("%d series for %d tables", len(data.Series.Tables), len(rep.Tables))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }
	for i, ts := range data.Series.Tables {
		tr := rep.Tables[i]
		if ts.Table != tr.Table || ts.Index != tr.Index || len(ts.Classes) != 2 {
			t.Fatalf("series %d is of %s %s with %d classes, want %s %s's two", i, ts.Table, ts.Index, len(ts.Classes), tr.Table, tr.Index)
		}
		n := len(ts.Classes[0].UnitsPerSecond)
		end := ts.Start.Add(time.Duration(int64(n)*ts.Step) * time.Second)
		if n == 0 || n > 300 || ts.Start.After(rep.Start) || end.Before(rep.End) && tr.Events > 0 {
			t.Errorf("%s %s: %d points of %d s from %s to %s, want at most 300 over the input (%s to %s)", tr.Table, tr.Index, n, ts.Step, ts.Start, end, rep.Start, rep.End)
		}
		sum := func(p report.Points) (s float64, known bool) {
			for _, v := range p {
				if math.IsNaN(v) {
					return 0, false
				}
				s += v * float64(ts.Step)
			}
			return s, true
		}
		if r, _ := sum(ts.Classes[0].UnitsPerSecond); !near(r, tr.ReadUnits) {
			t.Errorf("%s %s: the read points add up to %g units, the report has %g", tr.Table, tr.Index, r, tr.ReadUnits)
		}
		if w, _ := sum(ts.Classes[1].UnitsPerSecond); !near(w, tr.WriteUnits) {
			t.Errorf("%s %s: the write points add up to %g units, the report has %g", tr.Table, tr.Index, w, tr.WriteUnits)
		}
		if len(ts.Keys) != len(tr.TopKeys) {
			t.Errorf("%s %s: %d key series for %d top keys", tr.Table, tr.Index, len(ts.Keys), len(tr.TopKeys))
			continue
		}
		for j, k := range tr.TopKeys {
			ks := ts.Keys[j]
			if ks.Key != k.Key || ks.Class != k.Class || len(ks.UnitsPerSecond) != n {
				t.Errorf("%s %s key series %d: %s %s of %d points, want %s %s", tr.Table, tr.Index, j, ks.Key, ks.Class, len(ks.UnitsPerSecond), k.Key, k.Class)
				continue
			}
			if u, known := sum(ks.UnitsPerSecond); known && !near(u, k.Units) {
				t.Errorf("%s %s %s key %s: the points add up to %g units, the report has %g", tr.Table, tr.Index, k.Class, k.Key, u, k.Units)
			}
		}
	}
}

// checkCells reads the cells the report page holds for its heatmaps:
// one history per table with traffic, over the input, whose cells add up
// to the table's units of each class, each key's share its part of the
// cell, and the busiest second of a cell at least its mean.
func checkCells(t *testing.T, page string, rep report.Report) {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script id="hotkeyd-data" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	var data export.HTMLReport
	if m == nil || json.Unmarshal([]byte(m[1]), &data) != nil {
		t.Fatal("the page holds no data")
	}
	if len(data.History) != len(rep.Tables) {
		t.Fatalf("%d histories for %d tables", len(data.History), len(rep.Tables))
	}
	for i, h := range data.History {
		tr := rep.Tables[i]
		units := map[string]float64{}
		for _, s := range h.Series {
			for _, c := range s.Cells {
				units[s.Class] += c.Units
				if c.Start.Before(h.From) || !c.Start.Before(h.To) || c.BusiestSecond < c.Units/float64(h.StepSeconds)-1e-9 {
					t.Errorf("%s %s: cell %+v outside [%s, %s) or busiest second under its mean", tr.Table, tr.Index, c, h.From, h.To)
				}
				for _, k := range c.Keys {
					if math.Abs(k.Share-k.Units/c.Units) > 1e-9 || k.BusiestSecond > c.BusiestSecond+1e-9 {
						t.Errorf("%s %s: key %+v of cell %s: share or busiest second off", tr.Table, tr.Index, k, c.Start)
					}
				}
			}
		}
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, b) }
		if h.Table != tr.Table || h.Index != tr.Index || !near(units["read"], tr.ReadUnits) || !near(units["write"], tr.WriteUnits) {
			t.Errorf("history %d: %s %s with %v units, want %s %s's %g read and %g write", i, h.Table, h.Index, units, tr.Table, tr.Index, tr.ReadUnits, tr.WriteUnits)
		}
	}
}

// checkReportHeatmap checks the orders table's heatmap in the report: its
// heaviest row is one of the table's top keys, and its tooltip names it.
func checkReportHeatmap(t *testing.T, tab *testenv.Tab, rep report.Report) {
	t.Helper()
	tab.WaitFor(t, `document.querySelector('section.heat').dataset.cells > 0`, settle, "the report's heatmap")
	var rows []string
	tab.Eval(t, `document.querySelector('canvas[data-heatmap="keys"]').hotkeydHeatmap.rows`, &rows)
	top := map[string]bool{}
	for _, tr := range rep.Tables {
		if tr.Table == "orders" && tr.Index == "" {
			for _, k := range tr.TopKeys {
				top[k.Key] = true
			}
		}
	}
	if len(rows) < 2 || !top[rows[0]] || rows[len(rows)-1] != "the rest" {
		t.Fatalf("the heatmap's rows %q: want a top key of orders first, the rest last", rows)
	}
	if tip := hoverText(t, tab, rows[0], 0, "keys"); !strings.HasPrefix(tip, rows[0]+"\n") || !strings.Contains(tip, "busiest second") {
		t.Errorf("the tooltip of %s reads %q", rows[0], tip)
	}
}

// TestAnalyzeHTMLReportSmallFile: a report of too little traffic to judge
// says so in its headline, not "no key is hot", and the share bar of its
// key at 50% is not drawn as a hot key's: the table is quiet under the
// traffic floor, and the headline names it with the detector's reason.
func TestAnalyzeHTMLReportSmallFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	var in strings.Builder
	for i := range 16 {
		fmt.Fprintf(&in, `{"ts":"2026-11-22T10:00:%02dZ","table":"orders","pk":"k%d","op":"PutItem"}`+"\n", i, i%2)
	}
	input := filepath.Join(t.TempDir(), "small.jsonl")
	if err := os.WriteFile(input, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, page, stderr := runAnalyzeCmd(t, "", "analyze", "--format", "html", input)
	if code != 0 {
		t.Fatalf("analyze --format html: exit %d: %s", code, stderr)
	}
	path := filepath.Join(testenv.ArtifactDir(t), "report.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	tab := testenv.NewTab(t)
	tab.Run(t, 20*time.Second, chromedp.Navigate("file://"+path))
	tab.WaitFor(t, `document.getElementById('app').dataset.status === 'report' && document.querySelector('tr.topkey')`, settle, "the report")
	var got struct {
		Headline, Reasons, Quiet, Fill, Title string
		Tables                                []string
	}
	tab.Eval(t, `(() => {
		const h = document.getElementById('no-diagnoses');
		const bar = document.querySelector('tr.topkey[data-key="k0"] .bar');
		return {
			Headline: h ? h.innerText : '', Reasons: h ? h.dataset.reasons : '',
			Quiet: [...document.querySelectorAll('.quiet-tables li')].map(li => li.innerText).join('\n'),
			Tables: [...document.querySelectorAll('.quiet-tables li')].map(li => li.dataset.table),
			Fill: bar ? bar.querySelector('.fill').className : '', Title: bar ? bar.title : '',
		};
	})()`, &got)
	tab.Screenshot(t, "small-report.png")
	if got.Headline != "No diagnosis: the traffic is under the traffic floor, where a key's share is noise." || got.Reasons != "traffic_floor" {
		t.Errorf("headline %q (reasons %q), want the traffic floor", got.Headline, got.Reasons)
	}
	if len(got.Tables) != 1 || got.Tables[0] != "orders" || !strings.Contains(got.Quiet, "under the traffic floor of 100 events and 1 WCU/s") {
		t.Errorf("quiet tables %q: %q", got.Tables, got.Quiet)
	}
	if got.Fill != "fill floor" || !strings.Contains(got.Title, "traffic floor") {
		t.Errorf("k0's share bar is %q (%q), want it drawn as under the floor", got.Fill, got.Title)
	}
	if errs := tab.Errors(); len(errs) > 0 {
		t.Errorf("errors in the page: %q", errs)
	}
}

// matchScreenshot fails the test when the page's structure is no longer
// the one the README's picture image shows (testenv.ScreenshotManifest):
// the pictures must then be taken again.
func matchScreenshot(t *testing.T, tab *testenv.Tab, image string) {
	t.Helper()
	tab.WaitFor(t, `document.querySelector('[data-chart^="traffic:"] .u-over')`, settle, "the overview's charts")
	var sections []string
	tab.Eval(t, testenv.PageStructure, &sections)
	if err := testenv.MatchScreenshot(filepath.Join("..", "..", testenv.ScreenshotManifest), image, sections); err != nil {
		t.Error(err)
	}
}

// headersOnOneLine fails the test when a column header of a keys table
// wraps ("WCU/ s"), at the page's present width.
func headersOnOneLine(t *testing.T, tab *testenv.Tab) {
	t.Helper()
	var wrapped []string
	tab.Eval(t, `[...document.querySelectorAll('table.keys th')].filter(th => th.offsetParent).filter(th => {
		const r = document.createRange();
		r.selectNodeContents(th);
		const tops = new Set([...r.getClientRects()].map(c => Math.round(c.top)));
		return tops.size > 1;
	}).map(th => th.textContent + ' (' + window.innerWidth + ' px)')`, &wrapped)
	if len(wrapped) > 0 {
		t.Errorf("column headers wrap: %q", wrapped)
	}
}
