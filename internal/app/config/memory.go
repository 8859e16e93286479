package config

import (
	"math"
	"runtime/debug"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/sketch"
)

// LogMemoryBudget says how much memory the tables can take (the memory
// model of docs/limits.md), and warns when GOMEMLIMIT leaves the Go
// collector less than a quarter of it for garbage: under that limit the
// process collects all the time, or is killed by a memory limit above it.
func LogMemoryBudget(log *zap.Logger, c sketch.Config) {
	budget := int64(c.MemoryBudget())
	limit := debug.SetMemoryLimit(-1)
	fields := []zap.Field{zap.Int("max_tables", c.MaxTables), zap.Int64("memory_budget_mib", budget>>20)}
	if limit == math.MaxInt64 {
		log.Info("memory budget", fields...)
		return
	}
	fields = append(fields, zap.Int64("gomemlimit_mib", limit>>20))
	if limit < budget+budget/4 {
		log.Warn("GOMEMLIMIT is under 1.25 × the memory budget of max_tables tables: lower max_tables or raise GOMEMLIMIT and the memory limit (docs/limits.md)", fields...)
		return
	}
	log.Info("memory budget", fields...)
}
