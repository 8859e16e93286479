package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestAnalyzeTextEscapesKeysEverywhere runs analyze on hot keys holding
// what a terminal acts on (ESC sequences that clear the screen and retitle
// the window, BEL, CR, a right-to-left override, a C1 control): the text
// report prints none of those characters raw — not in the key column, and
// not in the diagnoses' sentences, fixes, examples and evidence, where the
// key is part of the text — and names each key by its escapes.
func TestAnalyzeTextEscapesKeysEverywhere(t *testing.T) {
	keys := map[string]string{
		"CLEAR\x1b[2J\x1b[H":  `CLEAR\x1b[2J\x1b[H`,
		"TITLE\x1b]0;owned\a": `TITLE\x1b]0;owned\a`,
		"CR\rOVERWRITE":       `CR\rOVERWRITE`,
		"RTL\u202eUSER#1":     `RTL\u202eUSER#1`,
		"C1\u009b31m":         `C1\u009b31m`,
	}
	var lines []string
	i := 0
	for k := range keys {
		i++
		table := fmt.Sprintf("table%d", i)
		pk, _ := json.Marshal(k)
		for n := 0; n < 50; n++ {
			lines = append(lines, fmt.Sprintf(`{"ts":"2026-11-22T10:00:%02dZ","table":%q,"pk":%s,"op":"PutItem","units":1000}`, n%60, table, pk))
		}
		lines = append(lines, fmt.Sprintf(`{"ts":"2026-11-22T10:00:00Z","table":%q,"pk":"OTHER","op":"PutItem"}`, table))
	}
	path := filepath.Join(t.TempDir(), "hostile.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runAnalyzeCmd(t, "", "analyze", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, c := range []string{"\x1b", "\a", "\r", "\u202e", "\u009b"} {
		if strings.Contains(out, c) {
			t.Errorf("the report holds %q raw", c)
		}
	}
	if !strings.Contains(out, "diagnoses:") || !strings.Contains(out, "e.g. ") {
		t.Fatalf("no diagnosis with an example to check:\n%s", out)
	}
	for _, want := range keys {
		// The key column, a diagnosis line, the example and the evidence.
		if n := strings.Count(out, want); n < 4 {
			t.Errorf("%s is named %d times, want at least 4 (key column, diagnosis, example, evidence)", want, n)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", strings.NewReplacer("\x1b", "<ESC>", "\a", "<BEL>", "\r", "<CR>").Replace(out))
	}
}

// TestAnalyzeSkipsByteOrderMark runs analyze on files that start with a
// UTF-8 byte order mark, as Windows tools write them, in each format and
// compressed: the mark is left out, and the first record counts.
func TestAnalyzeSkipsByteOrderMark(t *testing.T) {
	const bom = "\ufeff"
	jsonl := `{"ts":"2026-11-22T10:00:00Z","table":"orders","pk":"USER#1","op":"PutItem"}` + "\n" +
		`{"ts":"2026-11-22T10:00:01Z","table":"orders","pk":"USER#2","op":"PutItem"}` + "\n"
	trail := `{"Records":[{"eventTime":"2026-11-22T10:00:00Z","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"customer":"C-1"}}},` +
		`{"eventTime":"2026-11-22T10:00:01Z","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"customer":"C-2"}}}]}`
	for _, c := range []struct {
		name, content string
		gz            bool
		args          []string
	}{
		{"access.jsonl", jsonl, false, nil},
		{"access.jsonl.gz", jsonl, true, nil},
		{"cloudtrail.json", trail, false, []string{"--key-schema", "orders=customer"}},
		{"cloudtrail.json.gz", trail, true, []string{"--key-schema", "orders=customer"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.name)
			b := []byte(bom + c.content)
			if c.gz {
				var buf bytes.Buffer
				zw := gzip.NewWriter(&buf)
				zw.Write(b)
				zw.Close()
				b = buf.Bytes()
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runAnalyzeCmd(t, "", append(append([]string{"analyze", "--format", "json"}, c.args...), path)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			var rep struct {
				Events, Rejected int
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Events != 2 || rep.Rejected != 0 {
				t.Errorf("%d events, %d rejected; want 2 and 0\n%s", rep.Events, rep.Rejected, errOut)
			}
		})
	}
}

// TestAnalyzeTopBound: --top past the keys a table counts exactly is an
// error that names the flag and detector.top's bound, not a sketch error,
// as --threshold's is.
func TestAnalyzeTopBound(t *testing.T) {
	code, _, errOut := runAnalyzeCmd(t, "", "analyze", "--top", "100000000", "testdata/access.jsonl")
	if want := "hotkeyd: flags: --top: must be 0 to 384 (the keys a table counts exactly per class), got 100000000\n"; code != 1 || errOut != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, want)
	}
}

// TestAnalyzeTopFromFile: analyze lists detector.top keys per class from
// the config file, and --top overrides it.
func TestAnalyzeTopFromFile(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfg, []byte("detector:\n  top: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 1},
		{[]string{"--top", "2"}, 2},
	} {
		args := append([]string{"analyze", "--format", "json", "--config.file", cfg}, c.args...)
		code, out, errOut := runAnalyzeCmd(t, "", append(args, "testdata/access.jsonl")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var rep report.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Settings.Top != c.want {
			t.Errorf("%v: settings.top %d, want %d", args, rep.Settings.Top, c.want)
		}
		perClass := map[string]int{}
		for _, tr := range rep.Tables {
			for _, k := range tr.TopKeys {
				perClass[tr.Table+"/"+tr.Index+" "+k.Class]++
			}
		}
		if len(perClass) == 0 {
			t.Fatalf("%v: no top keys", args)
		}
		for class, n := range perClass {
			if n != c.want {
				t.Errorf("%v: %s lists %d keys, want %d", args, class, n, c.want)
			}
		}
	}
}

// hostileKeys are keys that would run or inject markup if a page wrote
// them as HTML, or end an attribute or an element.
var hostileKeys = []string{
	`<img src=x onerror="window.pwned=1">`,
	`"><svg onload="window.pwned=2">`,
	`</script><script>window.pwned=3</script>`,
	`USER#1' onmouseover='window.pwned=4`,
}

// TestPageEscapesKeysInHeatmapAndIncidents: keys, shards, summaries and
// fixes holding markup are drawn in the live page's heatmaps, tooltips
// and incidents as text: no element is made of them, no script runs, and
// each reads back as it is. The history comes from a fixture in front of
// a real `hotkeyd demo` (historyFixture).
func TestPageEscapesKeysInHeatmapAndIncidents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hotkeyd demo and a browser")
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo")
	(pageAPI{base: h.URL}).waitReport(t, settle)
	now := time.Now().UTC()
	f := &historyFixture{answer: fixtureCells(now, hostileKeys[0], hostileKeys[1])}
	cells := f.answer.Series[0].Cells
	for i := range cells {
		cells[i].Shards = []history.ShardCell{{Shard: hostileKeys[2], Records: 10, Share: 1}}
	}
	for i, k := range hostileKeys {
		f.incidents = append(f.incidents, history.Incident{ID: k, Table: "orders", Index: k, Cause: k, Keys: []string{k}, Class: "write",
			Severity: "critical", Start: now.Add(-time.Duration(i+1) * time.Minute), Summary: k, Fix: k})
	}
	base := f.serve(t, h.URL)
	tab := testenv.NewTab(t)
	tab.Run(t, settle, chromedp.Navigate(base+"/#/table/orders"))
	tab.WaitFor(t, `document.querySelector('section.heat[data-cells="60"]')`, settle, "the heatmap")
	var labels []string
	tab.Eval(t, `[...document.querySelectorAll('section.heat .heat-label')].map((e) => e.textContent)`, &labels)
	if strings.Join(labels, "\n") != strings.Join([]string{hostileKeys[0], hostileKeys[1], "the rest", hostileKeys[2]}, "\n") {
		t.Errorf("the heatmap's rows read %q", labels)
	}
	if tip := hoverText(t, tab, hostileKeys[0], 0, "keys"); !strings.HasPrefix(tip, hostileKeys[0]+"\n") {
		t.Errorf("the tooltip reads %q, want the key first", tip)
	}
	if tip := hoverText(t, tab, hostileKeys[2], 0, "shards"); !strings.HasPrefix(tip, "shard "+hostileKeys[2]+"\n") {
		t.Errorf("the shard's tooltip reads %q", tip)
	}
	tab.Run(t, settle, chromedp.Evaluate(`location.hash = '#/'`, nil))
	tab.WaitFor(t, fmt.Sprintf(`document.querySelectorAll('li.incident').length === %d`, len(hostileKeys)), settle, "the incidents")
	var codes []string
	tab.Eval(t, `[...document.querySelectorAll('li.incident code.key')].map((e) => e.textContent)`, &codes)
	if len(codes) != len(hostileKeys) {
		t.Errorf("the incidents name the keys %q", codes)
	}
	noInjection(t, tab)
}

// noInjection fails the test when the page holds an element or ran a
// script that came from data.
func noInjection(t *testing.T, tab *testenv.Tab) {
	t.Helper()
	var got struct {
		Pwned    any
		Injected int
	}
	tab.Eval(t, `({Pwned: window.pwned || null, Injected: document.querySelectorAll('#app img, #app svg, #app script, [onerror], [onload], [onmouseover]').length})`, &got)
	if got.Pwned != nil || got.Injected != 0 {
		t.Errorf("data became markup: window.pwned %v, %d injected elements", got.Pwned, got.Injected)
	}
	if errs := tab.Errors(); len(errs) > 0 {
		t.Errorf("errors in the page: %q", errs)
	}
}

// TestHTMLReportEscapesKeysInHeatmap: the HTML report of keys holding
// markup draws them in its heatmap as text.
func TestHTMLReportEscapesKeysInHeatmap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	var lines []string
	for n := range 120 {
		k := hostileKeys[n%len(hostileKeys)]
		if n%8 >= len(hostileKeys) {
			k = hostileKeys[0] // the heaviest
		}
		pk, _ := json.Marshal(k)
		lines = append(lines, fmt.Sprintf(`{"ts":"2026-11-22T10:%02d:%02dZ","table":"orders","pk":%s,"op":"PutItem","units":10}`, n/60, n%60, pk))
	}
	input := filepath.Join(t.TempDir(), "hostile.jsonl")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
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
	tab.Run(t, settle, chromedp.Navigate("file://"+path+"#/table/orders"))
	tab.WaitFor(t, `document.querySelector('section.heat canvas[data-heatmap="keys"]') && document.querySelector('section.heat').dataset.cells > 0`, settle, "the report's heatmap")
	var rows []string
	tab.Eval(t, `document.querySelector('canvas[data-heatmap="keys"]').hotkeydHeatmap.rows`, &rows)
	if len(rows) != len(hostileKeys)+1 || rows[0] != hostileKeys[0] {
		t.Errorf("the heatmap's rows %q, want the %d keys, heaviest first, and the rest", rows, len(hostileKeys))
	}
	if tip := hoverText(t, tab, hostileKeys[0], 0, "keys"); !strings.HasPrefix(tip, hostileKeys[0]+"\n") {
		t.Errorf("the tooltip reads %q", tip)
	}
	noInjection(t, tab)
}

// TestHTMLReportEscapesBinaryKeyText: a binary key (counted by its base64)
// whose bytes are markup is shown in the HTML report beside its base64,
// as text: the page reads it back as it is, no element is made of it and
// no script runs.
func TestHTMLReportEscapesBinaryKeyText(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	// 66 bytes: its base64 is held whole (sketch.MaxKeyBytes).
	text := `</script><script>window.pwned=5</script><img src=x onerror=pwn(6)>`
	key := base64.StdEncoding.EncodeToString([]byte(text))
	var lines []string
	for n := range 60 {
		pk := key
		if n%3 == 2 {
			pk = fmt.Sprintf("OTHER#%d", n)
		}
		lines = append(lines, fmt.Sprintf(`{"ts":"2026-11-22T10:00:%02dZ","table":"orders","pk":%q,"op":"PutItem","units":10}`, n, pk))
	}
	input := filepath.Join(t.TempDir(), "binary.jsonl")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
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
	tab.Run(t, settle, chromedp.Navigate("file://"+path+"#/table/orders"))
	tab.WaitFor(t, `!!document.querySelector('table.keys .keytext')`, settle, "the key's text")
	var got struct{ Key, Text string }
	tab.Eval(t, `({Key: document.querySelector('table.keys td.key > span').textContent, Text: document.querySelector('table.keys .keytext').textContent})`, &got)
	if got.Key != key || got.Text != text {
		t.Errorf("the key reads %q beside %q; want %q beside %q", got.Key, got.Text, key, text)
	}
	noInjection(t, tab)
}
