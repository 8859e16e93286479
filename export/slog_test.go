package export

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestSlogLogger checks what the web server's slog lines become: the zap
// logger's level filter, name and fields, and no stack trace on errors.
func TestSlogLogger(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	log := newSlogLogger(zap.New(core).Named("web"))
	log.Debug("dropped below the level")
	log.With("address", "127.0.0.1:9529").Info("Listening on", "http2", false)
	log.Error("TLS handshake error", "err", "EOF")
	got := logs.All()
	if len(got) != 2 {
		t.Fatalf("%d entries, want 2: %+v", len(got), got)
	}
	if e := got[0]; e.LoggerName != "web" || e.Message != "Listening on" || e.Level != zapcore.InfoLevel ||
		e.ContextMap()["address"] != "127.0.0.1:9529" || e.ContextMap()["http2"] != false {
		t.Errorf("info entry %+v", e)
	}
	if e := got[1]; e.Level != zapcore.ErrorLevel || e.Stack != "" || e.ContextMap()["err"] != "EOF" {
		t.Errorf("error entry %+v (stack %q)", e, e.Stack)
	}
}
