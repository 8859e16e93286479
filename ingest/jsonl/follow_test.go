package jsonl

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
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
		fmt.Fprintf(&b, `{"table":"tbl","pk":%q,"op":"read"}`+"\n", pk)
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

// TestFollowSkipsSpecialFiles puts a named pipe and a symbolic link loop
// among the files of a glob, and a symbolic link to a log elsewhere: the
// pipe is never opened (it would block the reader for good), each is said
// once, the link is followed, and the other files are read.
func TestFollowSkipsSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.log"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	if err := os.Symlink("loop.log", filepath.Join(dir, "loop.log")); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "app.jsonl")
	appendFile(t, elsewhere, "")
	if err := os.Symlink(elsewhere, filepath.Join(dir, "linked.log")); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "access.log")
	appendFile(t, log, "")
	h := startFollow(t, dir, Config{Paths: []string{filepath.Join(dir, "*.log")}})
	appendFile(t, log, lines("a"))
	appendFile(t, elsewhere, lines("b"))
	waitFor(t, func() bool { return h.sink.len() >= 2 })
	h.settle()
	got := h.pks()
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("keys %v, want a (the log) and b (through the link)", got)
	}
	errs := strings.Join(h.rec.errorsSeen(), "\n")
	if strings.Count(errs, "pipe.log") != 1 || strings.Count(errs, "loop.log") != 1 || len(h.rec.errorsSeen()) != 2 {
		t.Errorf("source errors %q, want the pipe and the loop, once each", errs)
	}
	if err := h.src.Ready(); err == nil || !strings.Contains(err.Error(), "pipe.log") {
		t.Errorf("Ready() = %v, want it to name the pipe", err)
	}
}

// TestFollowDoubleStar follows "**": files in folders at any depth,
// folders that appear later included.
func TestFollowDoubleStar(t *testing.T) {
	dir := t.TempDir()
	h := startFollow(t, dir, Config{Paths: []string{filepath.Join(dir, "**", "*.jsonl")}})
	deep := filepath.Join(dir, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	appendFile(t, filepath.Join(dir, "top.jsonl"), lines("top"))
	appendFile(t, filepath.Join(deep, "deep.jsonl"), lines("deep"))
	waitFor(t, func() bool { return h.sink.len() >= 2 })
	h.settle()
	got := h.pks()
	slices.Sort(got)
	if !slices.Equal(got, []string{"deep", "top"}) {
		t.Errorf("keys %v, want deep and top", got)
	}
}

// TestFollowRotatedArchive rotates a log the way logrotate does with
// compress: renamed, a last line written to it, then compressed into an
// archive the glob matches. Every line is counted once: none again from
// the archive, whose content was read under the log's names.
func TestFollowRotatedArchive(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, "")
	h := startFollow(t, dir, Config{Paths: []string{filepath.Join(dir, "app.log*")}})
	first := lines("one", "two", "three")
	appendFile(t, log, first)
	h.waitPKs("one", "two", "three")
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, log+".1", lines("late"))
	appendFile(t, log, lines("four"))
	waitFor(t, func() bool { return h.sink.len() >= 5 })
	h.settle()
	writeGzipFile(t, log+".1.gz", first+lines("late"))
	if err := os.Remove(log + ".1"); err != nil {
		t.Fatal(err)
	}
	// An archive from elsewhere is read whole.
	writeGzipFile(t, filepath.Join(dir, "app.log.7.gz"), lines("seven"))
	waitFor(t, func() bool { return h.sink.len() >= 6 })
	time.Sleep(3 * time.Second) // past the archives' settling time
	h.settle()
	got := h.pks()
	slices.Sort(got)
	if want := []string{"four", "late", "one", "seven", "three", "two"}; !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v: each line once", got, want)
	}
	if r := h.rec.reasons(); len(r) != 0 {
		t.Errorf("rejections %v: an archive was read as text", r)
	}
}

func writeGzipFile(t *testing.T, path, s string) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestFollowCopytruncateWithinOnePoll truncates a followed log in place
// and writes more than was read into it, all between two polls: the size
// never shrinks, yet the new lines are read from the start, and the
// truncation is counted and logged.
func TestFollowCopytruncateWithinOnePoll(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendFile(t, log, "")
	sink, rec := &collector{}, &recorder{}
	src, err := New(Config{Paths: []string{log}, Poll: time.Second, Options: Options{Reporter: rec, Now: fixedNow}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	polled := make(chan struct{}, 100)
	src.scanned = func() { polled <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, sink) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	<-polled
	appendFile(t, log, lines("one", "two"))
	waitFor(t, func() bool { return sink.len() == 2 })
	<-polled // a poll just ended: the next is a second away
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	appendFile(t, log, lines("three", "four", "five"))
	waitFor(t, func() bool { return sink.len() >= 5 })
	<-polled
	var got []string
	for _, e := range sink.snapshot() {
		got = append(got, e.PK)
	}
	if want := []string{"one", "two", "three", "four", "five"}; !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	if errs := rec.errorsSeen(); len(errs) != 1 || !strings.Contains(errs[0], "truncated") || !strings.Contains(errs[0], "access.log") {
		t.Errorf("source errors %q, want one saying the log was truncated", errs)
	}
	if r := rec.reasons(); len(r) != 0 {
		t.Errorf("rejections %v: a line was read from its middle", r)
	}
}
