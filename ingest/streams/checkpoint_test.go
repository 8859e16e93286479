package streams

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	b := newBackoff(100*time.Millisecond, time.Second)
	for i := range 50 {
		ceil := min(100*time.Millisecond<<i, time.Second)
		if i > 30 {
			ceil = time.Second
		}
		if d := b.Duration(); d <= 0 || d > ceil {
			t.Fatalf("attempt %d: %v, want in (0, %v]", i, d, ceil)
		}
	}
	b.Reset()
	if d := b.Duration(); d > 100*time.Millisecond {
		t.Errorf("after reset: %v, want ≤ 100ms", d)
	}
}

func TestHealth(t *testing.T) {
	h := newHealth()
	h.Set("a", errStarting)
	h.Set("b", errStarting)
	if h.Ready() == nil {
		t.Error("ready before any call")
	}
	h.Set("a", nil)
	if err := h.Ready(); err != nil {
		t.Errorf("one table working, one failing: %v", err)
	}
	h.Set("b", &os.SyscallError{Syscall: "connect", Err: errors.New("refused")})
	h.Set("b", errors.New("access denied"))
	if err := h.Ready(); err != nil {
		t.Errorf("one table denied: %v", err)
	}
	h.Set("a", errors.New("access denied"))
	if err := h.Ready(); err == nil {
		t.Error("ready with every table failing")
	}
	// An unreachable endpoint makes the source unready even while another
	// table's last call succeeded.
	h.Set("b", nil)
	h.Set("a", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")})
	if err := h.Ready(); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("endpoint unreachable: ready() = %v", err)
	}
}

// TestLimiter checks the DescribeStream pace: calls from many goroutines
// are spaced at least `every` apart (10 per second in the reader).
func TestLimiter(t *testing.T) {
	l := &limiter{every: 20 * time.Millisecond}
	began := time.Now()
	done := make(chan struct{})
	for range 6 {
		go func() {
			_ = l.wait(t.Context())
			done <- struct{}{}
		}()
	}
	for range 6 {
		<-done
	}
	if took := time.Since(began); took < 100*time.Millisecond {
		t.Errorf("6 calls took %v, want ≥ 100ms (5 gaps of 20ms)", took)
	}
}
