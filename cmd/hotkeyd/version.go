package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at link time: -ldflags "-X main.version=1.2.3".
var version = "devel"

// buildInfo returns the version, the VCS revision the binary was built from
// ("unknown" without VCS stamping) and the Go version.
func buildInfo() (ver, revision, goVersion string) {
	ver, revision = version, "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if ver == "devel" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			ver = bi.Main.Version
		}
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && revision != "unknown" {
			revision += "-dirty"
		}
	}
	return ver, revision, runtime.Version()
}

func versionString() string {
	v, r, g := buildInfo()
	return fmt.Sprintf("hotkeyd version %s\nrevision: %s\ngo version: %s\n", v, r, g)
}
