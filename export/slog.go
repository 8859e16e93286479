package export

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogHandler passes the exporter-toolkit's slog records to zap, so the web
// server logs like the rest of hotkeyd.
type slogHandler struct {
	log *zap.Logger
}

func newSlogLogger(log *zap.Logger) *slog.Logger {
	return slog.New(slogHandler{log: log})
}

func slogLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}

func (h slogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(slogLevel(l))
}

func (h slogHandler) Handle(_ context.Context, r slog.Record) error {
	fields := make([]zap.Field, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, zap.Any(a.Key, a.Value.Resolve().Any()))
		return true
	})
	if ce := h.log.Check(slogLevel(r.Level), r.Message); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (h slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := make([]zap.Field, 0, len(attrs))
	for _, a := range attrs {
		fields = append(fields, zap.Any(a.Key, a.Value.Resolve().Any()))
	}
	return slogHandler{log: h.log.With(fields...)}
}

func (h slogHandler) WithGroup(name string) slog.Handler {
	return slogHandler{log: h.log.With(zap.Namespace(name))}
}
