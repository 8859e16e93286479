// Command screenshots takes the README's pictures from the real program:
// the live page of `hotkeyd demo` once every planted diagnosis is on it,
// as it opens, scrolled to its tables, and its orders table's heatmap
// over the history the demo plants; the HTML report of `hotkeyd analyze
// --format html` over a sample log as it opens and its heatmap; and the
// forecasts (the forecast line and the 10× / 100× view) of a growing key,
// in the HTML report of two and a half days of writes and on the live
// page of a daemon started on three days of history planted through the
// history's writer (forecast.go). It builds hotkeyd, runs it, and drives
// a headless Chromium (Debian's chromium, as the browser tests do). It
// checks that each page is what the README says it shows, and writes the
// structure each picture shows beside them (testenv.ScreenshotManifest),
// which the page tests compare with the page. Run it from the
// repository's root:
//
//	scripts/screenshots.sh            # or: go run ./internal/cmd/screenshots -out docs/img
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

func main() {
	out := flag.String("out", "docs/img", "folder the PNGs are written to")
	input := flag.String("input", "cmd/hotkeyd/testdata/access.jsonl", "log the HTML report analyzes")
	width := flag.Int("width", 1280, "viewport width, in CSS pixels")
	height := flag.Int("height", 800, "viewport height, in CSS pixels")
	flag.Parse()
	if err := run(*out, *input, *width, *height); err != nil {
		fmt.Fprintf(os.Stderr, "screenshots: %v\n", err)
		os.Exit(1)
	}
}

func run(out, input string, width, height int) error {
	tmp, err := os.MkdirTemp("", "hotkeyd-screenshots-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	bin := filepath.Join(tmp, "hotkeyd")
	build := exec.Command("go", "build", "-o", bin, "./cmd/hotkeyd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build hotkeyd: %w", err)
	}
	bctx, stop, err := testenv.StartBrowser()
	if err != nil {
		return err
	}
	defer stop()
	sz := size{width, height, out}
	live, err := shootDemo(bctx, bin, sz)
	if err != nil {
		return err
	}
	reports, err := shootReports(bctx, bin, input, tmp, sz)
	if err != nil {
		return err
	}
	forecast, err := shootLiveForecast(bctx, bin, sz)
	if err != nil {
		return err
	}
	if err := describedPages(live[0].Sections, live[1].Sections, reports[0].Sections); err != nil {
		return err
	}
	shots := append(append(live, reports...), forecast)
	b, err := json.MarshalIndent(shots, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, filepath.Base(testenv.ScreenshotManifest)), append(b, '\n'), 0o644)
}

// size is the viewport the pictures are taken at, and their folder.
type size struct {
	width, height int
	out           string
}

// shoot takes v into the folder's image.
func (z size) shoot(bctx context.Context, v view, image string) ([]string, error) {
	return shoot(bctx, v, z.width, z.height, filepath.Join(z.out, image))
}

// shootDemo takes the live page of hotkeyd demo once its planted
// diagnoses are all in the report and its charts hold some seconds: as it
// opens, scrolled to its tables, and the orders table's heatmap over the
// six hours of history the demo plants, the pointer on a cell of its
// busiest key.
func shootDemo(bctx context.Context, bin string, z size) ([]testenv.Screenshot, error) {
	base, stopDemo, err := startDemo(bin)
	if err != nil {
		return nil, err
	}
	defer stopDemo()
	planted, err := waitPlanted(base, 60*time.Second)
	if err != nil {
		return nil, err
	}
	time.Sleep(10 * time.Second) // the charts gather some seconds
	// Both pictures show the page as it opens, from its top: the
	// diagnoses it leads with, then the tables.
	ready := fmt.Sprintf(`document.querySelectorAll('article.diag').length >= %d && document.querySelector('[data-chart^="key:"] canvas')`, planted)
	live, err := z.shoot(bctx, view{url: base + "/", ready: ready}, "live-page.png")
	if err != nil {
		return nil, err
	}
	// The same page further down: its tables, their traffic and top keys.
	tables, err := z.shoot(bctx, view{url: base + "/", ready: ready,
		scroll: `document.querySelector('section.tbl').previousElementSibling.scrollIntoView(), window.scrollBy(0, -60)`}, "live-tables.png")
	if err != nil {
		return nil, err
	}
	heat, err := z.shoot(bctx, view{url: base + "/#/table/orders", ready: `document.querySelector('section.heat[data-state="shown"]')`,
		act: `document.querySelector('section.heat button[data-range="21600"]').click()`, settled: heatSpans(20000), scroll: heatmapHover},
		"live-heatmap.png")
	if err == nil && !slices.Contains(heat, "h2 History") {
		err = fmt.Errorf("the demo's orders page is %q, with no heatmap", heat)
	}
	if err != nil {
		return nil, err
	}
	return []testenv.Screenshot{
		{Image: "live-page.png", What: "hotkeyd demo's live page as it opens, once its planted diagnoses are on it", View: "overview", Sections: live},
		{Image: "live-tables.png", What: "the same page scrolled to its tables", View: "overview", Sections: tables},
		{Image: "live-heatmap.png", What: "the same page's orders table, scrolled to its keys × time heatmap over the 6 hours of history the demo plants, the pointer on a cell of its busiest key", View: "table", Sections: heat},
	}, nil
}

// heatSpans is a JavaScript expression true once the keys' heatmap spans
// at least seconds.
func heatSpans(seconds int) string {
	return fmt.Sprintf(`(() => { const cv = document.querySelector('section.heat canvas[data-heatmap="keys"]'), hm = cv && cv.hotkeydHeatmap;
		return !!hm && hm.n * hm.step >= %d; })()`, seconds)
}

// shootReports takes the HTML report of input as it opens and its orders
// table's heatmap, and the report of two and a half days of growth
// (growthLog) scrolled to its forecasts.
func shootReports(bctx context.Context, bin, input, tmp string, z size) ([]testenv.Screenshot, error) {
	rep := filepath.Join(tmp, "report.html")
	if err := writeReport(bin, input, rep); err != nil {
		return nil, err
	}
	growth, grown := filepath.Join(tmp, "growth.jsonl"), filepath.Join(tmp, "growth.html")
	if err := os.WriteFile(growth, growthLog(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC), 60*time.Hour), 0o644); err != nil {
		return nil, err
	}
	if err := writeReport(bin, growth, grown); err != nil {
		return nil, err
	}
	overview, err := z.shoot(bctx, view{url: "file://" + rep + "#/", ready: `document.querySelector('article.diag') && document.querySelector('[data-chart^="traffic:"] canvas')`},
		"analyze-report.png")
	if err != nil {
		return nil, err
	}
	heat, err := z.shoot(bctx, view{url: "file://" + rep + "#/table/orders", ready: `document.querySelector('section.heat').dataset.cells > 0`, scroll: heatmapHover},
		"analyze-heatmap.png")
	if err == nil && !slices.Contains(heat, "h2 History") {
		err = fmt.Errorf("the report's table page is %q, with no heatmap", heat)
	}
	if err != nil {
		return nil, err
	}
	fc, err := z.shoot(bctx, forecastView("file://"+grown+"#/table/orders", 24), "analyze-forecast.png")
	if err != nil {
		return nil, err
	}
	return []testenv.Screenshot{
		{Image: "analyze-report.png", What: "hotkeyd analyze --format html " + input + " as it opens", View: "overview", Sections: overview},
		{Image: "analyze-heatmap.png", What: "the same report's orders table, scrolled to its keys × time heatmap, the pointer on a cell of the hot key", View: "table", Sections: heat},
		{Image: "analyze-forecast.png", What: "the HTML report of two and a half days of writes in which " + growingKey + " grows by 150 WCU/s a day, its orders table scrolled to its forecasts: the forecast line and the 10× / 100× view", View: "table", Sections: fc},
	}, nil
}

// forecastView is a table's page scrolled to its forecasts once the
// first forecast line is drawn with at least recorded recorded points.
func forecastView(url string, recorded int) view {
	return view{url: url,
		ready: fmt.Sprintf(`(() => { const c = document.querySelector('figure.forecast [data-chart]');
			return !!c && !!c.querySelector('.u-over') && c.hotkeydForecast.recordedPoints >= %d; })()`, recorded),
		scroll: `document.querySelector('[data-id="forecasts"]').previousElementSibling.scrollIntoView(), window.scrollBy(0, -16)`}
}

// shootLiveForecast takes the live page of a daemon started on three days
// of planted history (startForecastDaemon), its orders table scrolled to
// its forecasts once the growing key's forecast is raised.
func shootLiveForecast(bctx context.Context, bin string, z size) (testenv.Screenshot, error) {
	base, stopDaemon, err := startForecastDaemon(bin)
	if err != nil {
		return testenv.Screenshot{}, err
	}
	defer stopDaemon()
	if err := waitForecast(base, 90*time.Second); err != nil {
		return testenv.Screenshot{}, err
	}
	fc, err := z.shoot(bctx, forecastView(base+"/#/table/orders", 48), "live-forecast.png")
	if err != nil {
		return testenv.Screenshot{}, err
	}
	return testenv.Screenshot{Image: "live-forecast.png", What: "the live page of hotkeyd run on three days of history in which " + growingKey + " grows by 150 WCU/s a day, its orders table scrolled to its forecasts: the forecast line and the 10× / 100× view", View: "table", Sections: fc}, nil
}

// describedPages fails unless the pages are those the README's pictures
// say they show: the diagnoses, then the tables; the live page lists the
// incidents between them where the demo keeps a history, the report where
// its input has some.
func describedPages(live, tables, rep []string) error {
	want := []string{"view overview", "h2 Diagnoses", "diagnosis", "h2 Tables and indexes", "table with axes"}
	withIncidents := func(page []string) []string {
		if slices.Contains(page, "h2 Incidents") {
			return slices.Insert(slices.Clone(want), 3, "h2 Incidents", "card")
		}
		return want
	}
	wantLive := withIncidents(live)
	for i, got := range [][]string{live, tables, rep} {
		w := wantLive
		if i == 2 {
			w = withIncidents(rep)
		}
		if !slices.Equal(got, w) {
			return fmt.Errorf("the page is %q, want %q: the README's pictures would show another page than it describes", got, w)
		}
	}
	return nil
}

// writeReport writes hotkeyd analyze's HTML report of input to path.
func writeReport(bin, input, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	analyze := exec.Command(bin, "analyze", "--format", "html", input)
	analyze.Stdout, analyze.Stderr = f, io.Discard
	err = analyze.Run()
	f.Close()
	if err != nil {
		return fmt.Errorf("hotkeyd analyze %s: %w", input, err)
	}
	return nil
}

// heatmapHover scrolls to the heatmap and puts the pointer on the middle
// one of the cells of its heaviest row.
const heatmapHover = `(() => {
	const h = document.querySelector('section.heat');
	h.previousElementSibling.scrollIntoView();
	window.scrollBy(0, -60);
	const cv = h.querySelector('canvas[data-heatmap="keys"]'), hm = cv.hotkeydHeatmap, r = cv.getBoundingClientRect();
	const cols = hm.cells(hm.rows[0]);
	const i = cols[Math.floor(cols.length / 2)];
	cv.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + (i + 0.5) * r.width / hm.n, clientY: r.top + hm.row / 2, bubbles: true}));
})()`

// startDemo runs hotkeyd demo on a free port, with its history in a
// directory of its own (a fresh one each run, never the working
// directory's data/), and returns its base URL and the function that
// stops it and removes that directory.
func startDemo(bin string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "hotkeyd-screenshots-history-")
	if err != nil {
		return "", nil, fmt.Errorf("make the demo's history directory: %w", err)
	}
	base, stop, err := startListening(exec.Command(bin, "demo", "--web.listen-address=127.0.0.1:0", "--history.path="+dir))
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	return base, func() { stop(); _ = os.RemoveAll(dir) }, nil
}

// waitPlanted waits until the demo's report holds as many diagnoses as
// the demo plants causes, and returns how many that is.
func waitPlanted(base string, timeout time.Duration) (int, error) {
	want := 0
	for _, p := range demo.Planted() {
		if p.Cause != "" {
			want++
		}
	}
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	got := 0
	for time.Now().Before(deadline) {
		if resp, err := client.Get(base + "/api/v1/hotkeys"); err == nil {
			var rep report.Report
			if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&rep) == nil {
				got = 0
				for _, t := range rep.Tables {
					got += len(t.Diagnoses)
				}
			}
			resp.Body.Close()
			if got >= want {
				return want, nil
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return 0, fmt.Errorf("the demo's report has %d diagnoses after %s, want %d", got, timeout, want)
}

// view is a page to take: its URL, when it is ready (a JavaScript
// expression), an action to take then (act, none when empty) and when the
// page has settled after it (settled), and how to scroll before the
// picture (scroll, the top when empty).
type view struct {
	url, ready, act, settled, scroll string
}

// shoot opens v's URL in a new tab of the browser, waits until it is
// ready and the charts have settled, acts and waits again if asked,
// scrolls, writes a PNG of the viewport to path, and returns the page's
// structure (testenv.PageStructure).
func shoot(bctx context.Context, v view, width, height int, path string) ([]string, error) {
	url, ready, scroll := v.url, v.ready, v.scroll
	if scroll == "" {
		scroll = `window.scrollTo(0, 0)`
	}
	act, settled := v.act, v.settled
	if act == "" {
		act, settled = "0", "true"
	}
	// The view is chosen after the load: a navigation within the page.
	doc, hash, _ := strings.Cut(url, "#")
	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	// Open the tab with its own context: the first Run ties the tab's life
	// to the context it is given.
	if err := chromedp.Run(tab); err != nil {
		return nil, fmt.Errorf("open a tab: %w", err)
	}
	var png []byte
	var sections []string
	for _, step := range []struct {
		what   string
		action chromedp.Action
	}{
		// A tab in the background draws no frames to capture.
		{"bring the tab to the front", page.BringToFront()},
		{"size the viewport", chromedp.EmulateViewport(int64(width), int64(height))},
		{"load", chromedp.Navigate(doc)},
		{"choose the view", chromedp.Evaluate(fmt.Sprintf("location.hash = %q", hash), nil)},
		{"wait for " + ready, chromedp.Poll("!!("+ready+")", nil, chromedp.WithPollingInterval(100*time.Millisecond))},
		{"let the charts settle", chromedp.Sleep(1500 * time.Millisecond)},
		{"act: " + act, chromedp.Evaluate(act, nil)},
		{"wait for " + settled, chromedp.Poll("!!("+settled+")", nil, chromedp.WithPollingInterval(100*time.Millisecond))},
		{"scroll", chromedp.Evaluate(scroll, nil)},
		{"let the page settle", chromedp.Sleep(300 * time.Millisecond)},
		{"read the page's structure", chromedp.Evaluate(testenv.PageStructure, &sections)},
		{"capture", chromedp.CaptureScreenshot(&png)},
	} {
		ctx, cancelStep := context.WithTimeout(tab, 20*time.Second)
		err := chromedp.Run(ctx, step.action)
		cancelStep()
		if err != nil {
			return nil, fmt.Errorf("screenshot of %s: %s: %w", url, step.what, err)
		}
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "screenshots: %s (%d KB)\n", path, len(png)/1024)
	return sections, nil
}
