package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A port picked free can be taken by another process (another test's
// emulator, or a connection's local port) before the emulator binds it.
// Each emulator is therefore started on a picked port, checked to listen
// on it itself, and started again on a new port when its output says the
// port was taken; a start that ends or stalls is seen at once, not after
// the whole start timeout.

// portAttempts bounds how many ports a start tries.
const portAttempts = 8

// errPortTaken says a child could not bind the port it was given.
var errPortTaken = errors.New("port taken by another process")

// child is an emulator process started for a test, in a process group of
// its own so that stopping it reaches nothing else.
type child struct {
	name   string
	cmd    *exec.Cmd
	out    *lockedBuffer
	exited chan struct{}
	once   sync.Once
}

// startChild starts cmd, its output kept (the first limit bytes).
func startChild(name string, cmd *exec.Cmd, limit int) (*child, error) {
	out := &lockedBuffer{limit: limit}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = dieWithTest(&syscall.SysProcAttr{Setpgid: true})
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, out: out, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.exited) }()
	return c, nil
}

// stop kills the child's process group and waits for it to exit. Safe to
// call more than once.
func (c *child) stop() {
	c.once.Do(func() {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		_ = c.cmd.Process.Kill()
		<-c.exited
	})
}

// await waits until the child listens on port itself and ready returns
// nil. It returns errPortTaken (the child stopped) when the child's output
// says another process holds the port, and an error at once when the child
// exits.
func (c *child) await(port int, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		select {
		case <-c.exited:
			if portTaken(c.out.String()) {
				return errPortTaken
			}
			return fmt.Errorf("%s exited while starting: %v\n%s", c.name, c.cmd.ProcessState, c.out.String())
		default:
		}
		if portTaken(c.out.String()) {
			// Java's server stays up after it failed to bind.
			c.stop()
			return errPortTaken
		}
		if owns, err := listensOn(c.cmd.Process.Pid, port); err != nil {
			last = err
		} else if !owns {
			last = fmt.Errorf("not listening on port %d yet", port)
		} else {
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			last = ready(cctx)
			ccancel()
			if last == nil {
				return nil
			}
		}
		select {
		case <-c.exited:
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	c.stop()
	return fmt.Errorf("%s did not answer on port %d within %v: %v\n%s", c.name, port, timeout, last, c.out.String())
}

// startOnPort starts a child with start(port) and awaits it. With port 0
// it picks a port with pick (freePort unless a test says otherwise), and a
// new one each time the picked port turns out taken; with a given port (a
// restart that must keep its address) it tries that port again until
// timeout. It returns the port the child listens on.
func startOnPort(name string, port int, pick func() (int, error), timeout time.Duration, start func(port int) (*child, error), ready func(ctx context.Context, port int) error) (*child, int, error) {
	fixed := port != 0
	if pick == nil {
		pick = freePort
	}
	deadline := time.Now().Add(timeout)
	for attempt := 1; ; attempt++ {
		if !fixed {
			p, err := pick()
			if err != nil {
				return nil, 0, fmt.Errorf("%s: pick a port: %w", name, err)
			}
			port = p
		}
		c, err := start(port)
		if err != nil {
			return nil, 0, err
		}
		err = c.await(port, time.Until(deadline), func(ctx context.Context) error { return ready(ctx, port) })
		if err == nil {
			return c, port, nil
		}
		c.stop()
		if !errors.Is(err, errPortTaken) {
			return nil, 0, err
		}
		if time.Now().After(deadline) || (!fixed && attempt == portAttempts) {
			return nil, 0, fmt.Errorf("%s: port %d taken by another process (%d attempts)", name, port, attempt)
		}
		if fixed {
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// portTaken reports whether a child's output says the port it was given
// is taken: Java's BindException, Node's EADDRINUSE, Go's "address already
// in use".
func portTaken(out string) bool {
	lower := strings.ToLower(out)
	return strings.Contains(lower, "address already in use") || strings.Contains(out, "EADDRINUSE") ||
		strings.Contains(out, "Failed to bind")
}

// listensOn reports whether process pid holds a listening TCP socket on
// port, from /proc. Where there is no /proc it answers true, and the
// readiness probe alone decides.
func listensOn(pid, port int) (bool, error) {
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat("/proc/self/fd"); serr != nil {
			return true, nil // no /proc on this system
		}
	}
	if err != nil {
		return false, fmt.Errorf("read the sockets of pid %d: %w", pid, err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/net/" + table)
		if err != nil {
			continue // no IPv6, say
		}
		found := false
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			i := strings.LastIndexByte(fields[1], ':')
			p, err := strconv.ParseUint(fields[1][i+1:], 16, 16)
			if err == nil && int(p) == port && inodes[fields[9]] {
				found = true
				break
			}
		}
		f.Close()
		if found {
			return true, nil
		}
	}
	return false, nil
}
