package export

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// webFiles holds the page: its template, script and style sheet, and the
// vendored uPlot (export/web/vendor/uplot, refreshed by
// scripts/update-uplot.sh). Everything the page needs is in the binary and
// inlined into the page: it loads nothing from anywhere else.
//
//go:embed web/page.html web/app.js web/app.css web/vendor/uplot/uPlot.iife.min.js web/vendor/uplot/uPlot.min.css web/vendor/uplot/VERSION
var webFiles embed.FS

// pageData fills web/page.html.
type pageData struct {
	Title, Version, Mode, UplotVersion string
	UplotCSS, AppCSS                   template.CSS
	UplotJS, AppJS                     template.JS
	// Data is the JSON the page starts from: null for the live page, the
	// report and its series for a report.
	Data template.JS
}

// pageAssets are the embedded files, read once.
type pageAssets struct {
	tmpl                                  *template.Template
	uplotJS, uplotCSS, appJS, appCSS, ver string
}

func loadPageAssets() (pageAssets, error) {
	read := func(name string) (string, error) {
		b, err := webFiles.ReadFile("web/" + name)
		if err != nil {
			return "", fmt.Errorf("page asset %s: %w", name, err)
		}
		s := string(b)
		// The assets are inlined into <script> and <style>: none may close
		// its element early.
		if strings.Contains(strings.ToLower(s), "</script") || strings.Contains(strings.ToLower(s), "</style") {
			return "", fmt.Errorf("page asset %s: holds a closing script or style tag and cannot be inlined", name)
		}
		return s, nil
	}
	var a pageAssets
	var err error
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"app.js", &a.appJS}, {"app.css", &a.appCSS},
		{"vendor/uplot/uPlot.iife.min.js", &a.uplotJS}, {"vendor/uplot/uPlot.min.css", &a.uplotCSS}, {"vendor/uplot/VERSION", &a.ver},
	} {
		if *f.dst, err = read(f.name); err != nil {
			return pageAssets{}, err
		}
	}
	a.ver = strings.TrimSpace(a.ver)
	page, err := webFiles.ReadFile("web/page.html")
	if err != nil {
		return pageAssets{}, fmt.Errorf("page template: %w", err)
	}
	if a.tmpl, err = template.New("page").Parse(string(page)); err != nil {
		return pageAssets{}, fmt.Errorf("page template: %w", err)
	}
	return a, nil
}

// render writes the page in mode ("live" or "report") with data, a value
// encoded as JSON (json.Marshal escapes <, > and &, so it cannot end its
// script element).
func (a pageAssets) render(w io.Writer, title, version, mode string, data any) error {
	js, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode page data: %w", err)
	}
	return a.tmpl.Execute(w, pageData{
		Title: title, Version: version, Mode: mode, UplotVersion: a.ver,
		UplotCSS: template.CSS(a.uplotCSS), AppCSS: template.CSS(a.appCSS),
		UplotJS: template.JS(a.uplotJS), AppJS: template.JS(a.appJS), Data: template.JS(js),
	})
}

// livePage returns the daemon's page at /, rendered once: it fetches
// everything it shows from the API.
func livePage(version string) ([]byte, error) {
	a, err := loadPageAssets()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := a.render(&b, "hotkeyd", version, "live", nil); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// HTMLReport is what `hotkeyd analyze --format html` shows: the report and
// the series of its tables' traffic across the input.
type HTMLReport struct {
	Report report.Report `json:"report"`
	Series report.Series `json:"series"`
}

// WriteHTMLReport writes r as one self-contained HTML page (styles,
// scripts, charts and data inline, nothing loaded from the network): the
// same views as the daemon's live page, over the analyzed input. Keys are
// written as they are in r: mask them first.
func WriteHTMLReport(w io.Writer, r HTMLReport, title, version string) error {
	a, err := loadPageAssets()
	if err != nil {
		return err
	}
	if r.Series.Tables == nil {
		r.Series.Tables = []report.TableSeries{}
	}
	tables := make([]report.TableReport, len(r.Report.Tables))
	for i, t := range r.Report.Tables {
		tables[i] = withArrays(t)
	}
	r.Report.Tables = tables
	if err := a.render(w, title, version, "report", r); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}
