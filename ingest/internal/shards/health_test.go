package shards

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	b := NewBackoff(100*time.Millisecond, time.Second)
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
	h := NewHealth("dynamodb streams", IsNetwork)
	h.Set("a", ErrStarting)
	h.Set("b", ErrStarting)
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
