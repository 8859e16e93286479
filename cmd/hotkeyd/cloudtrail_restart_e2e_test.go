package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// ctManyFiles writes n delivered files of perFile GetItem calls each,
// modified an hour ago (settled: read at first sight), and a config
// following them with its state in a folder that does not exist yet.
func ctManyFiles(t *testing.T, n, perFile int) (cfgPath string) {
	t.Helper()
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	// Calls of the last minutes: the daemon refuses times older than the
	// input holds (max_event_age) as bad_time.
	at := time.Now().Add(-2 * time.Minute).UTC().Format(time.RFC3339)
	for i := range n {
		var recs []string
		for j := range perFile {
			recs = append(recs, fmt.Sprintf(`{"eventVersion":"1.08","eventTime":%q,"eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"customer":"C-%d-%d"}}}`, at, i, j))
		}
		path := filepath.Join(dir, "AWSLogs", ctAccount, "CloudTrail", "us-east-1", fmt.Sprintf("f-%05d.json.gz", i))
		ctWriteGz(t, path, `{"Records":[`+strings.Join(recs, ",")+`]}`)
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(t.TempDir(), "not", "there", "yet")
	cfgPath = filepath.Join(t.TempDir(), "hotkeyd.yaml")
	cfg := fmt.Sprintf("window: 10m\nsources:\n  - type: cloudtrail\n    paths: [%q]\n    checkpoint_dir: %q\n    poll_interval: 200ms\n",
		filepath.Join(dir, "**", "*.json.gz"), state)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath
}

var readFileRE = regexp.MustCompile(`msg="read file" file=(\S+) events=(\d+)`)

// filesRead returns the files a run's debug log says were read, with
// their events.
func filesRead(log string) map[string]int {
	out := map[string]int{}
	for _, m := range readFileRE.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[2])
		out[m[1]] = n
	}
	return out
}

// waitFilesRead waits until the run read at least n files.
func waitFilesRead(t *testing.T, h *testenv.Hotkeyd, n float64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for ctFilesRead(t, h) < n {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %v files read in time", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ctFilesRead returns hotkeyd_cloudtrail_files_read_total (labelled by
// the source's paths).
func ctFilesRead(t *testing.T, h *testenv.Hotkeyd) float64 {
	for k, v := range scrape(t, h) {
		if strings.HasPrefix(k, "hotkeyd_cloudtrail_files_read_total{") {
			return v
		}
	}
	return 0
}

var stoppedRE = regexp.MustCompile(`msg="stopped reading CloudTrail files" files_read=(\d+) events=(\d+)`)

// TestCloudTrailRestartCountsEachFileOnce stops the daemon with SIGTERM
// part of the way through thousands of delivered files, in a state folder
// that did not exist, and starts it again: every file is read by one run
// only, and the events the two runs counted add up to the files' exactly.
func TestCloudTrailRestartCountsEachFileOnce(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	const files, perFile = 2000, 5
	cfg := ctManyFiles(t, files, perFile)
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "--config.file", cfg, "--log.level=debug")
	waitFilesRead(t, h, 100)
	if code := h.Stop(t); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	first := filesRead(h.Stderr())
	if len(first) >= files {
		t.Skipf("the first run read all %d files before SIGTERM; nothing to test on this machine", files)
	}
	h2 := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "--config.file", cfg, "--log.level=debug")
	waitFilesRead(t, h2, float64(files-len(first)))
	time.Sleep(time.Second) // a few more polls: nothing else may be read
	if code := h2.Stop(t); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	second := filesRead(h2.Stderr())
	twice := 0
	for f := range second {
		if _, ok := first[f]; ok {
			twice++
		}
	}
	if twice > 0 || len(first)+len(second) != files {
		t.Errorf("first run read %d files, second %d, %d of them read by both; want %d in all, none twice", len(first), len(second), twice, files)
	}
	// What each run counted, from its last line: a file the first run
	// was reading at SIGTERM is counted once too.
	events := 0
	for _, log := range []string{h.Stderr(), h2.Stderr()} {
		m := stoppedRE.FindStringSubmatch(log)
		if m == nil {
			t.Fatalf("no %q line in the log:\n%s", "stopped reading CloudTrail files", log)
		}
		n, _ := strconv.Atoi(m[2])
		events += n
	}
	if events != files*perFile {
		t.Errorf("the two runs counted %d events, want %d", events, files*perFile)
	}
}

// TestCloudTrailKillRereadsLittle kills the daemon (SIGKILL: nothing runs
// on the way out) part of the way through thousands of files: the next
// run reads again at most the files of the last state save.
func TestCloudTrailKillRereadsLittle(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	const files = 2000
	cfg := ctManyFiles(t, files, 5)
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "--config.file", cfg, "--log.level=debug")
	waitFilesRead(t, h, 300)
	h.Kill(t)
	first := filesRead(h.Stderr())
	if len(first) >= files {
		t.Skipf("the first run read all %d files before SIGKILL; nothing to test on this machine", files)
	}
	h2 := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "--config.file", cfg, "--log.level=debug")
	waitFilesRead(t, h2, float64(files-len(first)))
	time.Sleep(time.Second)
	again := 0
	for f := range filesRead(h2.Stderr()) {
		if _, ok := first[f]; ok {
			again++
		}
	}
	if again > cloudtrail.SaveEveryFiles {
		t.Errorf("after SIGKILL, %d of the %d files read were read again; want at most %d", again, len(first), cloudtrail.SaveEveryFiles)
	}
	t.Logf("after SIGKILL at %d files read, %d read again", len(first), again)
}

// TestCloudTrailStateNotSavedShowsInReadiness gives the reader a state
// folder that cannot be made (a file stands in its path): the daemon reads
// on, is not ready for as long as that lasts, and is ready again once the
// state can be saved.
func TestCloudTrailStateNotSavedShowsInReadiness(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	dir := t.TempDir()
	ctWriteGz(t, filepath.Join(dir, "in", "a.json.gz"), `{"Records":[{"eventVersion":"1.08","eventTime":"`+time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)+`","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"id":"a"}}}]}`)
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	cfg := fmt.Sprintf("sources:\n  - type: cloudtrail\n    paths: [%q]\n    checkpoint_dir: %q\n    poll_interval: 200ms\n",
		filepath.Join(dir, "in", "*.json.gz"), filepath.Join(blocker, "state"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{NoWaitReady: true}, "--config.file", cfgPath)
	waitMetric(t, h, `hotkeyd_events_total{class="read",source="cloudtrail",table="orders"}`, 1, 20*time.Second)
	for range 12 {
		time.Sleep(time.Second)
		if code, body := h.Get(t, "/-/ready"); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "state") {
			t.Fatalf("/-/ready while the state cannot be saved: %d %s", code, body)
		}
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body := h.Get(t, "/-/ready")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/-/ready once the state can be saved: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(blocker, "state", cloudtrail.StateFile)); err != nil {
		t.Errorf("state not saved once it could be: %v", err)
	}
}
