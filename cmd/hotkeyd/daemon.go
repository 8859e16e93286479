package main

import "fmt"

// runDaemon runs the long-lived daemon (run), or the same daemon on the demo
// workload (demo).
func runDaemon(f *flags, demo bool, io stdio) int {
	if f.configCheck {
		return checkConfig(f, io)
	}
	fmt.Fprintln(io.stderr, "hotkeyd: the daemon is not available in this build yet")
	return 1
}
