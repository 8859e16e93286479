package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReaderRefuses: a file that is not a regular file, or too large, is
// refused at once with a reason, whatever its content; a named pipe nobody
// writes to does not block the read.
func TestReaderRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "hotkeyd.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("window: 1m\n"+strings.Repeat("# padding\n", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Reader{MaxBytes: 1024, Timeout: time.Minute} // a read that blocks fails on the deadline, without the reason
	for _, c := range []struct{ path, want string }{
		{fifo, "not a regular file (a named pipe)"},
		{dir, "not a regular file (a directory)"},
		{"/dev/zero", "not a regular file (a character device)"},
		{big, "2011 bytes, more than the 1 KiB allowed"},
		{filepath.Join(dir, "nope.yaml"), "no such file or directory"},
	} {
		_, err := r.Load(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "read config: ") {
			t.Errorf("Load(%s) = %v, want an error with %q", c.path, err, c.want)
		}
	}
	if b, err := (&Reader{MaxBytes: 4096}).ReadFile(big); err != nil || len(b) != 2011 {
		t.Errorf("ReadFile under the bound: %d bytes, %v", len(b), err)
	}
}

// TestReaderDefaultBound: the zero Reader refuses a file past
// MaxFileBytes.
func TestReaderDefaultBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(path, make([]byte, MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "more than the 1 MiB allowed") {
		t.Errorf("Load(1 MiB + 1) = %v", err)
	}
}
