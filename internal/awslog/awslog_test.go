package awslog

import (
	"testing"

	"github.com/aws/smithy-go/logging"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLogfAtDebugWithTheSDKLevel(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := New(zap.New(core))
	l.Logf(logging.Warn, "falling back to IMDSv1: %v", "403")
	all := logs.All()
	if len(all) != 1 {
		t.Fatalf("%d entries, want 1", len(all))
	}
	e := all[0]
	if e.Level != zapcore.DebugLevel || e.LoggerName != "aws" || e.Message != "falling back to IMDSv1: 403" {
		t.Errorf("entry %+v", e.Entry)
	}
	if got := e.ContextMap()["sdk_level"]; got != "warn" {
		t.Errorf("sdk_level %v, want warn", got)
	}

	quiet, none := observer.New(zapcore.InfoLevel)
	New(zap.New(quiet)).Logf(logging.Warn, "not shown")
	if none.Len() != 0 {
		t.Errorf("logged at info level: %v", none.All())
	}
	New(nil).Logf(logging.Debug, "no logger") // must not panic
}
