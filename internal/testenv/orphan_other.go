//go:build !linux

package testenv

import "syscall"

// dieWithTest: only Linux can tie a child's life to its parent's; the
// cleanups stop the processes elsewhere.
func dieWithTest(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
