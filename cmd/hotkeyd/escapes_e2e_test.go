package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
