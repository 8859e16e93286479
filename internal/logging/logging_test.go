package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestLogfmtLogger(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "info", "logfmt")
	if err != nil {
		t.Fatal(err)
	}
	log.Named("detector").With(zap.String("table", "orders")).Warn("hot key",
		zap.String("class", "write"), zap.String("key", "USER#42"), zap.Float64("share", 0.25),
		zap.String("recommendation", "write_sharding"), zap.Int("suffix_count", 4))
	log.Info("odd values", zap.String("empty", ""), zap.String("spaced", `a b="c"`), zap.Error(errors.New("boom")),
		zap.Duration("window", time.Minute), zap.Strings("list", []string{"x", "y"}), zap.String("bad", "\xff"))
	log.Debug("not shown")

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	ts := `ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z `
	for i, want := range []string{
		ts + `level=warn caller=logging_test.go:\d+ msg="hot key" table=orders class=write key=USER#42 share=0.25 recommendation=write_sharding suffix_count=4 logger=detector$`,
		ts + `level=info caller=logging_test.go:\d+ msg="odd values" empty="" spaced="a b=\\"c\\"" error=boom window=1m0s list="\[\\"x\\",\\"y\\"\]" bad="\\xff"$`,
	} {
		if !regexp.MustCompile("^" + want).MatchString(lines[i]) {
			t.Errorf("line %d\n got: %s\nwant: %s", i, lines[i], want)
		}
	}
}

func TestJSONLogger(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "warn", "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("not shown")
	log.Named("detector").Warn("hot key", zap.String("key", "USER#42"), zap.Float64("share", 0.25),
		zap.Strings("list", []string{"x", "y"}), zap.Float64("ratio", math.Inf(1)))
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, buf.String())
	}
	for k, want := range map[string]any{"level": "warn", "logger": "detector", "msg": "hot key", "key": "USER#42", "share": 0.25} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if c, _ := got["caller"].(string); !regexp.MustCompile(`^logging_test\.go:\d+$`).MatchString(c) {
		t.Errorf("caller = %q, want this file and line", c)
	}
	if l, _ := got["list"].([]any); len(l) != 2 || l[0] != "x" {
		t.Errorf("list = %v, want a JSON array", got["list"])
	}
	if got["ratio"] != "+Inf" {
		t.Errorf("ratio = %v, want the text +Inf", got["ratio"])
	}
	if _, ok := got["ts"].(string); !ok {
		t.Errorf("ts missing: %v", got)
	}
}

func TestLoggerBadSettings(t *testing.T) {
	if _, err := New(&bytes.Buffer{}, "loud", "logfmt"); err == nil {
		t.Error("level loud accepted")
	}
	if _, err := New(&bytes.Buffer{}, "info", "xml"); err == nil {
		t.Error("format xml accepted")
	}
}

// TestJSONEscapesInvisibleCharacters logs a key holding bidirectional
// overrides, zero-width, C1 control and tag characters: the JSON line
// holds none of them raw, only \u escapes, and still parses to the key.
func TestJSONEscapesInvisibleCharacters(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	key := "USER#\u202eevil\u202c\u2066x\u2069\u200b\u200f\u061c\u0085\ufeff\U000e0041é€😀"
	log.Warn("hot key \u202e", zap.String("key", key))
	line := buf.String()
	for _, r := range []rune{'\u202e', '\u202c', '\u2066', '\u2069', '\u200b', '\u200f', '\u061c', '\u0085', '\ufeff', '\U000e0041'} {
		if strings.ContainsRune(line, r) {
			t.Errorf("the line holds U+%04X raw: %q", r, line)
		}
	}
	for _, esc := range []string{`\u202e`, `\u0085`, `\udb40\udc41`} {
		if !strings.Contains(line, esc) {
			t.Errorf("the line lacks the escape %s: %s", esc, line)
		}
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, line)
	}
	if got["key"] != key || got["msg"] != "hot key \u202e" {
		t.Errorf("key %q msg %q, want %q and the message as logged", got["key"], got["msg"], key)
	}
	if !strings.HasSuffix(line, "}\n") || strings.Count(line, "\n") != 1 {
		t.Errorf("not one line: %q", line)
	}
}

// TestSlog: a library's slog lines come out as the zap logger's do: the
// same handler and level, the logger's fields first and its name last,
// values as zap writes them, no stack trace on errors; groups nest.
func TestSlog(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "info", "logfmt")
	if err != nil {
		t.Fatal(err)
	}
	s := Slog(log.Named("web").With(zap.String("listener", "main")))
	s.Debug("dropped below the level")
	s.With("address", "127.0.0.1:9529").Info("Listening on", "http2", false, "took", time.Second, "list", []string{"x"})
	s.Error("TLS handshake error", "err", errors.New("EOF"))
	s.WithGroup("tls").With("version", "1.3").Info("grouped", "cipher", "x")
	log.Named("web").With(zap.String("listener", "main")).Info("Listening on", zap.String("address", "127.0.0.1:9529"),
		zap.Bool("http2", false), zap.Duration("took", time.Second), zap.Strings("list", []string{"x"}))

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want 4:\n%s", len(lines), buf.String())
	}
	ts := `ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z `
	for i, want := range []string{
		ts + `level=info caller=logging_test.go:\d+ msg="Listening on" listener=main address=127.0.0.1:9529 http2=false took=1s list="\[\\"x\\"\]" logger=web$`,
		ts + `level=error caller=logging_test.go:\d+ msg="TLS handshake error" listener=main err=EOF logger=web$`,
		ts + `level=info caller=logging_test.go:\d+ msg=grouped listener=main tls.version=1.3 tls.cipher=x logger=web$`,
	} {
		if !regexp.MustCompile("^" + want).MatchString(lines[i]) {
			t.Errorf("line %d\n got: %s\nwant: %s", i, lines[i], want)
		}
	}
	// The same line logged through zap reads the same but for its caller.
	caller := regexp.MustCompile(` caller=\S+ `)
	strip := func(l string) string { return caller.ReplaceAllString(l[strings.Index(l, " level="):], " ") }
	if strip(lines[0]) != strip(lines[3]) {
		t.Errorf("slog and zap lines differ:\n slog: %s\n  zap: %s", lines[0], lines[3])
	}

	Slog(zap.NewNop()).Info("a logger New did not make writes nothing") // must not panic
}
