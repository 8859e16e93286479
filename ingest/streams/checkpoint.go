package streams

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// checkpoint is what is kept per shard: the sequence number of the last
// record handed to the sink, and whether the shard was read to its end.
// Files hold it as JSON, one file per shard:
//
//	<checkpoint_dir>/<stream ARN, ':' and '/' as '_'>/<shard id>.json
type checkpoint struct {
	StreamARN string    `json:"stream_arn"`
	ShardID   string    `json:"shard_id"`
	Sequence  string    `json:"sequence_number,omitempty"`
	Finished  bool      `json:"finished,omitempty"`
	Updated   time.Time `json:"updated"`
}

// errCorruptCheckpoint marks a checkpoint file that exists but cannot be
// used. The error text names the file.
var errCorruptCheckpoint = errors.New("corrupt checkpoint")

// checkpoints reads and writes checkpoint files. With an empty dir it keeps
// them in memory only (nothing survives a restart). Safe for concurrent use.
type checkpoints struct {
	dir    string
	mu     sync.Mutex
	mem    map[[2]string]checkpoint
	failed map[[2]string]error // the last write error, by shard ({"", ""}: the folder probe)
}

func newCheckpoints(dir string) *checkpoints {
	return &checkpoints{dir: dir, mem: map[[2]string]checkpoint{}, failed: map[[2]string]error{}}
}

// ready returns why checkpoints cannot be written: the error of the
// folder probe or of a shard's last save, until a later one succeeds.
func (c *checkpoints) ready() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for _, err := range c.failed {
		if first == nil || err.Error() < first.Error() {
			first = err
		}
	}
	if first != nil && len(c.failed) > 1 {
		return fmt.Errorf("%w (and %d more)", first, len(c.failed)-1)
	}
	return first
}

func (c *checkpoints) setFailed(key [2]string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		delete(c.failed, key)
		return
	}
	c.failed[key] = err
}

// probe checks that a checkpoint can be written in the folder (made when
// missing), before any shard has one to write: a folder that cannot be
// written shows at once.
func (c *checkpoints) probe() error {
	if c.dir == "" {
		return nil
	}
	err := func() error {
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			return fmt.Errorf("create checkpoint folder: %w", err)
		}
		f, err := os.CreateTemp(c.dir, ".probe-*.tmp")
		if err != nil {
			return fmt.Errorf("write in checkpoint folder: %w", err)
		}
		f.Close()
		return os.Remove(f.Name())
	}()
	c.setFailed([2]string{}, err)
	return err
}

// streamDir is the folder of one stream's checkpoints.
func (c *checkpoints) streamDir(arn string) string {
	return filepath.Join(c.dir, safeName(arn))
}

func (c *checkpoints) path(arn, shard string) string {
	return filepath.Join(c.streamDir(arn), safeName(shard)+".json")
}

// load returns the checkpoint of a shard. ok is false when there is none.
// A file that cannot be parsed, or that belongs to another shard, is
// reported as errCorruptCheckpoint with its path; the caller decides what
// to do (the reader moves it aside and starts the shard as if new).
func (c *checkpoints) load(arn, shard string) (cp checkpoint, ok bool, err error) {
	c.mu.Lock()
	if cp, ok := c.mem[[2]string{arn, shard}]; ok {
		c.mu.Unlock()
		return cp, true, nil
	}
	c.mu.Unlock()
	if c.dir == "" {
		return checkpoint{}, false, nil
	}
	p := c.path(arn, shard)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return checkpoint{}, false, nil
	}
	if err != nil {
		return checkpoint{}, false, fmt.Errorf("read checkpoint %q: %w", p, err)
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		return checkpoint{}, false, fmt.Errorf("%w %q: %v", errCorruptCheckpoint, p, err)
	}
	if cp.StreamARN != arn || cp.ShardID != shard || (cp.Sequence == "" && !cp.Finished) {
		return checkpoint{}, false, fmt.Errorf("%w %q: holds stream %q shard %q sequence %q, want stream %q shard %q",
			errCorruptCheckpoint, p, cp.StreamARN, cp.ShardID, cp.Sequence, arn, shard)
	}
	return cp, true, nil
}

// quarantine renames an unusable checkpoint file to <name>.corrupt, so that
// the next save succeeds and the bad file stays for a person to look at.
func (c *checkpoints) quarantine(arn, shard string) error {
	if c.dir == "" {
		return nil
	}
	p := c.path(arn, shard)
	if err := os.Rename(p, p+".corrupt"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("move corrupt checkpoint %q aside: %w", p, err)
	}
	return nil
}

// hasAny reports whether any checkpoint of the stream exists, i.e. whether
// hotkeyd read this stream before.
func (c *checkpoints) hasAny(arn string) bool {
	c.mu.Lock()
	for k := range c.mem {
		if k[0] == arn {
			c.mu.Unlock()
			return true
		}
	}
	c.mu.Unlock()
	if c.dir == "" {
		return false
	}
	m, _ := filepath.Glob(filepath.Join(c.streamDir(arn), "*.json"))
	return len(m) > 0
}

// save writes cp atomically: a temporary file in the same folder, fsync,
// rename over the old file, fsync of the folder. A crash leaves either the
// old or the new checkpoint, never a torn one.
func (c *checkpoints) save(cp checkpoint) error {
	c.mu.Lock()
	c.mem[[2]string{cp.StreamARN, cp.ShardID}] = cp
	c.mu.Unlock()
	if c.dir == "" {
		return nil
	}
	err := c.write(cp)
	c.setFailed([2]string{cp.StreamARN, cp.ShardID}, err)
	return err
}

func (c *checkpoints) write(cp checkpoint) error {
	dir := c.streamDir(cp.StreamARN)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create checkpoint folder: %w", err)
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	p := c.path(cp.StreamARN, cp.ShardID)
	if err := writeFileAtomic(dir, p, append(b, '\n')); err != nil {
		return fmt.Errorf("write checkpoint %q: %w", p, err)
	}
	return nil
}

func writeFileAtomic(dir, path string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, ".checkpoint-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// safeName turns an ARN or shard id into one path element: every byte but
// letters, digits, '.', '-' and '_' becomes '_'.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}
