package testenv

import "syscall"

// dieWithTest makes the kernel kill a process started for a test when the
// test binary dies without its cleanups (a test timeout's panic, a
// SIGKILL): an emulator or daemon left running would hold its memory and
// ports into the next run on the machine.
func dieWithTest(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Pdeathsig = syscall.SIGKILL
	return a
}
