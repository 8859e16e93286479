package jsonl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// followHarness runs a Source over dir with a fast poll and a scan counter.
type followHarness struct {
	t      *testing.T
	dir    string
	sink   *collector
	rec    *recorder
	scans  atomic.Int64
	cancel context.CancelFunc
	done   chan error
	src    *Source
}

func startFollow(t *testing.T, dir string, cfg Config) *followHarness {
	t.Helper()
	h := &followHarness{t: t, dir: dir, sink: &collector{}, rec: &recorder{}, done: make(chan error, 1)}
	cfg.Poll = 2 * time.Millisecond
	cfg.Reporter = h.rec
	cfg.Now = fixedNow
	src, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.scanned = func() { h.scans.Add(1) }
	h.src = src
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- src.Run(ctx, h.sink) }()
	t.Cleanup(h.stop)
	h.settle() // the initial scan is done
	return h
}

func (h *followHarness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	if err := <-h.done; err != nil {
		h.t.Errorf("Run: %v", err)
	}
}

// settle waits until two more polls completed, so everything written
// before the call has been seen.
func (h *followHarness) settle() {
	h.t.Helper()
	n := h.scans.Load()
	waitFor(h.t, func() bool { return h.scans.Load() >= n+2 })
}

// pks returns the partition keys received, in order.
func (h *followHarness) pks() []string {
	var out []string
	for _, e := range h.sink.snapshot() {
		out = append(out, e.PK)
	}
	return out
}

// waitPKs waits until want were received and checks nothing else was.
func (h *followHarness) waitPKs(want ...string) {
	h.t.Helper()
	waitFor(h.t, func() bool { return h.sink.len() >= len(want) })
	h.settle()
	if got := h.pks(); !slices.Equal(got, want) {
		h.t.Fatalf("keys %v, want %v", got, want)
	}
}

func lines(pks ...string) string {
	var b strings.Builder
	for _, pk := range pks {
		fmt.Fprintf(&b, `{"table":"t","pk":%q,"op":"read"}`+"\n", pk)
	}
	return b.String()
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFollowStartsAtEndOfExistingFiles(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendFile(t, log, lines("old1", "old2"))
	h := startFollow(t, dir, Config{Paths: []string{log}})
	appendFile(t, log, lines("new1", "new2"))
	h.waitPKs("new1", "new2")
}

func TestFollowFromStart(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendFile(t, log, lines("old1"))
	h := startFollow(t, dir, Config{Paths: []string{log}, FromStart: true})
	appendFile(t, log, lines("new1"))
	h.waitPKs("old1", "new1")
}

func TestFollowFileCreatedLater(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	h := startFollow(t, dir, Config{Paths: []string{log}})
	appendFile(t, log, lines("a", "b"))
	h.waitPKs("a", "b")
}

func TestFollowRotationByRename(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendFile(t, log, "")
	h := startFollow(t, dir, Config{Paths: []string{log}})
	appendFile(t, log, lines("before"))
	h.waitPKs("before")

	// logrotate's "create": rename, the writer adds a last line to the old
	// file, then a new file appears under the name.
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, log+".1", lines("late"))
	h.settle()
	appendFile(t, log, lines("after1", "after2"))
	h.waitPKs("before", "late", "after1", "after2")
}

func TestFollowRotationWithinGlob(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, "")
	h := startFollow(t, dir, Config{Paths: []string{filepath.Join(dir, "app.log*")}})
	appendFile(t, log, lines("a"))
	h.waitPKs("a")
	// The rotated name matches the glob too: it must not be read again.
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, log, lines("b"))
	appendFile(t, log+".1", lines("a-late"))
	waitFor(t, func() bool { return h.sink.len() >= 3 })
	h.settle()
	got := h.pks()
	slices.Sort(got)
	if want := []string{"a", "a-late", "b"}; !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
}

func TestFollowTruncation(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendFile(t, log, "")
	h := startFollow(t, dir, Config{Paths: []string{log}})
	appendFile(t, log, lines("one", "two", "three"))
	h.waitPKs("one", "two", "three")
	// copytruncate: the file is emptied in place and written again.
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	h.settle()
	appendFile(t, log, lines("four"))
	h.waitPKs("one", "two", "three", "four")
}

func TestFollowNewFilesMatchingGlob(t *testing.T) {
	dir := t.TempDir()
	appendFile(t, filepath.Join(dir, "a.jsonl"), lines("existing"))
	h := startFollow(t, dir, Config{Paths: []string{filepath.Join(dir, "*.jsonl")}})
	appendFile(t, filepath.Join(dir, "b.jsonl"), lines("b1", "b2"))
	appendFile(t, filepath.Join(dir, "ignored.txt"), lines("nope"))
	h.waitPKs("b1", "b2")
}

func TestFollowPartialLine(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendFile(t, log, "")
	h := startFollow(t, dir, Config{Paths: []string{log}})
	full := lines("split")
	appendFile(t, log, full[:10])
	h.settle() // the follower has seen half a line and must wait
	appendFile(t, log, full[10:])
	h.waitPKs("split")
	if r := h.rec.reasons(); len(r) != 0 {
		t.Errorf("a line written in two parts was rejected: %v", r)
	}
}

func TestFollowCountsBadLines(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendFile(t, log, "")
	h := startFollow(t, dir, Config{Paths: []string{log}})
	appendFile(t, log, lines("a")+"{broken\n"+lines("b"))
	h.waitPKs("a", "b")
	r := h.rec.reasons()
	if len(r) != 1 || r[0].reason != "bad_json" || !strings.Contains(r[0].err.Error(), "access.log: line 2") {
		t.Errorf("rejections %v, want one bad_json on line 2", r)
	}
}

func TestStdin(t *testing.T) {
	sink := &collector{}
	src, err := New(Config{Paths: []string{"-"}, Stdin: strings.NewReader(lines("x", "y") + "junk\n"), Options: Options{Now: fixedNow}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Run(context.Background(), sink); err != nil {
		t.Fatal(err)
	}
	if n := sink.len(); n != 2 {
		t.Errorf("%d events from stdin, want 2", n)
	}
}

func TestNewRejectsBadPattern(t *testing.T) {
	if _, err := New(Config{Paths: []string{"/var/log/[.log"}}, nil); err == nil {
		t.Error("New accepted a malformed glob")
	}
	if _, err := New(Config{}, nil); err == nil {
		t.Error("New accepted no paths")
	}
}

func TestFollowReadyReportsUnreadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "not-a-file.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := startFollow(t, dir, Config{Paths: []string{filepath.Join(dir, "*.log")}})
	src := h.src
	if err := src.Ready(); err == nil || !strings.Contains(err.Error(), "not-a-file.log") {
		t.Errorf("Ready() = %v, want an error naming the directory", err)
	}
	if errs := h.rec.errorsSeen(); len(errs) != 1 {
		t.Errorf("source errors %v, want one (reported once, not every poll)", errs)
	}
	if err := os.Remove(filepath.Join(dir, "not-a-file.log")); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if err := src.Ready(); err != nil {
		t.Errorf("Ready() = %v after the directory went away", err)
	}
}
