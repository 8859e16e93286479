package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestSecurityHeaders asks the running daemon for its page, its JSON API
// and its metrics: every answer forbids sniffing, framing and the Referer;
// the page's policy runs only its own inline scripts and styles (by hash:
// no 'unsafe-inline' for scripts or style sheets, no eval), loads nothing
// from elsewhere and talks only to its own origin. TestLivePage checks in
// Chromium that the page works under it (a violation is a page error).
func TestSecurityHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo")
	for _, path := range []string{"/", "/api/v1/hotkeys", "/api/v1/hotkeys/history", "/metrics", "/-/healthy"} {
		resp, err := http.Get(h.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for name, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
			if got := resp.Header.Get(name); got != want {
				t.Errorf("%s: %s %q, want %q", path, name, got, want)
			}
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		if path != "/" {
			continue
		}
		hash := regexp.MustCompile(`'sha256-[A-Za-z0-9+/]+=*'`)
		for _, d := range []string{"script-src", "style-src-elem"} {
			m := regexp.MustCompile(d + ` ([^;]*)`).FindStringSubmatch(csp)
			if m == nil || len(hash.FindAllString(m[1], -1)) != 2 || strings.Contains(m[1], "unsafe") || strings.Contains(m[1], "*") {
				t.Errorf("page %s: %q, want the hashes of the page's two inline elements only", d, m)
			}
		}
		if !strings.Contains(csp, "connect-src 'self'") || !strings.Contains(csp, "base-uri 'none'") {
			t.Errorf("page policy %q", csp)
		}
	}
}

// TestAnalyzeHTMLReportPolicy: the report written by analyze is a file,
// with no headers: it carries its policy in a meta element, which loads
// and connects to nothing (frame-ancestors is not allowed there).
func TestAnalyzeHTMLReportPolicy(t *testing.T) {
	code, out, errOut := runAnalyzeCmd(t, "", "analyze", "--format", "html", "testdata/access.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	m := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no Content-Security-Policy meta element in the report")
	}
	csp := strings.ReplaceAll(m[1], "&#39;", "'")
	for _, want := range []string{"default-src 'none'", "connect-src 'none'", "script-src 'sha256-"} {
		if !strings.Contains(csp, want) {
			t.Errorf("report policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "frame-ancestors") || strings.Index(out, m[0]) > strings.Index(out, "<style>") {
		t.Errorf("report policy %q: no frame-ancestors in a meta element, and before the first style", csp)
	}
}
