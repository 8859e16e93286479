package main

import (
	"fmt"
	"runtime/debug"

	"github.com/prometheus/common/version"
)

// buildVersion is the version hotkeyd reports: the one stamped at link time
// into github.com/prometheus/common/version, as Prometheus projects do
// (-ldflags "-X github.com/prometheus/common/version.Version=1.2.3"), else
// the module version a go install records, else "unknown".
func buildVersion() string {
	if version.Version != "" {
		return version.Version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "unknown"
}

// versionString is what hotkeyd version prints; the same values label
// hotkeyd_build_info.
func versionString() string {
	return fmt.Sprintf("hotkeyd version %s\nrevision: %s\ngo version: %s\n", buildVersion(), version.GetRevision(), version.GoVersion)
}
