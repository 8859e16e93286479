package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary returns the path of a hotkeyd binary built from this checkout's
// ./cmd/hotkeyd. It is built once per test binary (later calls return the
// same path), without -race so that end-to-end tests stay fast; the
// packages under test still run with -race in their own process. A build
// failure fails the test.
//
// The binary lives in the user's temporary directory under
// hotkeyd-testenv/<checkout>/, one folder per checkout (so that tests of
// two checkouts of the repository never run each other's binary), and is
// replaced atomically on every build, so test binaries running in parallel
// never see a half-written file.
func Binary(t testing.TB) string {
	t.Helper()
	hkBuild.once.Do(func() { hkBuild.path, hkBuild.err = hkBuildBinary() })
	if hkBuild.err != nil {
		t.Fatalf("build hotkeyd: %v", hkBuild.err)
	}
	return hkBuild.path
}

var hkBuild struct {
	once sync.Once
	path string
	err  error
}

func hkBuildBinary() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "hotkeyd-testenv", hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "hotkeyd-*.tmp")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-o", tmp.Name(), "./cmd/hotkeyd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/hotkeyd: %w\n%s", err, out)
	}
	final := filepath.Join(dir, "hotkeyd")
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", err
	}
	return final, nil
}

// HotkeydOptions change how StartHotkeyd runs the process. The zero value
// is fine for most tests.
type HotkeydOptions struct {
	// Stdin is the process's standard input (a jsonl source on "-");
	// nil means an empty one.
	Stdin io.Reader
	// Dir is the working directory; empty means the test's.
	Dir string
	// Env is added to the test process's environment.
	Env []string
	// NoWaitReady returns as soon as the HTTP server listens, without
	// waiting for /-/ready: for tests of a daemon that is not ready on
	// purpose (a source that cannot reach its endpoint).
	NoWaitReady bool
	// Timeout bounds the wait for the listen address and for readiness;
	// zero means 30 s.
	Timeout time.Duration
	// ListenFromConfig leaves the listen address to the configuration
	// file (its listen key) instead of adding --web.listen-address.
	ListenFromConfig bool
}

// Hotkeyd is a hotkeyd process started by StartHotkeyd. Its methods are
// safe for concurrent use.
type Hotkeyd struct {
	// URL is the base URL of the process's HTTP server, e.g.
	// "http://127.0.0.1:41234" (no trailing slash).
	URL string

	t       testing.TB
	cmd     *exec.Cmd
	stdout  *lockedBuffer
	stderr  *lockedBuffer
	exited  chan struct{}
	exitErr error
	stopped sync.Once
	code    int
	killed  bool
}

// StartHotkeyd runs the hotkeyd binary (see Binary) with args, e.g.
//
//	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "run", "--config.file", cfgPath)
//	code, body := h.Get(t, "/api/v1/hotkeys")
//	h.WaitLog(t, `msg="hot key"`, 10*time.Second)
//
// It adds --web.listen-address=127.0.0.1:0 unless args already hold a
// --web.listen-address (or opts.ListenFromConfig), so tests never fight
// over a port: the address the process bound is read from its "hotkeyd
// started" log line (logfmt or JSON). It then waits until GET /-/ready answers 200, unless
// opts.NoWaitReady. A process that exits or never gets ready fails the test
// with its stderr.
//
// At cleanup the process gets SIGTERM (the way systemd and Kubernetes stop
// it) and the test fails if it does not exit with status 0 within 15 s, so
// every end-to-end test also checks the clean shutdown. Call Stop first to
// look at the exit status yourself. When the test failed, the process's
// stderr is logged.
func StartHotkeyd(t testing.TB, opts HotkeydOptions, args ...string) *Hotkeyd {
	t.Helper()
	bin := Binary(t)
	if !hkHasFlag(args, "--web.listen-address") && !opts.ListenFromConfig {
		args = append(args, "--web.listen-address=127.0.0.1:0")
	}
	if runsDaemon(args) && !hkHasFlag(args, "--history.path") {
		// The daemon's history goes to the test's own directory, never to
		// data/ in the source tree.
		args = append(args, "--history.path="+t.TempDir())
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	h := &Hotkeyd{t: t, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	h.cmd = exec.Command(bin, args...)
	h.cmd.Dir = opts.Dir
	h.cmd.Env = append(os.Environ(), opts.Env...)
	h.cmd.Stdin = opts.Stdin
	h.cmd.Stdout = h.stdout
	h.cmd.Stderr = h.stderr
	h.cmd.SysProcAttr = dieWithTest(&syscall.SysProcAttr{})
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start hotkeyd: %v", err)
	}
	go func() {
		h.exitErr = h.cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		code := h.Stop(t)
		if code != 0 && !h.killed {
			t.Errorf("hotkeyd exited with status %d after SIGTERM, want 0\nstderr:\n%s", code, h.Stderr())
		} else if t.Failed() {
			t.Logf("hotkeyd stderr:\n%s", h.Stderr())
		}
	})

	deadline := time.Now().Add(timeout)
	addr := hkAddressRE
	for h.URL == "" {
		if m := addr.FindStringSubmatch(h.stderr.String()); m != nil {
			h.URL = "http://" + m[1]
			break
		}
		h.waitOrFail(t, deadline, "the \"hotkeyd started\" log line")
	}
	if opts.NoWaitReady {
		return h
	}
	for {
		if code, _ := h.get("/-/ready"); code == http.StatusOK {
			return h
		}
		h.waitOrFail(t, deadline, "/-/ready")
	}
}

// hkAddressRE finds the bound address in the "hotkeyd started" line, in
// logfmt (address=127.0.0.1:1234) or JSON ("address":"127.0.0.1:1234").
var hkAddressRE = regexp.MustCompile(`hotkeyd started.*?"?address"?[=:]"?([^"\s]+)`)

// waitOrFail sleeps a little, failing the test if the process exited or
// the deadline passed.
func (h *Hotkeyd) waitOrFail(t testing.TB, deadline time.Time, what string) {
	t.Helper()
	select {
	case <-h.exited:
		t.Fatalf("hotkeyd exited (%v) before %s\nstderr:\n%s", h.exitErr, what, h.Stderr())
	case <-time.After(20 * time.Millisecond):
	}
	if time.Now().After(deadline) {
		t.Fatalf("hotkeyd: no %s in time\nstderr:\n%s", what, h.Stderr())
	}
}

// Stop sends SIGTERM, waits for the process to exit (SIGKILL after 15 s,
// which fails the test) and returns its exit status. Later calls return the
// same status.
func (h *Hotkeyd) Stop(t testing.TB) int {
	t.Helper()
	h.stopped.Do(func() {
		select {
		case <-h.exited:
		default:
			_ = h.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-h.exited:
			case <-time.After(15 * time.Second):
				_ = h.cmd.Process.Kill()
				<-h.exited
				t.Errorf("hotkeyd did not exit within 15 s of SIGTERM\nstderr:\n%s", h.Stderr())
			}
		}
		h.code = h.cmd.ProcessState.ExitCode()
	})
	return h.code
}

// Kill ends the process with SIGKILL, a crash: no shutdown step runs. It
// waits for the process to exit; the cleanup then leaves its exit status
// alone.
func (h *Hotkeyd) Kill(t testing.TB) {
	t.Helper()
	h.stopped.Do(func() {
		h.killed = true
		_ = h.cmd.Process.Kill()
		<-h.exited
		h.code = h.cmd.ProcessState.ExitCode()
	})
}

// Signal sends sig to the process: SIGSTOP freezes it (its listening
// socket still accepts connections, nothing answers them) until SIGCONT.
func (h *Hotkeyd) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal hotkeyd: %v", err)
	}
}

// Exited is closed when the process has exited, whatever the reason.
func (h *Hotkeyd) Exited() <-chan struct{} { return h.exited }

// Stderr returns everything the process wrote to stderr so far: its log.
func (h *Hotkeyd) Stderr() string { return h.stderr.String() }

// Stdout returns everything the process wrote to stdout so far (the demo's
// "where to look" lines).
func (h *Hotkeyd) Stdout() string { return h.stdout.String() }

// WaitLog waits until the log (stderr) contains substr, and fails the test
// if it does not within timeout or the process exits first. It returns the
// first log line holding substr.
func (h *Hotkeyd) WaitLog(t testing.TB, substr string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, line := range strings.Split(h.Stderr(), "\n") {
			if strings.Contains(line, substr) {
				return line
			}
		}
		h.waitOrFail(t, deadline, fmt.Sprintf("log line containing %q", substr))
	}
}

// Get fetches path (e.g. "/metrics") from the process and returns the
// status code and body; a transport error fails the test.
func (h *Hotkeyd) Get(t testing.TB, path string) (int, []byte) {
	t.Helper()
	code, body := h.get(path)
	if code == 0 {
		t.Fatalf("GET %s%s: %s", h.URL, path, body)
	}
	return code, body
}

// get is Get returning code 0 and the error text on a transport error.
func (h *Hotkeyd) get(path string) (int, []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+path, nil)
	if err != nil {
		return 0, []byte(err.Error())
	}
	// No keep-alive: an idle connection would outlive the test and its
	// goroutines would show up in goleak checks.
	resp, err := hkHTTPClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, []byte(err.Error())
	}
	return resp.StatusCode, body
}

func hkHasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

var hkHTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// PeakRSS returns the most resident memory the running process has had
// (VmHWM in /proc/PID/status, Linux), in bytes.
func (h *Hotkeyd) PeakRSS(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("peak resident memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("peak resident memory: %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("peak resident memory: no VmHWM in /proc/%d/status", h.cmd.Process.Pid)
	return 0
}

// runsDaemon says whether args start the daemon (run, the default command,
// or demo), whose history StartHotkeyd puts in a temporary directory.
func runsDaemon(args []string) bool {
	return len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "run" || args[0] == "demo"
}
