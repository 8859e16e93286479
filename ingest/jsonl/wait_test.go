package jsonl

import (
	"testing"
	"time"
)

// waitFor polls cond until it holds or a generous deadline passes. The
// deadline only bounds a broken test; no assertion depends on timing.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}
