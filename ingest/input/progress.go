package input

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/plural"
)

// ProgressEvery is the interval of the progress line; the first line comes
// after one interval, so inputs read faster than that print nothing.
const ProgressEvery = 2 * time.Second

// StartProgress prints a progress line on w every interval while one input
// is read: "read 1.2M events (310 MB) from access.log, 450k/s", from the
// counts bytesRead and events return (they are called from another
// goroutine). On a terminal the line rewrites itself; elsewhere (a CI log)
// it is one line per interval. The returned func stops it and must be
// called once.
func StartProgress(w io.Writer, name string, bytesRead, events func() int64, every time.Duration) (stop func()) {
	tty := isTerminal(w)
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	printed := false
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				line := progressLine(name, events(), bytesRead(), now.Sub(start))
				if tty {
					fmt.Fprintf(w, "\r\033[K%s", line)
				} else {
					fmt.Fprintln(w, line)
				}
				printed = true
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		if printed && tty {
			fmt.Fprintf(w, "\r\033[K%s\n", progressLine(name, events(), bytesRead(), time.Since(start)))
		}
	}
}

func progressLine(name string, events, bytes int64, elapsed time.Duration) string {
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(events) / s
	}
	return fmt.Sprintf("read %s %s (%s) from %s, %s/s", humanCount(float64(events)), plural.Noun(events, "event"), humanBytes(bytes), name, humanCount(rate))
}

// humanCount prints 1234567 as 1.2M and 450123 as 450k.
func humanCount(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fG", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0fk", n/1e3)
	}
	return fmt.Sprintf("%.0f", n)
}

// humanBytes prints a byte count in decimal units (MB = 10^6 bytes).
func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// isTerminal reports whether w (or the writer a SyncWriter wraps) is a
// character device (a terminal).
func isTerminal(w io.Writer) bool {
	if lw, ok := w.(*SyncWriter); ok {
		w = lw.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// SyncWriter serialises writes to a writer shared by the progress line and
// a reporter, which write from two goroutines.
type SyncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewSyncWriter returns a SyncWriter writing to w.
func NewSyncWriter(w io.Writer) *SyncWriter { return &SyncWriter{w: w} }

// Write writes p to the underlying writer, one call at a time.
func (l *SyncWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
