// Package logging builds hotkeyd's zap logger: Prometheus-style logfmt
// lines for people and grep, or JSON objects for log pipelines, at the
// level asked for. The lines are written by the slog handler of
// github.com/prometheus/common/promslog (the one Prometheus and its
// exporters log through, in its go-kit style: ts=, level= in lower case),
// behind a zapcore.Core, so that every component keeps logging through
// one zap logger. A library that logs through log/slog (the exporter
// toolkit's web server) gets a slog.Logger over the same handler (Slog):
// every line takes one way, to that handler, and none goes from slog to
// zap and back.
package logging

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/prometheus/common/promslog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns the process logger writing to w: level is debug, info,
// warn or error; format is logfmt (key=value, for people and for Loki/grep)
// or json (one object per line, for log pipelines).
//
//	ts=2026-11-22T10:00:00.123Z level=warn caller=raise.go:88 msg="hot key" table=orders class=write key=USER#42 share=0.25 logger=detector
func New(w io.Writer, level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	if format == "" {
		format = "logfmt"
	}
	pf := promslog.NewFormat()
	if err := pf.Set(format); err != nil {
		return nil, fmt.Errorf("log format %q: want logfmt or json", format)
	}
	out := w
	if format == "json" {
		// logfmt quotes such characters (strconv.Quote); JSON writes them
		// raw.
		w = &escaper{w: w}
	}
	pl := promslog.NewLevel()
	if err := pl.Set(slogLevel(lvl).String()); err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	h := promslog.New(&promslog.Config{Level: pl, Format: pf, Style: promslog.GoKitStyle, Writer: w}).Handler()
	core := &slogCore{LevelEnabler: lvl, h: h, json: format == "json", out: out}
	return zap.New(core, zap.AddCaller(), zap.AddStacktrace(zapcore.DPanicLevel)), nil
}

// slogLevel maps a zap level to slog's; zap's levels above error are
// errors to slog.
func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// slogCore is a zapcore.Core that hands every entry to an slog.Handler:
// its time, level, caller and message, the fields in the order they were
// given (those of With first), then the logger's name and the stack
// trace, if any. The message comes first after the caller and the fields
// right after it, so that a line reads (and greps) as "what happened,
// to what".
type slogCore struct {
	zapcore.LevelEnabler
	h      slog.Handler
	json   bool // the handler writes JSON: lists and objects stay structured
	out    io.Writer
	fields []zapcore.Field
}

// With returns a core that adds fields to every entry.
func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	clone := *c
	clone.fields = append(slices.Clip(c.fields), fields...)
	return &clone
}

// Check adds the core to ce when the entry's level is enabled.
func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write hands one entry to the handler.
func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	var pc uintptr
	if e.Caller.Defined {
		pc = e.Caller.PC
	}
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, pc)
	for _, fs := range [][]zapcore.Field{c.fields, fields} {
		for _, f := range fs {
			c.addField(&r, f)
		}
	}
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	if e.Stack != "" {
		r.AddAttrs(slog.String("stacktrace", e.Stack))
	}
	return c.h.Handle(context.Background(), r)
}

// Slog returns a slog.Logger, for a library that logs through log/slog,
// that writes as log does: to the handler of New, at its level, with log's
// fields first and its name last (logger=web), and values as the zap
// fields' are written. A logger New did not make (a test's zap.NewNop or
// observer) gets a slog.Logger that writes nothing.
func Slog(log *zap.Logger) *slog.Logger {
	c, ok := log.Core().(*slogCore)
	if !ok {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(&slogHandler{core: c, name: log.Name()})
}

// slogHandler is the slog.Handler of Slog: the core's handler, given the
// core's fields before a record's attributes and the logger's name after
// them, as the core writes a zap entry.
type slogHandler struct {
	core   *slogCore
	name   string
	attrs  []slog.Attr // WithAttrs's outside any group
	groups []slogGroup // WithGroup's, outermost first
}

type slogGroup struct {
	name  string
	attrs []slog.Attr
}

// Enabled reports whether the handler writes records of level l.
func (h *slogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.core.h.Enabled(ctx, l)
}

// WithAttrs returns a handler that adds as to every record, in the
// innermost group.
func (h *slogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.groups = slices.Clone(h.groups)
	if n := len(c.groups); n > 0 {
		c.groups[n-1].attrs = append(slices.Clip(c.groups[n-1].attrs), as...)
	} else {
		c.attrs = append(slices.Clip(c.attrs), as...)
	}
	return &c
}

// WithGroup returns a handler that puts the attributes that follow in the
// group name.
func (h *slogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.groups = append(slices.Clip(h.groups), slogGroup{name: name})
	return &c
}

// Handle writes r with the core's fields, the handler's attributes and
// groups, and the logger's name.
func (h *slogHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	for _, f := range h.core.fields {
		h.core.addField(&out, f)
	}
	for _, a := range h.attrs {
		out.AddAttrs(h.core.attr(a))
	}
	var inner []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		inner = append(inner, h.core.attr(a))
		return true
	})
	for i := len(h.groups) - 1; i >= 0; i-- {
		g := h.groups[i]
		attrs := make([]slog.Attr, 0, len(g.attrs)+len(inner))
		for _, a := range g.attrs {
			attrs = append(attrs, h.core.attr(a))
		}
		inner = []slog.Attr{{Key: g.name, Value: slog.GroupValue(append(attrs, inner...)...)}}
	}
	out.AddAttrs(inner...)
	if h.name != "" {
		out.AddAttrs(slog.String("logger", h.name))
	}
	return h.core.h.Handle(ctx, out)
}

// attr is a slog attribute with its value as a zap field's would be
// written (value).
func (c *slogCore) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]slog.Attr, len(attrs))
		for i, g := range attrs {
			out[i] = c.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny, slog.KindTime, slog.KindFloat64:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, err.Error()) // as zap.Error writes it
		}
		return slog.Any(a.Key, c.value(v.Any()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// addField encodes one zap field through zap's own map encoder (so every
// field type, errors and objects included, is handled the way zap handles
// it) and adds the resulting keys, sorted, to r.
func (c *slogCore) addField(r *slog.Record, f zapcore.Field) {
	enc := zapcore.NewMapObjectEncoder()
	f.AddTo(enc)
	for _, k := range slices.Sorted(mapsKeys(enc.Fields)) {
		r.AddAttrs(slog.Any(k, c.value(enc.Fields[k])))
	}
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// value is what the handler is given for a field's value: scalars as they
// are; a time in UTC; lists and objects as JSON text in logfmt lines; NaN
// and infinities as text in JSON objects, which have no numbers for them.
func (c *slogCore) value(v any) any {
	switch v := v.(type) {
	case string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr, time.Duration:
		return v
	case float64:
		return c.float(v)
	case float32:
		return c.float(float64(v))
	case time.Time:
		return v.UTC()
	case fmt.Stringer:
		return v.String()
	}
	if c.json {
		return v
	}
	if js, err := json.Marshal(v); err == nil {
		return string(js)
	}
	return fmt.Sprint(v)
}

func (c *slogCore) float(f float64) any {
	if c.json && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return fmt.Sprint(f)
	}
	return f
}

// escaper writes JSON lines with every control, format (bidirectional
// overrides such as U+202E, zero-width characters) and line or paragraph
// separator character written as a \uXXXX escape instead of raw: a key
// from the input cannot reorder or hide what a terminal or a log viewer
// shows. Such characters can only stand inside a JSON string there, where
// the escape means the same character, so the objects parse to the same
// values.
type escaper struct {
	w   io.Writer
	buf []byte
}

// escaped reports whether r, past ASCII (whose controls the handler
// escapes itself), is written as an escape.
func escaped(r rune) bool {
	return r > unicode.MaxASCII && r != utf8.RuneError && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

func (e *escaper) Write(p []byte) (int, error) {
	i := slices.IndexFunc(p, func(b byte) bool { return b >= utf8.RuneSelf })
	if i < 0 {
		return e.w.Write(p)
	}
	e.buf = append(e.buf[:0], p[:i]...)
	for i < len(p) {
		r, n := utf8.DecodeRune(p[i:])
		switch {
		case !escaped(r):
			e.buf = append(e.buf, p[i:i+n]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			e.buf = fmt.Appendf(e.buf, `\u%04x\u%04x`, r1, r2)
		default:
			e.buf = fmt.Appendf(e.buf, `\u%04x`, r)
		}
		i += n
	}
	if _, err := e.w.Write(e.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Sync flushes the output when it can be flushed (a file).
func (c *slogCore) Sync() error {
	if s, ok := c.out.(interface{ Sync() error }); ok {
		return s.Sync()
	}
	return nil
}
