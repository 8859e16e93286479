package jsonl

import (
	"testing"
	"time"
)

// patience bounds a wait for a condition: it only ends a broken test, so
// it is long enough for a machine running two test suites at once.
const patience = 2 * time.Minute

// waitFor polls cond until it holds or a generous deadline passes. The
// deadline only bounds a broken test; no assertion depends on timing.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", patience)
		}
		time.Sleep(time.Millisecond)
	}
}
