package export

import (
	"testing"

	"go.uber.org/zap"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func nopLogger() *zap.Logger { return zap.NewNop() }
