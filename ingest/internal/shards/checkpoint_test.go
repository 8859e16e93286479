package shards

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c := NewStore(dir)
	arn := "arn:aws:dynamodb:us-east-1:111122223333:table/orders/stream/2026-01-01T00:00:00.000"
	if c.HasAny(arn) {
		t.Fatal("hasAny on an empty folder")
	}
	want := Checkpoint{StreamARN: arn, ShardID: "shardId-1", Sequence: "42", Updated: time.Unix(1, 0).UTC()}
	if err := c.Save(want); err != nil {
		t.Fatal(err)
	}
	// A fresh store reads the file, not its memory.
	got, ok, err := NewStore(dir).Load(arn, "shardId-1")
	if err != nil || !ok || got != want {
		t.Fatalf("load = %+v, %v, %v; want %+v", got, ok, err, want)
	}
	if !NewStore(dir).HasAny(arn) {
		t.Error("hasAny false after a save")
	}
	if _, ok, err := NewStore(dir).Load(arn, "shardId-2"); ok || err != nil {
		t.Errorf("load of a missing shard = %v, %v", ok, err)
	}
	// No temporary file is left behind.
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	if len(files) != 1 || !strings.HasSuffix(files[0], "shardId-1.json") {
		t.Errorf("files %v, want just the checkpoint", files)
	}
}

// TestCheckpointUnversioned loads a checkpoint file as hotkeyd wrote them
// before they carried a version, and checks that a save writes version 1.
func TestCheckpointUnversioned(t *testing.T) {
	arn := "arn:aws:dynamodb:us-east-1:111122223333:table/orders/stream/2026-01-01T00:00:00.000"
	old, err := os.ReadFile(filepath.Join("testdata", "checkpoint-unversioned.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := NewStore(t.TempDir())
	p := c.Path(arn, "shardId-00000001")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, old, 0o644); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Load(arn, "shardId-00000001")
	want := Checkpoint{StreamARN: arn, ShardID: "shardId-00000001", Sequence: "4200000000000000000123", Updated: time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)}
	if err != nil || !ok || got != want {
		t.Fatalf("load = %+v, %v, %v; want %+v", got, ok, err, want)
	}
	if err := c.Save(got); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"version":1,"stream_arn":`) {
		t.Errorf("saved %s, want version 1 first", b)
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
		"later version": `{"version":2,"stream_arn":"arn:s","shard_id":"s1","sequence_number":"1"}`,
	} {
		dir := t.TempDir()
		c := NewStore(dir)
		p := c.Path(arn, "s1")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, ok, err := c.Load(arn, "s1")
		if ok || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: load = %v, %v; want ErrCorrupt naming %s", name, ok, err, p)
		}
		if err := c.Quarantine(arn, "s1"); err != nil {
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
		c := NewStore(dir)
		p := c.Path("arn:s", "s1")
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		cp, ok, err := c.Load("arn:s", "s1")
		if ok && (err != nil || cp.StreamARN != "arn:s" || cp.ShardID != "s1" || (cp.Sequence == "" && !cp.Finished)) {
			t.Fatalf("accepted %q as %+v", content, cp)
		}
	})
}

func TestReady(t *testing.T) {
	type sh struct {
		id      string
		parents []string
	}
	list := []sh{{"a", nil}, {"b", []string{"a"}}, {"c", []string{"a", "x"}}, {"m", []string{"b", "c"}}, {"gone-parent", []string{"trimmed"}}}
	ids := func(l []sh) (out []string) {
		for _, s := range l {
			out = append(out, s.id)
		}
		return out
	}
	done := map[string]bool{}
	ready := func(running map[string]bool) string {
		return strings.Join(ids(Ready(list, func(s sh) string { return s.id }, func(s sh) []string { return s.parents },
			func(id string) bool { return done[id] }, running)), " ")
	}
	if got := ready(nil); got != "a gone-parent" {
		t.Errorf("at first: %q", got)
	}
	if got := ready(map[string]bool{"a": true}); got != "gone-parent" {
		t.Errorf("a running: %q", got)
	}
	done["a"] = true
	if got := ready(nil); got != "b c gone-parent" {
		t.Errorf("a done: %q", got)
	}
	done["b"] = true
	if got := ready(nil); got != "c gone-parent" {
		t.Errorf("b done, the merge waits for c: %q", got)
	}
	done["c"] = true
	if got := ready(nil); got != "m gone-parent" {
		t.Errorf("both parents done: %q", got)
	}
}
