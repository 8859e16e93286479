package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// ToolsDirEnv names the environment variable that points at the folder
// holding the npm-installed emulators (its node_modules/). Without it the
// tests look in the repository's .tools/, where `make test-deps` installs
// them.
const ToolsDirEnv = "HOTKEYD_TOOLS_DIR"

// nodeTool finds the script of an npm package under the tools folder and
// Node itself. When either is missing the test fails under CI and is
// skipped with a message naming `make test-deps` otherwise.
func nodeTool(t testing.TB, name, script string) string {
	t.Helper()
	dir := os.Getenv(ToolsDirEnv)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		dir = filepath.Join(root, ".tools")
	}
	path := filepath.Join(dir, "node_modules", name, script)
	_, err := os.Stat(path)
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		msg := fmt.Sprintf("%s is not available (%v): run `make test-deps` (or set %s)", name, err, ToolsDirEnv)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING, " + msg)
	}
	return path
}

// nodeProcess is an emulator running on Node, killed when the test ends.
type nodeProcess struct {
	name   string
	cmd    *exec.Cmd
	out    *lockedBuffer
	exited chan struct{}
	once   sync.Once
}

// startNode runs `node nodeFlags... script args...` and waits until ready
// returns nil (at most a minute), failing the test if the process exits
// first.
func startNode(t testing.TB, name string, nodeFlags []string, script string, args []string, ready func(context.Context) error) *nodeProcess {
	t.Helper()
	cmd := exec.Command("node", append(append(nodeFlags, script), args...)...)
	out := &lockedBuffer{limit: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &nodeProcess{name: name, cmd: cmd, out: out, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(p.stop)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lastErr error
	for ctx.Err() == nil {
		select {
		case <-p.exited:
			t.Fatalf("%s exited while starting: %s", name, out.String())
		default:
		}
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		lastErr = ready(cctx)
		ccancel()
		if lastErr == nil {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not answer within a minute: %v\n%s", name, lastErr, out.String())
	return nil
}

// stop kills the process and waits for it to exit.
func (p *nodeProcess) stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
}
