package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	demosource "github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// heatCellTimes is a JavaScript function (kind, label) returning the
// start (Unix seconds) of each cell the table page's heatmap draws for
// label, from the model the script bound to the canvas.
const heatCellTimes = `((kind, label) => {
	const cv = document.querySelector('section.heat canvas[data-heatmap="' + kind + '"]');
	if (!cv || !cv.hotkeydHeatmap) return [];
	const hm = cv.hotkeydHeatmap;
	return hm.cells(label).map((c) => hm.first + c * hm.step);
})`

// TestDemoPageHeatmap: the live page of `hotkeyd demo`, on an empty
// --history.path, draws its heatmaps from the history the demo planted
// (internal/app/daemon/demohistory.go), not from a fixture: products'
// keys over the last hour hold PRODUCT#7 in every minute before the demo
// started; orders' writes over six hours hold the celebrity's 30-minute
// episode, 5 to 4.5 hours before the demo (the planted incident's span),
// and nothing of it elsewhere before the demo; the overview lists the
// planted incident, closed.
func TestDemoPageHeatmap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hotkeyd demo and a browser")
	}
	started := time.Now().UTC()
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo", "--history.path", t.TempDir())
	if !strings.Contains(h.Stderr(), "demo history planted") {
		t.Fatalf("no line says the demo planted its history:\n%s", h.Stderr())
	}
	tab := testenv.NewTab(t)
	tab.Run(t, settle, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(h.URL+"/#/table/products"))
	tab.WaitFor(t, `document.querySelector('section.heat[data-cells]') && +document.querySelector('section.heat').dataset.cells > 0`, settle, "products' heatmap")
	var hot []int64
	tab.Eval(t, fmt.Sprintf(`%s('keys', %q)`, heatCellTimes, demosource.HotProduct), &hot)
	var first int64
	tab.Eval(t, `document.querySelector('section.heat canvas[data-heatmap="keys"]').hotkeydHeatmap.first`, &first)
	// Every minute of the range before the demo's first minute is
	// planted (the minute it started in may be planted or live).
	has := map[int64]bool{}
	for _, at := range hot {
		has[at] = true
	}
	var missing []string
	planted := 0
	for at := first; at < started.Truncate(time.Minute).Unix(); at += 60 {
		planted++
		if !has[at] {
			missing = append(missing, time.Unix(at, 0).UTC().Format("15:04"))
		}
	}
	if planted < 50 || len(missing) > 0 {
		t.Errorf("%s lacks the planted minutes %q of the last hour's heatmap (%d minutes before the demo from %s)", demosource.HotProduct, missing, planted, time.Unix(first, 0).UTC())
	}

	tab.Run(t, settle, chromedp.Navigate(h.URL+"/#/table/orders"))
	tab.WaitFor(t, `document.querySelector('section.heat[data-cells]') && document.querySelector('section.heat button[data-range="21600"]')`, settle, "orders' heatmap")
	tab.Click(t, `section.heat button[data-range="21600"]`, settle)
	tab.WaitFor(t, `document.querySelector('section.heat button[data-range="21600"].on')`, settle, "the 6-hour range")
	var writes bool
	tab.Eval(t, `(() => {
		const b = [...document.querySelectorAll('section.heat .heat-classes button')].find((b) => b.textContent === 'writes');
		if (b) b.click();
		return !!b;
	})()`, &writes)
	if !writes {
		t.Fatal("orders' heatmap has no writes to choose")
	}
	// The episode is the planted incident's span; its cells at the
	// heatmap's step (the page asks for 10-minute cells over six hours)
	// are drawn, and no planted cell of the celebrity outside it.
	incs := plantedIncidents(t, h, started)
	if len(incs) != 1 {
		t.Fatalf("planted incidents %+v, want one", incs)
	}
	ep0, ep1 := incs[0].Start.Unix(), incs[0].End.Unix()
	var hm struct {
		First, Step int64
		Cells       []int64
	}
	tab.WaitFor(t, fmt.Sprintf(`%s('keys', %q).some((at) => at < %d)`, heatCellTimes, demosource.CelebrityUser, ep1), settle, "the celebrity's planted cells over six hours")
	tab.Eval(t, fmt.Sprintf(`(() => { const hm = document.querySelector('section.heat canvas[data-heatmap="keys"]').hotkeydHeatmap;
		return {First: hm.first, Step: hm.step, Cells: %s('keys', %q)}; })()`, heatCellTimes, demosource.CelebrityUser), &hm)
	has = map[int64]bool{}
	for _, at := range hm.Cells {
		has[at] = true
		if planted := at+hm.Step <= started.Truncate(time.Minute).Unix(); planted && (at+hm.Step <= ep0 || at >= ep1) {
			t.Errorf("%s drawn at %s, outside its planted episode %s to %s", demosource.CelebrityUser, time.Unix(at, 0).UTC(), incs[0].Start, incs[0].End)
		}
	}
	want := 0
	for at := hm.First + (ep0-hm.First)/hm.Step*hm.Step; at < ep1; at += hm.Step {
		want++
		if !has[at] {
			t.Errorf("no cell of %s at %s, in its planted episode (cells of %d s: %v)", demosource.CelebrityUser, time.Unix(at, 0).UTC(), hm.Step, hm.Cells)
		}
	}
	if want < 3 {
		t.Errorf("the episode spans %d cells of %d s, want at least 3", want, hm.Step)
	}

	tab.Run(t, settle, chromedp.Evaluate(`location.hash = '#/'`, nil))
	tab.WaitFor(t, `[...document.querySelectorAll('li.incident')].some((e) => e.dataset.table === 'orders' && e.dataset.end)`, settle, "the planted incident on the overview")
	var texts []string
	tab.Eval(t, `[...document.querySelectorAll('li.incident')].filter((e) => e.dataset.table === 'orders' && e.dataset.end).map((e) => e.textContent)`, &texts)
	if len(texts) != 1 {
		t.Fatalf("closed incidents of orders on the overview: %q, want the one planted", texts)
	}
	for _, want := range []string{"hot key", demosource.CelebrityUser, "(30 min)"} {
		if !strings.Contains(texts[0], want) {
			t.Errorf("the planted incident %q does not say %q", texts[0], want)
		}
	}
	if errs := tab.Errors(); len(errs) > 0 {
		t.Errorf("errors in the page: %q", errs)
	}
}
