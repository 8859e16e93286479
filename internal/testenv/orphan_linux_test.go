package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// orphanHelper, set in the environment, makes TestChildDiesWithTheTest's
// run of this binary start a child as the emulators are started, print its
// pid and wait to be killed.
const orphanHelper = "HOTKEYD_TESTENV_ORPHAN_HELPER"

// A process started for a test dies with the test binary, even when the
// binary is killed before its cleanups run (as a test timeout's panic
// does): the helper run of this binary starts a child and is killed with
// SIGKILL; the child must go too.
func TestChildDiesWithTheTest(t *testing.T) {
	if os.Getenv(orphanHelper) != "" {
		c, err := startChild("sleeper", exec.Command("sleep", "600"), 1<<10)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("child", c.cmd.Process.Pid)
		time.Sleep(time.Hour) // until killed
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithTheTest$")
	helper.Env = append(os.Environ(), orphanHelper+"=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "child "); ok {
			pid, _ = strconv.Atoi(rest)
			break
		}
	}
	if pid == 0 {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		t.Fatalf("the helper printed no child pid: %v", sc.Err())
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("child %d not running before the helper was killed", pid)
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	deadline := time.Now().Add(time.Minute)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still running a minute after the test binary that started it was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid is a process that has not exited (a zombie
// waiting to be reaped has).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
