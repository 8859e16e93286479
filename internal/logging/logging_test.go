package logging

import (
	"bytes"
	"encoding/json"
	"errors"
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
		ts + `level=warn logger=detector msg="hot key" table=orders class=write key=USER#42 share=0.25 recommendation=write_sharding suffix_count=4$`,
		ts + `level=info msg="odd values" empty="" spaced="a b=\\"c\\"" error=boom window=1m0s list="\[\\"x\\",\\"y\\"\]" bad="\\xff"$`,
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
	log.Named("detector").Warn("hot key", zap.String("key", "USER#42"), zap.Float64("share", 0.25))
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, buf.String())
	}
	for k, want := range map[string]any{"level": "warn", "logger": "detector", "msg": "hot key", "key": "USER#42", "share": 0.25} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
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
