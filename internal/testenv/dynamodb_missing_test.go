package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// stopTB records Skip and Fatal instead of ending the test, and unwinds with
// a panic so that DynamoDBLocal goes no further.
type stopTB struct {
	testing.TB
	skipped, fatal string
}

func (s *stopTB) Helper()                   {}
func (s *stopTB) Skip(args ...any)          { s.skipped = fmt.Sprint(args...); panic(s) }
func (s *stopTB) Fatal(args ...any)         { s.fatal = fmt.Sprint(args...); panic(s) }
func (s *stopTB) Cleanup(func())            {}
func (s *stopTB) Fatalf(f string, a ...any) { s.Fatal(fmt.Sprintf(f, a...)) }

// TestDynamoDBLocalMissing checks that a missing emulator skips loudly on a
// workstation and fails in CI.
func TestDynamoDBLocalMissing(t *testing.T) {
	t.Setenv(DynamoDBLocalDirEnv, t.TempDir()) // a folder without the jar
	run := func(ci string) *stopTB {
		t.Setenv("CI", ci)
		s := &stopTB{TB: t}
		func() {
			defer func() {
				if r := recover(); r != nil && r != s {
					panic(r)
				}
			}()
			DynamoDBLocal(s)
		}()
		return s
	}
	if s := run(""); s.skipped == "" || s.fatal != "" || !strings.Contains(s.skipped, "make test-deps") {
		t.Errorf("without CI: skipped %q, fatal %q; want a skip naming make test-deps", s.skipped, s.fatal)
	}
	if s := run("true"); s.fatal == "" || s.skipped != "" {
		t.Errorf("with CI: skipped %q, fatal %q; want a failure", s.skipped, s.fatal)
	}
}
