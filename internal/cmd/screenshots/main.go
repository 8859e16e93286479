// Command screenshots takes the README's pictures from the real program:
// the live page of `hotkeyd demo` once every planted diagnosis is on it,
// as it opens and scrolled to its tables, and the HTML report of `hotkeyd
// analyze --format html` over a sample log as it opens. It builds hotkeyd, runs it, and drives a
// headless Chromium (Debian's chromium, as the browser tests do). It
// checks that each page is what the README says it shows, and writes the
// structure each picture shows beside them (testenv.ScreenshotManifest),
// which the page tests compare with the page. Run it from the
// repository's root:
//
//	scripts/screenshots.sh            # or: go run ./internal/cmd/screenshots -out docs/img
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
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
	// The report first: it needs no daemon.
	report := filepath.Join(tmp, "report.html")
	if err := writeReport(bin, input, report); err != nil {
		return err
	}

	bctx, stop, err := testenv.StartBrowser()
	if err != nil {
		return err
	}
	defer stop()

	// The live page, once the demo's planted diagnoses are all in the report
	// and its charts hold some seconds.
	base, stopDemo, err := startDemo(bin)
	if err != nil {
		return err
	}
	defer stopDemo()
	planted, err := waitPlanted(base, 60*time.Second)
	if err != nil {
		return err
	}
	time.Sleep(10 * time.Second)
	// Both pictures show the page as it opens, from its top: the
	// diagnoses it leads with, then the tables.
	liveReady := fmt.Sprintf(`document.querySelectorAll('article.diag').length >= %d && document.querySelector('[data-chart^="key:"] canvas')`, planted)
	live, err := shoot(bctx, base+"/", liveReady, "", width, height, filepath.Join(out, "live-page.png"))
	if err != nil {
		return err
	}
	// The same page further down: its tables, their traffic and top keys.
	tables, err := shoot(bctx, base+"/", liveReady, `document.querySelector('section.tbl').previousElementSibling.scrollIntoView(), window.scrollBy(0, -60)`,
		width, height, filepath.Join(out, "live-tables.png"))
	if err != nil {
		return err
	}
	rep, err := shoot(bctx, "file://"+report+"#/", `document.querySelector('article.diag') && document.querySelector('[data-chart^="traffic:"] canvas')`, "",
		width, height, filepath.Join(out, "analyze-report.png"))
	if err != nil {
		return err
	}
	heat, err := shootHeatmap(bctx, report, width, height, filepath.Join(out, "analyze-heatmap.png"))
	if err != nil {
		return err
	}
	if err := describedPages(live, tables, rep); err != nil {
		return err
	}
	shots := []testenv.Screenshot{
		{Image: "live-page.png", What: "hotkeyd demo's live page as it opens, once its planted diagnoses are on it", View: "overview", Sections: live},
		{Image: "live-tables.png", What: "the same page scrolled to its tables", View: "overview", Sections: tables},
		{Image: "analyze-report.png", What: "hotkeyd analyze --format html " + input + " as it opens", View: "overview", Sections: rep},
		{Image: "analyze-heatmap.png", What: "the same report's orders table, scrolled to its keys × time heatmap, the pointer on a cell of the hot key", View: "table", Sections: heat},
	}
	b, err := json.MarshalIndent(shots, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, filepath.Base(testenv.ScreenshotManifest)), append(b, '\n'), 0o644)
}

// describedPages fails unless the pages are those the README's pictures
// say they show: the diagnoses, then the tables; the live page lists the
// incidents between them where the demo keeps a history.
func describedPages(live, tables, rep []string) error {
	want := []string{"view overview", "h2 Diagnoses", "diagnosis", "h2 Tables and indexes", "table with axes"}
	wantLive := want
	if slices.Contains(live, "h2 Incidents") {
		wantLive = slices.Insert(slices.Clone(want), 3, "h2 Incidents", "card")
	}
	for i, got := range [][]string{live, tables, rep} {
		w := want
		if i < 2 {
			w = wantLive
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

// shootHeatmap takes the report's orders table further down: its keys ×
// time heatmap, the tooltip naming a cell of the hot key.
func shootHeatmap(bctx context.Context, report string, width, height int, path string) ([]string, error) {
	heat, err := shoot(bctx, "file://"+report+"#/table/orders", `document.querySelector('section.heat').dataset.cells > 0`, heatmapHover,
		width, height, path)
	if err == nil && !slices.Contains(heat, "h2 History") {
		err = fmt.Errorf("the report's table page is %q, with no heatmap", heat)
	}
	return heat, err
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
	cmd := exec.Command(bin, "demo", "--web.listen-address=127.0.0.1:0", "--history.path="+dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("start hotkeyd demo: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	}
	started := regexp.MustCompile(`msg="hotkeyd started" address=(\S+)`)
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if m := started.FindStringSubmatch(lines.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return "http://" + m[1], stop, nil
		}
	}
	stop()
	return "", nil, errors.New("hotkeyd demo exited before it listened")
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

// shoot opens url in a new tab of the browser, waits until ready (a
// JavaScript expression) is true and the charts have settled, scrolls
// with the expression scroll (the top when empty), writes a PNG of the
// viewport to path, and returns the page's structure
// (testenv.PageStructure).
func shoot(bctx context.Context, url, ready, scroll string, width, height int, path string) ([]string, error) {
	if scroll == "" {
		scroll = `window.scrollTo(0, 0)`
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
