package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestLivePageLongKey shows the live page a hot key of 3 000 characters
// without a space (DynamoDB takes partition keys up to 2 048 bytes; this
// one is longer still): on the overview and on the table's page the page
// fits the window's width — the key is cut with an ellipsis or wrapped,
// never scrolled sideways — and every place that cuts it holds the whole
// key in its title.
func TestLivePageLongKey(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hotkeyd and a browser")
	}
	h := startIngestOnly(t)
	long := "TENANT#" + strings.Repeat("x", 2000) // within DynamoDB's 2048 bytes
	pk, _ := json.Marshal(long)
	var body strings.Builder
	for i := range 400 {
		if i%10 == 0 {
			fmt.Fprintf(&body, `{"table":"orders","pk":"USER#%d","op":"PutItem"}`+"\n", i)
			continue
		}
		fmt.Fprintf(&body, `{"table":"orders","pk":%s,"op":"PutItem"}`+"\n", pk)
	}
	if code, _, answer := post(t, h, []byte(body.String()), nil); code != http.StatusOK {
		t.Fatalf("post: %d %s", code, answer)
	}
	api := pageAPI{base: h.URL}
	api.waitReport(t, settle)

	tab := testenv.NewTab(t)
	tab.Run(t, settle, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(h.URL+"/"))
	// The daemon holds and reports a key this long as its first bytes and
	// its hash (sketch.MaxKeyBytes): that is the key the page shows.
	shown := ""
	for _, tr := range api.report(t).Tables {
		for _, k := range tr.TopKeys {
			if strings.HasPrefix(k.Key, "TENANT#") {
				shown = k.Key
			}
		}
	}
	if len(shown) < 32 || shown == long || !strings.HasPrefix(long, shown[:32]) {
		t.Fatalf("the long key is reported as %q, want it held short", shown)
	}
	keyJS, _ := json.Marshal(shown)
	check := func(view, ready string) {
		t.Helper()
		tab.WaitFor(t, ready, settle, view)
		var widths []float64
		tab.Eval(t, `[document.documentElement.scrollWidth, window.innerWidth]`, &widths)
		if len(widths) != 2 || widths[0] > widths[1] {
			t.Errorf("%s: the page is %v px wide (scroll width, window width): it scrolls sideways", view, widths)
		}
		var untitled []string
		// An element that cuts what it holds (its overflow hidden, its
		// content wider than its box) must hold the whole key in its title
		// or its cell's.
		tab.Eval(t, fmt.Sprintf(`Array.from(document.querySelectorAll('#app *')).filter(function (e) {
			if (e.textContent.indexOf('xxxxxxxxxx') < 0) return false;
			if (getComputedStyle(e).overflowX === 'visible' || e.scrollWidth <= e.clientWidth + 1) return false;
			return e.title !== %s && !(e.parentElement && e.parentElement.title === %s);
		}).map(function (e) { return e.tagName + '.' + e.className; })`, keyJS, keyJS), &untitled)
		if len(untitled) > 0 {
			t.Errorf("%s: the long key is shown without the whole key in a title in %v", view, untitled)
		}
		tab.Screenshot(t, strings.ReplaceAll(view, " ", "-")+".png")
	}
	check("overview", `document.querySelector('article.diag')`)
	tab.Run(t, settle, chromedp.Evaluate(`location.hash = '#/table/orders'`, nil))
	check("table page", `document.getElementById('app').dataset.view === 'table' && document.querySelector('tr.topkey[data-table="orders"]')`)
	if errs := tab.Errors(); len(errs) > 0 {
		t.Errorf("errors in the page: %q", errs)
	}
}
