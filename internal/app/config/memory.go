package config

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/sketch"
)

// DaemonGCPercent is the daemon's garbage-collection target (GOGC) unless
// its user sets GOGC. Almost all of the daemon's heap lives as long as the
// window (the tables' sketches), while each tick's snapshot and each
// scrape are garbage a second later: at Go's default of 100 % the heap
// would grow to twice the tables' memory plus those. At 25 % 1 000 small
// tables stay near 128 MiB resident instead of about 157, for about 5 %
// of a core more (docs/limits.md, "1 000 small tables").
const DaemonGCPercent = 25

// SetDaemonGC sets the collector's target to DaemonGCPercent unless GOGC
// is set, and returns the target in force.
func SetDaemonGC() int {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DaemonGCPercent)
		return DaemonGCPercent
	}
	m := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(m)
	return int(m[0].Value.Uint64())
}

// LogMemoryBudget says how much memory the tables can take (the memory
// model of docs/limits.md) and the collector's target gogc, and warns
// when GOMEMLIMIT leaves the Go collector less than a quarter of it for
// garbage: under that limit the process collects all the time, or is
// killed by a memory limit above it.
func LogMemoryBudget(log *zap.Logger, c sketch.Config, gogc int) {
	budget := int64(c.MemoryBudget())
	limit := debug.SetMemoryLimit(-1)
	fields := []zap.Field{zap.Int("max_tables", c.MaxTables), zap.Int64("memory_budget_mib", budget>>20), zap.Int("gogc", gogc)}
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
