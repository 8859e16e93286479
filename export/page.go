package export

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history/view"
)

// webFiles holds the page: its template, script and style sheet, and the
// vendored uPlot (export/web/vendor/uplot, refreshed by
// scripts/update-uplot.sh). Everything the page needs is in the binary and
// inlined into the page: it loads nothing from anywhere else.
//
//go:embed web/page.html web/app.js web/heatmap.js web/heatview.js web/incidents.js web/forecast.js web/app.css web/vendor/uplot/uPlot.iife.min.js web/vendor/uplot/uPlot.min.css web/vendor/uplot/VERSION
var webFiles embed.FS

// pageData fills web/page.html.
type pageData struct {
	Title, Version, Mode, UplotVersion string
	UplotCSS, AppCSS                   template.CSS
	UplotJS, AppJS                     template.JS
	// Data is the JSON the page starts from: null for the live page, the
	// report and its series for a report.
	Data template.JS
	// CSP, when set, is written as the page's Content-Security-Policy
	// meta element (the HTML report: a file has no headers).
	CSP string
}

// pageAssets are the embedded files, read once.
type pageAssets struct {
	tmpl                                  *template.Template
	uplotJS, uplotCSS, appJS, appCSS, ver string
	// heatJS, heatViewJS and incidentsJS draw the history (heatmaps and
	// incidents); they run before appJS, in the same script element.
	heatJS, heatViewJS, incidentsJS string
	// forecastJS draws the forecast lines; it runs before appJS too.
	forecastJS string
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
		{"heatmap.js", &a.heatJS}, {"heatview.js", &a.heatViewJS}, {"incidents.js", &a.incidentsJS}, {"forecast.js", &a.forecastJS}, {"app.js", &a.appJS}, {"app.css", &a.appCSS},
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
func (a pageAssets) render(w io.Writer, title, version, mode string, data any, csp string) error {
	js, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode page data: %w", err)
	}
	return a.tmpl.Execute(w, pageData{
		Title: title, Version: version, Mode: mode, UplotVersion: a.ver,
		UplotCSS: template.CSS(a.uplotCSS), AppCSS: template.CSS(a.appCSS),
		UplotJS: template.JS(a.uplotJS), AppJS: template.JS(a.heatJS + a.heatViewJS + a.incidentsJS + a.forecastJS + a.appJS), Data: template.JS(js),
		CSP: csp,
	})
}

// inlineRE finds the page's inline scripts and style sheets (the data
// script, application/json, is never run and needs no hash).
var inlineRE = regexp.MustCompile(`(?s)<(script|style)>(.*?)</(?:script|style)>`)

// pagePolicy returns the Content-Security-Policy of a rendered page: only
// its own inline scripts and style sheets run, by their SHA-256 hashes;
// nothing is loaded from anywhere (the favicon is a data: URL); the live
// page fetches its API from its own origin (connect 'self'), the report
// nothing. Style attributes stay allowed: the page sets its bars' widths
// with them. frame-ancestors, which only a header can carry, is added by
// the server.
func pagePolicy(page []byte, live bool) string {
	var scripts, styles []string
	for _, m := range inlineRE.FindAllSubmatch(page, -1) {
		sum := sha256.Sum256(m[2])
		h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if string(m[1]) == "script" {
			scripts = append(scripts, h)
		} else {
			styles = append(styles, h)
		}
	}
	connect := "'none'"
	if live {
		connect = "'self'"
	}
	return "default-src 'none'; script-src " + strings.Join(scripts, " ") +
		"; style-src-elem " + strings.Join(styles, " ") +
		"; style-src-attr 'unsafe-inline'; img-src data:; connect-src " + connect +
		"; base-uri 'none'; form-action 'none'"
}

// renderWithPolicy renders the page, then computes its policy.
func (a pageAssets) renderWithPolicy(title, version, mode string, data any, live bool) ([]byte, string, error) {
	var b bytes.Buffer
	if err := a.render(&b, title, version, mode, data, ""); err != nil {
		return nil, "", err
	}
	return b.Bytes(), pagePolicy(b.Bytes(), live), nil
}

// liveData is the live page's data: what the server serves besides the
// report.
type liveData struct {
	// ServesHistory says that /api/v1/history and /api/v1/incidents are
	// served: the page then draws the tables' heatmaps and the incidents.
	ServesHistory bool `json:"serves_history"`
}

// livePage returns the daemon's page at /, rendered once: it fetches
// everything it shows from the API, the history's paths where history
// says they are served. csp is its Content-Security-Policy, for the
// header.
func livePage(version string, history bool) (page []byte, csp string, err error) {
	a, err := loadPageAssets()
	if err != nil {
		return nil, "", err
	}
	return a.renderWithPolicy("hotkeyd", version, "live", liveData{ServesHistory: history}, true)
}

// HTMLReport is what `hotkeyd analyze --format html` shows: the report,
// the series of its tables' traffic across the input, and the cells of
// its tables' keys × time that the page draws as heatmaps.
type HTMLReport struct {
	Report report.Report `json:"report"`
	Series report.Series `json:"series"`
	// History holds a table's cells over the input, per table and index
	// with traffic (the shape of /api/v1/history).
	History []view.Answer `json:"history"`
	// Incidents, when set, are the input's incidents (the shape of
	// /api/v1/incidents); the page lists them.
	Incidents *Incidents `json:"incidents,omitempty"`
}

// Incidents is the answer of /api/v1/incidents: {"incidents": [...]}.
type Incidents struct {
	Incidents []view.Incident `json:"incidents"`
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
	if r.History == nil {
		r.History = []view.Answer{}
	}
	tables := make([]report.TableReport, len(r.Report.Tables))
	for i, t := range r.Report.Tables {
		tables[i] = withArrays(t)
	}
	r.Report.Tables = tables
	// Rendered twice: the policy, in a meta element of the page, holds
	// the hashes of the page's inline scripts and styles.
	_, csp, err := a.renderWithPolicy(title, version, "report", r, false)
	if err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	if err := a.render(w, title, version, "report", r, csp); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}
