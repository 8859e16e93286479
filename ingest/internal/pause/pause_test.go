package pause

import (
	"context"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	live := context.Background()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
	}{
		{"elapses", live, time.Millisecond, true},
		{"zero on a live context", live, 0, true},
		{"negative on a live context", live, -time.Second, true},
		{"stopped before", stopped, time.Hour, false},
		{"zero on a stopped context", stopped, 0, false},
	} {
		if got := For(tc.ctx, tc.d); got != tc.want {
			t.Errorf("%s: For = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestForEndsWhenStopped checks that a long wait ends once its context is
// cancelled, not when the wait would have elapsed.
func TestForEndsWhenStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- For(ctx, time.Hour) }()
	cancel()
	if <-done {
		t.Error("a cancelled wait reported that it elapsed")
	}
}
