package main

import (
	"fmt"

	"github.com/hotkeyd/hotkeyd/export"
)

// version is stamped at link time: -ldflags "-X main.version=1.2.3". Left
// at "devel", the module version or "unknown" is shown.
var version = "devel"

// stampedVersion returns the link-time version, or "" when none was stamped.
func stampedVersion() string {
	if version == "devel" {
		return ""
	}
	return version
}

// versionString is what hotkeyd version prints; the same values label
// hotkeyd_build_info.
func versionString() string {
	bi := export.ReadBuildInfo(export.BuildInfo{Version: stampedVersion()})
	return fmt.Sprintf("hotkeyd version %s\nrevision: %s\ngo version: %s\n", bi.Version, bi.Revision, bi.GoVersion)
}
