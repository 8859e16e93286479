package main

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
)

// soakTB lets the soak use the emulators and the daemon of package testenv
// outside a test: what would fail a test is printed and counted, Fatal
// and Skip end the soak after the clean-ups, and the clean-ups run at the
// end, last registered first.
type soakTB struct {
	testing.TB // never called: the methods testenv uses are below

	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

func (t *soakTB) Helper() {}

func (t *soakTB) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "soak: "+format+"\n", args...)
}

func (t *soakTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	fmt.Fprintf(os.Stderr, "soak: FAIL: "+format+"\n", args...)
}

func (t *soakTB) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"soak: FAIL:"}, args...)...)
	t.finish()
	os.Exit(1)
}

func (t *soakTB) Fatalf(format string, args ...any) { t.Fatal(fmt.Sprintf(format, args...)) }

func (t *soakTB) Skip(args ...any) { t.Fatal(args...) }

func (t *soakTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *soakTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// finish runs the clean-ups, last registered first.
func (t *soakTB) finish() {
	t.mu.Lock()
	fs := slices.Clone(t.cleanups)
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
