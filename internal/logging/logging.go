// Package logging builds hotkeyd's zap logger: logfmt lines for people and
// grep, or JSON objects for log pipelines, at the level asked for.
package logging

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns the process logger writing to w: level is debug, info,
// warn or error; format is logfmt (key=value, for people and for Loki/grep)
// or json (one object per line, for log pipelines).
func New(w io.Writer, level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	out := zapcore.Lock(zapcore.AddSync(w))
	var core zapcore.Core
	switch format {
	case "json":
		ec := zap.NewProductionEncoderConfig()
		ec.TimeKey = "ts"
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		ec.EncodeDuration = zapcore.StringDurationEncoder
		core = zapcore.NewCore(zapcore.NewJSONEncoder(ec), out, lvl)
	case "logfmt", "":
		core = &logfmtCore{LevelEnabler: lvl, out: out, mu: &sync.Mutex{}}
	default:
		return nil, fmt.Errorf("log format %q: want logfmt or json", format)
	}
	return zap.New(core, zap.AddStacktrace(zapcore.DPanicLevel)), nil
}

// logfmtCore is a zapcore.Core printing one logfmt line per entry:
//
//	ts=2026-11-22T10:00:00.123Z level=warn logger=detector msg="hot key" table=orders class=write key=USER#42 share=0.25
//
// Fields keep the order they were given in, so the lines read the same
// every time. Values are quoted only when they must be.
type logfmtCore struct {
	zapcore.LevelEnabler
	out    zapcore.WriteSyncer
	mu     *sync.Mutex
	fields []zapcore.Field
}

// With returns a core that adds fields to every entry.
func (c *logfmtCore) With(fields []zapcore.Field) zapcore.Core {
	clone := *c
	clone.fields = append(append([]zapcore.Field(nil), c.fields...), fields...)
	return &clone
}

// Check adds the core to ce when the entry's level is enabled.
func (c *logfmtCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write prints one entry.
func (c *logfmtCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	var b strings.Builder
	b.WriteString("ts=")
	b.WriteString(e.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	b.WriteString(" level=")
	b.WriteString(e.Level.String())
	if e.LoggerName != "" {
		b.WriteString(" logger=")
		writeLogfmtValue(&b, e.LoggerName)
	}
	b.WriteString(" msg=")
	writeLogfmtValue(&b, e.Message)
	for _, fs := range [][]zapcore.Field{c.fields, fields} {
		for _, f := range fs {
			writeLogfmtField(&b, f)
		}
	}
	if e.Stack != "" {
		b.WriteString(" stacktrace=")
		writeLogfmtValue(&b, e.Stack)
	}
	b.WriteByte('\n')
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := io.WriteString(c.out, b.String())
	return err
}

// Sync flushes the output.
func (c *logfmtCore) Sync() error { return c.out.Sync() }

// writeLogfmtField encodes one zap field through zap's own map encoder (so
// every field type, errors and objects included, is handled the way zap
// handles it) and prints the resulting keys.
func writeLogfmtField(b *strings.Builder, f zapcore.Field) {
	enc := zapcore.NewMapObjectEncoder()
	f.AddTo(enc)
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteByte(' ')
		b.WriteString(k)
		b.WriteByte('=')
		writeLogfmtValue(b, logfmtString(enc.Fields[k]))
	}
}

func logfmtString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return formatFloat(v)
	case float32:
		return formatFloat(float64(v))
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	case time.Duration:
		return v.String()
	case fmt.Stringer:
		return v.String()
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr:
		return fmt.Sprint(v)
	}
	if js, err := json.Marshal(v); err == nil {
		return string(js)
	}
	return fmt.Sprint(v)
}

func formatFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Sprint(f)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// writeLogfmtValue writes s bare when it is non-empty printable text without
// spaces, quotes or '=', and as a Go-quoted string otherwise.
func writeLogfmtValue(b *strings.Builder, s string) {
	if needsQuote(s) {
		b.WriteString(strconv.Quote(s))
		return
	}
	b.WriteString(s)
}

func needsQuote(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if r <= ' ' || r == '=' || r == '"' || r == '\\' || r == 0x7f || !strconv.IsPrint(r) {
			return true
		}
	}
	return false
}
