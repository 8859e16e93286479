package streams

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c := newCheckpoints(dir)
	arn := "arn:aws:dynamodb:us-east-1:111122223333:table/orders/stream/2026-01-01T00:00:00.000"
	if c.hasAny(arn) {
		t.Fatal("hasAny on an empty folder")
	}
	want := checkpoint{StreamARN: arn, ShardID: "shardId-1", Sequence: "42", Updated: time.Unix(1, 0).UTC()}
	if err := c.save(want); err != nil {
		t.Fatal(err)
	}
	// A fresh store reads the file, not its memory.
	got, ok, err := newCheckpoints(dir).load(arn, "shardId-1")
	if err != nil || !ok || got != want {
		t.Fatalf("load = %+v, %v, %v; want %+v", got, ok, err, want)
	}
	if !newCheckpoints(dir).hasAny(arn) {
		t.Error("hasAny false after a save")
	}
	if _, ok, err := newCheckpoints(dir).load(arn, "shardId-2"); ok || err != nil {
		t.Errorf("load of a missing shard = %v, %v", ok, err)
	}
	// No temporary file is left behind.
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	if len(files) != 1 || !strings.HasSuffix(files[0], "shardId-1.json") {
		t.Errorf("files %v, want just the checkpoint", files)
	}
}

func TestCheckpointCorrupt(t *testing.T) {
	arn := "arn:s"
	for name, content := range map[string]string{
		"not json":      "{not json",
		"empty":         "",
		"other shard":   `{"stream_arn":"arn:s","shard_id":"other","sequence_number":"1"}`,
		"other stream":  `{"stream_arn":"arn:x","shard_id":"s1","sequence_number":"1"}`,
		"no position":   `{"stream_arn":"arn:s","shard_id":"s1"}`,
		"wrong type":    `{"stream_arn":"arn:s","shard_id":"s1","sequence_number":1}`,
		"truncated":     `{"stream_arn":"arn:s","shard_id":"s1","seq`,
		"array instead": `[]`,
	} {
		dir := t.TempDir()
		c := newCheckpoints(dir)
		p := c.path(arn, "s1")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, ok, err := c.load(arn, "s1")
		if ok || !errors.Is(err, errCorruptCheckpoint) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: load = %v, %v; want errCorruptCheckpoint naming %s", name, ok, err, p)
		}
		if err := c.quarantine(arn, "s1"); err != nil {
			t.Errorf("%s: quarantine: %v", name, err)
		}
		if _, err := os.Stat(p + ".corrupt"); err != nil {
			t.Errorf("%s: not moved aside: %v", name, err)
		}
	}
}

// FuzzCheckpointLoad feeds arbitrary file contents to the loader: it never
// panics, and what it accepts names the shard asked for.
func FuzzCheckpointLoad(f *testing.F) {
	f.Add([]byte(`{"stream_arn":"arn:s","shard_id":"s1","sequence_number":"1","finished":true,"updated":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{not json`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content []byte) {
		c := newCheckpoints(dir)
		p := c.path("arn:s", "s1")
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		cp, ok, err := c.load("arn:s", "s1")
		if ok && (err != nil || cp.StreamARN != "arn:s" || cp.ShardID != "s1" || (cp.Sequence == "" && !cp.Finished)) {
			t.Fatalf("accepted %q as %+v", content, cp)
		}
	})
}

func TestBackoff(t *testing.T) {
	b := newBackoff(100*time.Millisecond, time.Second)
	for i := range 50 {
		ceil := min(100*time.Millisecond<<i, time.Second)
		if i > 30 {
			ceil = time.Second
		}
		if d := b.Duration(); d <= 0 || d > ceil {
			t.Fatalf("attempt %d: %v, want in (0, %v]", i, d, ceil)
		}
	}
	b.Reset()
	if d := b.Duration(); d > 100*time.Millisecond {
		t.Errorf("after reset: %v, want ≤ 100ms", d)
	}
}

func TestHealth(t *testing.T) {
	h := newHealth()
	h.set("a", errStarting)
	h.set("b", errStarting)
	if h.ready() == nil {
		t.Error("ready before any call")
	}
	h.set("a", nil)
	if err := h.ready(); err != nil {
		t.Errorf("one table working, one failing: %v", err)
	}
	h.set("b", &os.SyscallError{Syscall: "connect", Err: errors.New("refused")})
	h.set("b", errors.New("access denied"))
	if err := h.ready(); err != nil {
		t.Errorf("one table denied: %v", err)
	}
	h.set("a", errors.New("access denied"))
	if err := h.ready(); err == nil {
		t.Error("ready with every table failing")
	}
	// An unreachable endpoint makes the source unready even while another
	// table's last call succeeded.
	h.set("b", nil)
	h.set("a", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")})
	if err := h.ready(); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("endpoint unreachable: ready() = %v", err)
	}
}

// TestLimiter checks the DescribeStream pace: calls from many goroutines
// are spaced at least `every` apart (10 per second in the reader).
func TestLimiter(t *testing.T) {
	l := &limiter{every: 20 * time.Millisecond}
	began := time.Now()
	done := make(chan struct{})
	for range 6 {
		go func() {
			_ = l.wait(t.Context())
			done <- struct{}{}
		}()
	}
	for range 6 {
		<-done
	}
	if took := time.Since(began); took < 100*time.Millisecond {
		t.Errorf("6 calls took %v, want ≥ 100ms (5 gaps of 20ms)", took)
	}
}
