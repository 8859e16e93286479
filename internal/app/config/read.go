package config

import (
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest/input"
)

// Bounds of reading the configuration file (and key_hash_secret_file). A
// configuration is a few kilobytes; a file of more than a megabyte is the
// wrong file, and parsing one of 50 MB took 25 s and 2 GB. A file that
// cannot be read in a few seconds sits on a mount that hangs.
const (
	MaxFileBytes = 1 << 20
	ReadTimeout  = 5 * time.Second
)

// Reader reads configuration files within bounds: a regular file only (a
// named pipe would block the read until someone writes to it), at most
// MaxBytes, within Timeout. A read that does not return in time is left
// behind, and while it has not returned, Reader refuses to start another,
// so that a hung mount costs one stuck goroutine, not one per reload. The
// zero Reader uses MaxFileBytes and ReadTimeout. It is safe for concurrent
// use.
type Reader struct {
	// MaxBytes bounds a file; zero means MaxFileBytes.
	MaxBytes int64
	// Timeout bounds a read, opening included; zero means ReadTimeout.
	Timeout time.Duration

	mu    sync.Mutex
	stuck string // the file of a read that timed out and has not returned
}

// ReadFile returns the contents of the file at path.
func (r *Reader) ReadFile(path string) ([]byte, error) {
	max, timeout := r.MaxBytes, r.Timeout
	if max <= 0 {
		max = MaxFileBytes
	}
	if timeout <= 0 {
		timeout = ReadTimeout
	}
	r.mu.Lock()
	if r.stuck != "" {
		stuck := r.stuck
		r.mu.Unlock()
		return nil, fmt.Errorf("%s: a read of %s started more than %s ago has not returned yet (a hung mount?)", path, stuck, timeout)
	}
	r.mu.Unlock()

	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	go func() {
		b, err := readBounded(path, max)
		done <- result{b, err}
		r.mu.Lock()
		if r.stuck == path {
			r.stuck = ""
		}
		r.mu.Unlock()
	}()
	select {
	case res := <-done:
		return res.b, res.err
	case <-timer.C:
		r.mu.Lock()
		r.stuck = path
		r.mu.Unlock()
		return nil, fmt.Errorf("%s: not read within %s (a hung mount?)", path, timeout)
	}
}

// readBounded reads the regular file at path, refusing it past max bytes.
// It opens without blocking, so that a named pipe is refused rather than
// waited on.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s); write it to a file", path, input.FileKind(st.Mode()))
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, more than the %s allowed; is it the right file?", path, st.Size(), byteSize(max))
	}
	// The size may change while the file is read: read one byte past max
	// to tell.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: more than the %s allowed; is it the right file?", path, byteSize(max))
	}
	return b, nil
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
