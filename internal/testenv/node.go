package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	*child
	port int
}

// startNode runs `node nodeFlags... script args(port)...` on a free port
// and waits until it listens there and ready returns nil (at most two
// minutes), failing the test if it cannot start.
func startNode(t testing.TB, name string, pick func() (int, error), nodeFlags []string, script string, args func(port int) []string, ready func(ctx context.Context, port int) error) *nodeProcess {
	t.Helper()
	start := func(port int) (*child, error) {
		return startChild(name, exec.Command("node", append(append(slices.Clone(nodeFlags), script), args(port)...)...), 64<<10)
	}
	c, port, err := startOnPort(name, 0, pick, 2*time.Minute, start, ready)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	return &nodeProcess{child: c, port: port}
}
