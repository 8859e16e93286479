package follow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a Handler and a Reporter that keeps what it is given.
type recorder struct {
	mu      sync.Mutex
	content map[string]*bytes.Buffer // by the path the file was opened under
	opened  []File
	closed  []string
	resets  int
	errs    []string // "reason: error"
	readErr []string
	leave   func(File) bool // files Open leaves unread
	polls   int
}

func newRecorder() *recorder { return &recorder{content: map[string]*bytes.Buffer{}} }

func (r *recorder) Open(f File) Consumer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leave != nil && r.leave(f) {
		return nil
	}
	r.opened = append(r.opened, f)
	if r.content[f.Path] == nil {
		r.content[f.Path] = &bytes.Buffer{}
	}
	return &recConsumer{r: r, buf: r.content[f.Path], path: f.Path}
}

func (r *recorder) Polled([]File) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.polls++
}

func (r *recorder) pollCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.polls
}

// patience bounds a wait for a condition: it only ends a broken test, so
// it is long enough for a machine running two test suites at once.
const patience = 2 * time.Minute

// waitPolls waits until n polls are done.
func (r *recorder) waitPolls(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		p := r.pollCount()
		if p >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d polls in %v, want %d", p, patience, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (r *recorder) Reject(string, string, error) {}

func (r *recorder) Error(_, reason string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, reason+": "+err.Error())
}

func (r *recorder) text(path string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.content[path]; b != nil {
		return b.String()
	}
	return ""
}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

type recConsumer struct {
	r    *recorder
	buf  *bytes.Buffer
	path string
}

func (c *recConsumer) Read(ctx context.Context, rd io.Reader) error {
	b, err := io.ReadAll(rd)
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.buf.Write(b)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.r.readErr = append(c.r.readErr, err.Error())
	}
	return nil
}

func (c *recConsumer) Reset() {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.resets++
}

func (c *recConsumer) Close(context.Context) error {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.closed = append(c.r.closed, c.path)
	return nil
}

// stepper is a Follower polled by hand, one poll per step, with a clock
// the test moves.
type stepper struct {
	t   *testing.T
	fl  *Follower
	rec *recorder
	now time.Time
	log *observer.ObservedLogs
}

func newStepper(t *testing.T, cfg Config) *stepper {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	s := &stepper{t: t, rec: newRecorder(), now: time.Now(), log: logs}
	cfg.Poll = time.Hour // polled by hand
	cfg.Reporter = s.rec
	cfg.Log = zap.New(core)
	cfg.Source = "test"
	cfg.Now = func() time.Time { return s.now }
	fl, err := New(cfg, s.rec)
	if err != nil {
		t.Fatal(err)
	}
	s.fl = fl
	t.Cleanup(fl.closeAll)
	return s
}

func (s *stepper) poll() {
	s.t.Helper()
	if err := s.fl.poll(context.Background()); err != nil {
		s.t.Fatal(err)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, s string) {
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

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// lines returns n numbered log lines, each long enough for a file of a few
// of them to be recognised by its start.
func lines(prefix string, from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		b.WriteString(`{"ts":"2026-11-23T10:00:00Z","table":"orders","op":"PutItem","pk":"` + prefix + "-" + string(rune('a'+i%26)) + `"}` + "\n")
	}
	return b.String()
}

func TestTailFromEndAndNewFilesFromStart(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "a.log")
	write(t, old, "old line\n")
	s := newStepper(t, Config{Paths: []string{filepath.Join(dir, "*.log")}})
	s.poll()
	appendTo(t, old, "new line\n")
	write(t, filepath.Join(dir, "b.log"), "b line\n")
	s.poll()
	if got := s.rec.text(old); got != "new line\n" {
		t.Errorf("a.log read %q, want only what came after the start", got)
	}
	if got := s.rec.text(filepath.Join(dir, "b.log")); got != "b line\n" {
		t.Errorf("b.log read %q, want it whole", got)
	}
}

// TestCopytruncateWithinOnePoll is the case of a log truncated in place
// and written again past the offset read, all between two polls: the size
// never shrinks, but the bytes before the offset are not those read.
func TestCopytruncateWithinOnePoll(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	write(t, log, "")
	s := newStepper(t, Config{Paths: []string{log}})
	s.poll()
	first := lines("first", 0, 3)
	appendTo(t, log, first)
	s.poll()
	s.poll()
	// copytruncate, then more lines than were read, before the next poll.
	second := lines("second", 0, 5)
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, log, second)
	s.poll()
	if got := s.rec.text(log); got != first+second {
		t.Errorf("read %q, want the first lines then the second ones whole", got)
	}
	errs := s.rec.errors()
	if len(errs) != 1 || !strings.HasPrefix(errs[0], ReasonTruncated+": ") || !strings.Contains(errs[0], "access.log") {
		t.Errorf("errors %q, want one %s naming the file", errs, ReasonTruncated)
	}
	if s.rec.resets != 1 {
		t.Errorf("%d resets, want 1", s.rec.resets)
	}
	// Growing as usual afterwards is not a truncation.
	appendTo(t, log, lines("third", 0, 1))
	s.poll()
	if n := len(s.rec.errors()); n != 1 {
		t.Errorf("%d errors after plain growth", n)
	}
}

// TestRotationAndArchive follows logrotate with compression: the log is
// renamed, gets a last line, and is compressed into an archive the
// patterns match too. What was read under the old names is not read again
// from the archive; a new archive is read whole, once.
func TestRotationAndArchive(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	write(t, filepath.Join(dir, "app.log.0.gz"), string(gzipped(t, lines("before-start", 0, 2))))
	write(t, log, "")
	s := newStepper(t, Config{Paths: []string{filepath.Join(dir, "app.log*")}})
	s.poll()
	content := lines("one", 0, 4)
	appendTo(t, log, content)
	s.poll()
	// Rotate: rename, a late line, a new log.
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, log+".1", lines("late", 0, 1))
	content += lines("late", 0, 1)
	write(t, log, lines("two", 0, 1))
	s.poll()
	// Compress the rotated file: an archive appears, the plain copy goes.
	write(t, log+".1.gz", string(gzipped(t, content)))
	if err := os.Remove(log + ".1"); err != nil {
		t.Fatal(err)
	}
	s.poll()
	s.now = s.now.Add(time.Minute) // the archive settles
	s.poll()
	// A new archive, from elsewhere.
	other := lines("other", 0, 3)
	write(t, filepath.Join(dir, "app.log.9.gz"), string(gzipped(t, other)))
	s.now = s.now.Add(time.Minute)
	s.poll()
	s.poll()

	var all strings.Builder
	for _, p := range []string{log, log + ".1", log + ".1.gz", filepath.Join(dir, "app.log.9.gz"), filepath.Join(dir, "app.log.0.gz")} {
		all.WriteString(s.rec.text(p))
	}
	want := content + lines("two", 0, 1) + other
	if got := all.String(); len(got) != len(want) || strings.Count(got, "one-") != 4 || strings.Count(got, "late-") != 1 ||
		strings.Count(got, "other-") != 3 || strings.Contains(got, "before-start") {
		t.Errorf("read %q\nwant each line once, the archive there at the start not at all: %q", got, want)
	}
	if got := s.rec.text(filepath.Join(dir, "app.log.9.gz")); got != other {
		t.Errorf("the new archive read %q, want %q", got, other)
	}
}

func TestArchiveReadWhenSettled(t *testing.T) {
	dir := t.TempDir()
	s := newStepper(t, Config{Paths: []string{filepath.Join(dir, "*.gz")}})
	s.poll()
	gz := gzipped(t, lines("x", 0, 100))
	path := filepath.Join(dir, "x.gz")
	write(t, path, string(gz[:len(gz)/2])) // still being written
	s.poll()
	if got := s.rec.text(path); got != "" {
		t.Fatalf("an archive being written was read: %q", got)
	}
	write(t, path, string(gz))
	s.poll()
	s.poll() // unchanged since the last poll: settled
	if got := s.rec.text(path); got != lines("x", 0, 100) {
		t.Errorf("read %q", got)
	}
	s.poll()
	if len(s.rec.opened) != 1 {
		t.Errorf("opened %d times, want once", len(s.rec.opened))
	}
}

// An empty file followed as a log (it may be one) is read as the archive
// it turns out to be when its first bytes are an archive's: a compressor
// may create its archive and write the first bytes later.
func TestEmptyFileBecomingAnArchive(t *testing.T) {
	dir := t.TempDir()
	s := newStepper(t, Config{Paths: []string{filepath.Join(dir, "*")}})
	s.poll()
	path := filepath.Join(dir, "app.log.1.gz")
	write(t, path, "")
	s.poll()
	s.poll()
	s.now = s.now.Add(time.Minute) // settled, and still empty
	s.poll()
	want := lines("x", 0, 50)
	write(t, path, string(gzipped(t, want)))
	s.poll()
	s.now = s.now.Add(time.Minute)
	s.poll()
	if got := s.rec.text(path); got != want {
		t.Errorf("read %q, want the archive's lines %q", got, want)
	}
	// Followed as a log while empty (nothing read from it), then read as
	// the archive it turned out to be.
	if n := len(s.rec.opened); n == 0 || s.rec.opened[n-1].Codec != "gzip" || n > 2 {
		t.Errorf("opened %+v, want at last as a gzip archive", s.rec.opened)
	}
	if n := s.log.FilterMessage("file followed is a compressed archive: reading it whole once it settles").Len(); n != 1 {
		t.Errorf("%d lines saying the file followed is an archive, want 1", n)
	}
}

// An archive whose writer stalls for longer than the settling is not read
// half-written: a settled archive whose compressed content ends short is
// waited for while it is young, and read whole once finished; one that
// stays short is read as it is once it is old, and reported truncated.
func TestArchiveWithAStalledWriter(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprintf("whole=%v", whole), func(t *testing.T) {
			dir := t.TempDir()
			s := newStepper(t, Config{Paths: []string{filepath.Join(dir, "*.gz")}, Whole: whole})
			s.poll()
			want := lines("x", 0, 2000)
			gz := gzipped(t, want)
			path := filepath.Join(dir, "x.gz")
			write(t, path, string(gz[:len(gz)/2]))
			s.now = time.Now().Add(settleTime + time.Second) // settled by its age
			s.poll()
			s.poll()
			if got := s.rec.text(path); got != "" || len(s.rec.opened) != 0 {
				t.Fatalf("an archive cut short by a stalled writer was read: %d bytes, opened %d times", len(got), len(s.rec.opened))
			}
			if n := s.log.FilterMessage("archive ends short; waiting for its writer").Len(); n != 1 {
				t.Errorf("%d lines saying the archive ends short, want 1", n)
			}
			write(t, path, string(gz)) // the writer goes on
			s.now = time.Now().Add(settleTime + time.Second)
			s.poll()
			if got := s.rec.text(path); got != want {
				t.Errorf("the finished archive read %d bytes, want %d", len(got), len(want))
			}

			// One that stays short is read as it is once old, and reported.
			cut := filepath.Join(dir, "cut.gz")
			write(t, cut, string(gz[:len(gz)/2]))
			s.now = time.Now().Add(settleTime + time.Second)
			s.poll()
			if s.rec.text(cut) != "" {
				t.Fatal("a young archive cut short was read")
			}
			s.now = time.Now().Add(archiveWait + time.Second)
			s.poll()
			if got := s.rec.text(cut); got == "" || !strings.HasPrefix(want, got) {
				t.Errorf("the old archive cut short read %d bytes, want a part of the lines", len(got))
			}
			if len(s.rec.readErr) != 1 || !strings.Contains(s.rec.readErr[0], "truncated or corrupt gzip") {
				t.Errorf("read errors %q, want the truncated archive's", s.rec.readErr)
			}
			if len(s.rec.opened) != 2 {
				t.Errorf("opened %d times, want 2 (each archive once)", len(s.rec.opened))
			}
		})
	}
}

func TestWholeFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	write(t, a, "aaa")
	write(t, b, "bbb")
	s := newStepper(t, Config{Paths: []string{filepath.Join(dir, "*.json")}, Whole: true})
	s.rec.leave = func(f File) bool { return f.Path == b }
	s.now = s.now.Add(time.Minute)
	s.poll()
	s.poll()
	if s.rec.text(a) != "aaa" || len(s.rec.opened) != 1 || len(s.rec.closed) != 1 {
		t.Errorf("opened %v closed %v", s.rec.opened, s.rec.closed)
	}
	// Renamed: the same file, not read again.
	if err := os.Rename(a, filepath.Join(dir, "c.json")); err != nil {
		t.Fatal(err)
	}
	s.poll()
	if len(s.rec.opened) != 1 {
		t.Errorf("a renamed file was read again: %v", s.rec.opened)
	}
}

// TestSpecialFilesNeverBlock puts a named pipe, a folder and a symbolic
// link loop among the files of a pattern: none is opened (a pipe without a
// writer would block the reader in open forever), each is said once, the
// regular file is read, and Run still returns when cancelled.
func TestSpecialFilesNeverBlock(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "a-pipe.log"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "b-dir.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("c-loop.log", filepath.Join(dir, "c-loop.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("missing", filepath.Join(dir, "d-dangling.log")); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "e-good.log")
	write(t, good, "")

	rec := newRecorder()
	core, logs := observer.New(zapcore.DebugLevel)
	fl, err := New(Config{Paths: []string{filepath.Join(dir, "*.log")}, Poll: 5 * time.Millisecond, Reporter: rec, Log: zap.New(core), Source: "test"}, rec)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, fl)
	defer stop()
	rec.waitPolls(t, 1) // the file was there at the start: read from its end
	appendTo(t, good, "line\n")
	deadline := time.Now().Add(patience)
	for rec.text(good) != "line\n" {
		if time.Now().After(deadline) {
			t.Fatalf("the regular file was not read (read %q)", rec.text(good))
		}
		time.Sleep(5 * time.Millisecond)
	}
	rec.waitPolls(t, rec.pollCount()+5) // several more polls: still said once
	stop()

	errs := strings.Join(rec.errors(), "\n")
	for _, want := range []string{"a-pipe.log\": not a regular file (a named pipe)", "b-dir.log\": is a folder", "c-loop.log\": symbolic link loop"} {
		if strings.Count(errs, want) != 1 {
			t.Errorf("errors do not say %q once:\n%s", want, errs)
		}
	}
	if n := len(rec.errors()); n != 3 {
		t.Errorf("%d errors, want 3:\n%s", n, errs)
	}
	if err := fl.Ready(); err == nil || !strings.Contains(err.Error(), "a-pipe.log") {
		t.Errorf("Ready() = %v, want it to name the pipe", err)
	}
	if n := logs.FilterMessage("file skipped").FilterField(zap.String("path", filepath.Join(dir, "d-dangling.log"))).Len(); n != 1 {
		t.Errorf("the dangling link was logged %d times, want once", n)
	}
}

// TestRunReturnsWhenCancelledMidFile cancels a Follower reading a big file
// through a slow consumer: the read stops at the next piece once Finish has
// passed.
func TestRunReturnsWhenCancelledMidFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // sparse: 1 GiB of zeros
		t.Fatal(err)
	}
	f.Close()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(big, old, old); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	h := &slowHandler{started: started}
	fl, err := New(Config{Paths: []string{big}, Poll: time.Hour, Whole: true, Finish: 100 * time.Millisecond}, h)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, fl)
	<-started
	stop()
	if !errors.Is(h.err, context.Canceled) {
		t.Errorf("the consumer's read ended with %v, want context.Canceled", h.err)
	}
}

// start runs fl until the returned func is called; that func cancels it
// and fails the test unless Run returns nil soon after. Calls after the
// first do nothing.
func start(t *testing.T, fl *Follower) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(patience):
				t.Fatal("Run did not return after cancel")
			}
		})
	}
}

// slowHandler reads a file 4 KiB a millisecond: 1 GiB would take minutes.
type slowHandler struct {
	started chan struct{}
	err     error
	read    int
	closed  bool
}

func (h *slowHandler) Open(File) Consumer { return h }
func (h *slowHandler) Polled([]File)      {}
func (h *slowHandler) Reset()             {}

func (h *slowHandler) Close(context.Context) error { h.closed = true; return nil }

func (h *slowHandler) Read(ctx context.Context, r io.Reader) error {
	buf := make([]byte, 4096)
	close(h.started)
	for {
		n, err := r.Read(buf)
		h.read += n
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			h.err = err
			return ctx.Err()
		}
		time.Sleep(time.Millisecond)
	}
}

// TestStopFinishesAWholeFile stops a Follower of whole files while it reads
// one: the file is read to its end and closed (recorded as read), so that
// a stop never leaves a delivered file counted in part.
func TestStopFinishesAWholeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "delivery.json")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 400<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	h := &slowHandler{started: make(chan struct{})}
	fl, err := New(Config{Paths: []string{path}, Poll: time.Hour, Whole: true}, h)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, fl)
	<-h.started
	stop()
	if h.read != 400<<10 || !h.closed || h.err != nil {
		t.Errorf("read %d bytes of %d, closed %v, error %v; want the whole file, closed", h.read, 400<<10, h.closed, h.err)
	}
}
