// Package shards is the engine of the readers of sharded streams (DynamoDB
// Streams, Kinesis Data Streams): per stream, the listing of its shards,
// the lineage rule that reads parents before children and the lease
// coordinator's assignments (package lease); per shard, the iterator,
// polling, backoff, checkpoints (files, or the lease) and the recovery of
// each error, and the shard series (Metrics: shards by state, each
// shard's lag). A reader implements Stream for its service's API (list,
// iterator, records, decoding), names its series (MetricOpts) and gives a
// Pacer for its polling; the keys both readers' configs share are Config.
package shards

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest/internal/statefile"
)

// Checkpoint is what is kept per shard: the sequence number of the last
// record handed to the sink, and whether the shard was read to its end.
// Files hold it as JSON, one file per shard:
//
//	<checkpoint_dir>/<stream ARN, ':' and '/' as '_'>/<shard id>.json
type Checkpoint struct {
	StreamARN string    `json:"stream_arn"`
	ShardID   string    `json:"shard_id"`
	Sequence  string    `json:"sequence_number,omitempty"`
	Finished  bool      `json:"finished,omitempty"`
	Updated   time.Time `json:"updated"`
}

// checkpointFormat is the checkpoint files': version 1, and the files
// written before they carried a version (the same shape) read as it.
var checkpointFormat = statefile.Format{What: "checkpoint", Version: 1, Older: []int{0}, DirMode: 0o755}

// checkpointFile is a Checkpoint as its file holds it: with the version.
type checkpointFile struct {
	statefile.Header
	Checkpoint
}

// ErrCorrupt marks a checkpoint file that exists but cannot be used. The
// error text names the file.
var ErrCorrupt = errors.New("corrupt checkpoint")

// Store reads and writes checkpoint files. With an empty dir it keeps
// them in memory only (nothing survives a restart). Safe for concurrent use.
type Store struct {
	dir    string
	mu     sync.Mutex
	mem    map[[2]string]Checkpoint
	failed map[[2]string]error // the last write error, by shard ({"", ""}: the folder probe)
}

// NewStore returns the Store of the folder dir ("" for memory only).
func NewStore(dir string) *Store {
	return &Store{dir: dir, mem: map[[2]string]Checkpoint{}, failed: map[[2]string]error{}}
}

// Ready returns why checkpoints cannot be written: the error of the
// folder probe or of a shard's last save, until a later one succeeds.
func (c *Store) Ready() error {
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

func (c *Store) setFailed(key [2]string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		delete(c.failed, key)
		return
	}
	c.failed[key] = err
}

// Probe checks that a checkpoint can be written in the folder (made when
// missing), before any shard has one to write, so that a folder that
// cannot be written shows in Ready at once.
func (c *Store) Probe() error {
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
func (c *Store) streamDir(arn string) string {
	return filepath.Join(c.dir, safeName(arn))
}

// Path returns the file of a shard's checkpoint.
func (c *Store) Path(arn, shard string) string {
	return filepath.Join(c.streamDir(arn), safeName(shard)+".json")
}

// Load returns the checkpoint of a shard. ok is false when there is none.
// A file that cannot be parsed, or that belongs to another shard, is
// reported as ErrCorrupt with its path; the caller decides what
// to do (the reader moves it aside and starts the shard as if new).
func (c *Store) Load(arn, shard string) (cp Checkpoint, ok bool, err error) {
	c.mu.Lock()
	if cp, ok := c.mem[[2]string{arn, shard}]; ok {
		c.mu.Unlock()
		return cp, true, nil
	}
	c.mu.Unlock()
	if c.dir == "" {
		return Checkpoint{}, false, nil
	}
	p := c.Path(arn, shard)
	var f checkpointFile
	found, err := checkpointFormat.Load(p, &f)
	var derr *statefile.DecodeError
	if errors.As(err, &derr) {
		return Checkpoint{}, false, fmt.Errorf("%w %q: %v", ErrCorrupt, p, derr.Err)
	}
	if err != nil || !found {
		return Checkpoint{}, false, err
	}
	cp = f.Checkpoint
	if cp.StreamARN != arn || cp.ShardID != shard || (cp.Sequence == "" && !cp.Finished) {
		return Checkpoint{}, false, fmt.Errorf("%w %q: holds stream %q shard %q sequence %q, want stream %q shard %q",
			ErrCorrupt, p, cp.StreamARN, cp.ShardID, cp.Sequence, arn, shard)
	}
	return cp, true, nil
}

// Quarantine renames an unusable checkpoint file to <name>.corrupt, so that
// the next save succeeds and the bad file stays for a person to look at.
func (c *Store) Quarantine(arn, shard string) error {
	if c.dir == "" {
		return nil
	}
	p := c.Path(arn, shard)
	if err := os.Rename(p, p+".corrupt"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("move corrupt checkpoint %q aside: %w", p, err)
	}
	return nil
}

// HasAny reports whether any checkpoint of the stream exists, i.e. whether
// hotkeyd read this stream before.
func (c *Store) HasAny(arn string) bool {
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

// Save writes cp atomically: a temporary file in the same folder, fsync,
// rename over the old file, fsync of the folder. A crash leaves either the
// old or the new checkpoint, never a torn one. A failed write shows in
// Ready until a later one of the same shard succeeds.
func (c *Store) Save(cp Checkpoint) error {
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

func (c *Store) write(cp Checkpoint) error {
	return checkpointFormat.Save(c.Path(cp.StreamARN, cp.ShardID), &checkpointFile{Checkpoint: cp})
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
