package export

import (
	"log/slog"
	"math"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
)

// newSlogLogger returns a slog.Logger writing through log's core with zap's
// own slog bridge, so the exporter-toolkit's web server logs like the rest
// of hotkeyd: same output, level and logger name. Stack traces stay off, as
// everywhere in hotkeyd below a panic (the bridge would add one to every
// error record).
func newSlogLogger(log *zap.Logger) *slog.Logger {
	return slog.New(zapslog.NewHandler(log.Core(),
		zapslog.WithName(log.Name()),
		zapslog.WithCaller(true),
		zapslog.AddStacktraceAt(slog.Level(math.MaxInt))))
}
