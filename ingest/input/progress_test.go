package input

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestHumanNumbers(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{humanCount(999), "999"},
		{humanCount(450_123), "450k"},
		{humanCount(1_234_567), "1.2M"},
		{humanBytes(310_000_000), "310 MB"},
		{humanBytes(2_500_000_000), "2.5 GB"},
		{progressLine("access.log", 1_200_000, 310_000_000, 2_666_666_667), "read 1.2M events (310 MB) from access.log, 450k/s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestProgressLine(t *testing.T) {
	var buf strings.Builder
	out := NewSyncWriter(&buf)
	var bytes, events atomic.Int64
	bytes.Store(2_000_000)
	events.Store(10_000)
	stop := StartProgress(out, "access.log", bytes.Load, events.Load, 10*time.Millisecond)
	printed := func() string {
		out.mu.Lock()
		defer out.mu.Unlock()
		return buf.String()
	}
	// Two lines, however slowly the ticker's goroutine runs.
	for deadline := time.Now().Add(time.Minute); strings.Count(printed(), "\n") < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	got := printed()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) < 2 {
		t.Fatalf("progress printed %q, want a line every interval", got)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "read 10k events (2 MB) from access.log, ") || !strings.HasSuffix(l, "/s") {
			t.Errorf("progress line %q", l)
		}
	}
	if strings.Contains(got, "\r") {
		t.Errorf("progress to a non-terminal rewrites its line: %q", got)
	}
}
