package cloudtrail

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// writeAtomic writes a file the way a sync tool delivers one: to a
// temporary name, then renamed into place.
func writeAtomic(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".part"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// running is a Source run in the background with a collecting sink.
type running struct {
	src    *Source
	col    *collector
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, cfg Config) *running {
	t.Helper()
	col := &collector{}
	src, err := New(cfg, nil, col)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{src: src, col: col, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- src.Run(ctx, col) }()
	return r
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("Run did not return after cancel")
	}
}

// keys returns the partition keys received so far, sorted.
func (r *running) keys() []string {
	r.col.mu.Lock()
	defer r.col.mu.Unlock()
	var k []string
	for _, e := range r.col.events {
		k = append(k, e.PK)
	}
	sort.Strings(k)
	return k
}

// patience bounds a wait for a condition: it only ends a broken test, so
// it is long enough for a machine running two test suites at once.
const patience = 2 * time.Minute

// waitKeys waits until the keys received are want, or fails.
func (r *running) waitKeys(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		got := strings.Join(r.keys(), " ")
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys %q, want %q", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSourceFollowsAndRestarts(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	ckpt := t.TempDir()
	day := func(d string) string {
		return filepath.Join(dir, "AWSLogs", "111122223333", "CloudTrail", "us-east-1", "2026", "11", d)
	}
	cfg := Config{
		Paths:         []string{filepath.Join(dir, "**", "*.json.gz")},
		CheckpointDir: ckpt,
		PollInterval:  20 * time.Millisecond,
	}
	writeAtomic(t, filepath.Join(day("21"), "f1.json.gz"), gz(t, records(getItem("a"), getItem("b"))))

	r := start(t, cfg)
	r.waitKeys(t, "a b")
	// New files are picked up as they land, in new folders too; files the
	// pattern does not match are not read.
	writeAtomic(t, filepath.Join(day("22"), "f2.json.gz"), gz(t, records(getItem("c"))))
	writeAtomic(t, filepath.Join(day("22"), "notes.txt"), []byte(records(getItem("x"))))
	r.waitKeys(t, "a b c")
	r.stop(t)
	if st := r.src.Stats(); st.Events != 3 || st.Records != 3 || !st.UnitsPerItem {
		t.Errorf("stats %+v", st)
	}
	var doc stateDoc
	b, err := os.ReadFile(filepath.Join(ckpt, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Files) != 2 {
		t.Fatalf("state %s: %v", b, err)
	}

	// A restart reads only the file that is new.
	writeAtomic(t, filepath.Join(day("22"), "f3.json.gz"), gz(t, records(getItem("d"))))
	r = start(t, cfg)
	r.waitKeys(t, "d")
	time.Sleep(5 * cfg.PollInterval)
	r.waitKeys(t, "d")
	// A deleted file is forgotten.
	if err := os.Remove(filepath.Join(day("21"), "f1.json.gz")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(patience)
	for {
		files, err := loadState(ckpt)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state still lists %d files", len(files))
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.stop(t)
	if err := r.src.Ready(); err != nil {
		t.Errorf("Ready: %v", err)
	}
}

func TestSourceBadFilesDoNotStopIt(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	whole := gz(t, records(getItem("a"), strings.Repeat(getItem("pad")+",", 300)+getItem("z")))
	truncated := filepath.Join(dir, "1-truncated.json.gz")
	writeAtomic(t, truncated, whole[:len(whole)-20])
	// Old enough not to be waited for as an archive whose writer stalled.
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(truncated, past, past); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(dir, "2-hostile.json"), []byte(`{"Records":[{"eventSource":1},"x",`+getItem("b")+`]}`))
	writeAtomic(t, filepath.Join(dir, "3-good.json"), []byte(records(getItem("c"),
		ev("PutItem", `{"tableName":"Tbl","key":{"id":"f"}}`, `"errorCode":"ConditionalCheckFailedException"`),
		ev("Scan", `{"tableName":"Tbl"}`))))
	r := start(t, Config{Paths: []string{filepath.Join(dir, "*.json*")}, PollInterval: 10 * time.Millisecond})
	deadline := time.Now().Add(patience)
	for (r.src.Stats().Rejected < 2 || !strings.Contains(strings.Join(r.keys(), " "), "b c")) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	r.stop(t)
	k := strings.Join(r.keys(), " ")
	if !strings.HasPrefix(k, " a b c pad") || strings.Contains(k, "z") {
		t.Errorf("keys %q: want a, b, c and the pads before the cut", k)
	}
	// The reader's own metrics: three files, the failed PutItem, the
	// record that is not DynamoDB's, and the Scan without a key.
	want := `
# HELP hotkeyd_cloudtrail_failed_calls_total DynamoDB data calls that failed for a reason other than throttling (a failed condition, a validation error): neither traffic nor throttled.
# TYPE hotkeyd_cloudtrail_failed_calls_total counter
hotkeyd_cloudtrail_failed_calls_total 1
# HELP hotkeyd_cloudtrail_files_read_total CloudTrail log files read to their end (truncated ones included).
# TYPE hotkeyd_cloudtrail_files_read_total counter
hotkeyd_cloudtrail_files_read_total 3
# HELP hotkeyd_cloudtrail_ignored_records_total CloudTrail records that are not DynamoDB data events (other services, control-plane calls, stream reads).
# TYPE hotkeyd_cloudtrail_ignored_records_total counter
hotkeyd_cloudtrail_ignored_records_total 1
# HELP hotkeyd_cloudtrail_keyless_events_total Accesses counted for their table without a partition key (Scan, PartiQL statements whose key could not be read).
# TYPE hotkeyd_cloudtrail_keyless_events_total counter
hotkeyd_cloudtrail_keyless_events_total 1
`
	if err := testutil.CollectAndCompare(r.src, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(r.src); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	r.col.mu.Lock()
	defer r.col.mu.Unlock()
	joined := strings.Join(r.col.rejected, "\n")
	if !strings.Contains(joined, "1-truncated.json.gz: truncated or corrupt gzip") || !strings.Contains(joined, "2-hostile.json") {
		t.Errorf("rejections do not name the bad files:\n%s", joined)
	}
}

func TestSourceMaxAge(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	writeAtomic(t, old, []byte(records(getItem("old"))))
	past := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(dir, "new.json"), []byte(records(getItem("new"))))
	r := start(t, Config{Paths: []string{filepath.Join(dir, "*.json")}, PollInterval: 10 * time.Millisecond, MaxAge: time.Hour})
	r.waitKeys(t, "new")
	time.Sleep(50 * time.Millisecond)
	r.waitKeys(t, "new")
	r.stop(t)
}

func TestNewRejects(t *testing.T) {
	ckpt := t.TempDir()
	if err := os.WriteFile(filepath.Join(ckpt, StateFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]Config{
		"no paths":      {},
		"stdin":         {Paths: []string{"-"}},
		"bad pattern":   {Paths: []string{"/var/log/[x/*.json"}},
		"corrupt state": {Paths: []string{"/x/*.json"}, CheckpointDir: ckpt},
	}
	for name, cfg := range cases {
		if _, err := New(cfg, nil, nil); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := New(Config{Paths: []string{"/nonexistent/**/*.json.gz"}, CheckpointDir: t.TempDir()}, nil, traffic.NopReporter{}); err != nil {
		t.Errorf("missing folder: %v (it may appear later)", err)
	}
}

var _ sync.Locker = (*sync.Mutex)(nil)

// TestSourceFollowsSymbolicLinks reads a delivery folder holding symbolic
// links: one to a file elsewhere under the "**" pattern is read like a
// file; a dangling one and a loop are said once and skipped.
func TestSourceFollowsSymbolicLinks(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	elsewhere := filepath.Join(t.TempDir(), "synced.json")
	writeAtomic(t, elsewhere, []byte(records(getItem("linked"))))
	writeAtomic(t, filepath.Join(dir, "2026", "11", "f1.json"), []byte(records(getItem("plain"))))
	for name, target := range map[string]string{"link.json": elsewhere, "dangling.json": "nowhere.json", "loop.json": "loop.json"} {
		if err := os.Symlink(target, filepath.Join(dir, "2026", "11", name)); err != nil {
			t.Fatal(err)
		}
	}
	core, logs := observer.New(zapcore.InfoLevel)
	col := &collector{}
	src, err := New(Config{Paths: []string{filepath.Join(dir, "**", "*.json")}, PollInterval: 10 * time.Millisecond}, zap.New(core), col)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{src: src, col: col, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- src.Run(ctx, col) }()
	r.waitKeys(t, "linked plain")
	time.Sleep(100 * time.Millisecond) // more polls: nothing is said twice
	r.stop(t)
	col.mu.Lock()
	errs := strings.Join(col.errors, "\n")
	col.mu.Unlock()
	if strings.Count(errs, "loop.json") != 1 {
		t.Errorf("source errors do not name the loop once:\n%s", errs)
	}
	if n := logs.FilterMessageSnippet("skipped").FilterFieldKey("path").Len(); n != 1 {
		t.Errorf("the dangling link was logged %d times, want once", n)
	}
}
