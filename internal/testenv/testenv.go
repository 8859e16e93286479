// Package testenv starts the real components hotkeyd's integration tests
// run against, and stops them when the test ends: DynamoDB Local (AWS's
// emulator, with Streams), kinesalite (Kinesis Data Streams) and s3rver
// (S3) on Node, a Prometheus server, and the hotkeyd binary itself. When a component is missing, its helper fails the test under CI
// (the CI environment variable is set) and skips it with a message naming
// `make test-deps` otherwise, so a missing install never passes silently.
package testenv

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// repoRoot returns the module root: the first directory holding go.mod,
// walking up from the working directory (a test's package directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer is a bytes.Buffer safe for a child process's writes and the
// test's reads. With limit > 0 it keeps only the first limit bytes (enough
// to explain a failure) and drops the rest.
type lockedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit > 0 && b.buf.Len() > b.limit {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
