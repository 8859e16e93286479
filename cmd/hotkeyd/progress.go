package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// progressEvery is the interval of the progress line; the first line comes
// after one interval, so inputs read faster than that print nothing.
const progressEvery = 2 * time.Second

// startProgress prints a progress line on w every progressEvery while one
// input is read: "read 1.2M events (310 MB) from access.log, 450k/s". On a
// terminal the line rewrites itself; elsewhere (a CI log) it is one line per
// interval. The returned func stops it and must be called once.
func startProgress(w io.Writer, name string, bytesRead, events *atomic.Int64, every time.Duration) (stop func()) {
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
				line := progressLine(name, events.Load(), bytesRead.Load(), now.Sub(start))
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
			fmt.Fprintf(w, "\r\033[K%s\n", progressLine(name, events.Load(), bytesRead.Load(), time.Since(start)))
		}
	}
}

func progressLine(name string, events, bytes int64, elapsed time.Duration) string {
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(events) / s
	}
	return fmt.Sprintf("read %s events (%s) from %s, %s/s", humanCount(float64(events)), humanBytes(bytes), name, humanCount(rate))
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

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	if lw, ok := w.(*lockedWriter); ok {
		w = lw.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
