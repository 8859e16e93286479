package testenv

import (
	"image/png"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A screenshot of a tab that another, newer tab put in the background
// brings it to the front first (headless Chromium can hold the capture
// of a hidden tab until a frame that never comes), and writes a PNG of
// the page at the browser's width.
func TestScreenshotOfABackgroundTab(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	older := NewTab(t)
	older.Run(t, time.Minute, chromedp.Navigate(`data:text/html,<h1 style="height:2000px">older</h1>`))
	newer := NewTab(t)
	newer.Run(t, time.Minute, chromedp.Navigate(`data:text/html,<h1>newer</h1>`))
	var state string
	older.Eval(t, `document.visibilityState`, &state)
	if state != "hidden" {
		t.Fatalf("the older tab is %q before the screenshot, want hidden (the test no longer makes a background tab)", state)
	}

	path := older.Screenshot(t, "older.png")
	if path == "" {
		t.Fatal("no screenshot of the older tab")
	}
	older.Eval(t, `document.visibilityState`, &state)
	if state != "visible" {
		t.Errorf("the older tab is %q after its screenshot, want visible (brought to the front)", state)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() < 2000 {
		t.Errorf("the screenshot is %d × %d, want 1280 wide and the whole 2000 px page", b.Dx(), b.Dy())
	}
}

func TestMain(m *testing.M) {
	os.Exit(WithBrowserClosed(m).Run())
}
