package s3trail

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hotkeyd/hotkeyd/internal/atomicfile"
)

// StateFile is the name of the checkpoint file in the checkpoint folder:
// per region folder of the layout, the last key read.
const StateFile = "cloudtrail-s3.json"

const stateVersion = 1

type stateDoc struct {
	Version int    `json:"version"`
	Bucket  string `json:"bucket"`
	// Last maps a region folder ("AWSLogs/1111/CloudTrail/us-east-1/") to
	// the last key read under it.
	Last map[string]string `json:"last_key"`
}

// loadState reads the checkpoint file of bucket in dir. A missing file is
// an empty state; a corrupt one, or one of another bucket, is an error:
// starting over would read every object again.
func loadState(dir, bucket string) (map[string]string, error) {
	last := map[string]string{}
	if dir == "" {
		return last, nil
	}
	path := filepath.Join(dir, StateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return last, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state %q: %w", path, err)
	}
	var doc stateDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decode state %q: %w (move it away to read every object again)", path, err)
	}
	if doc.Version != stateVersion {
		return nil, fmt.Errorf("decode state %q: unknown version %d", path, doc.Version)
	}
	if doc.Bucket != bucket {
		return nil, fmt.Errorf("state %q is of bucket %q, not %q: give each source its own checkpoint_dir", path, doc.Bucket, bucket)
	}
	for k, v := range doc.Last {
		last[k] = v
	}
	return last, nil
}

// saveState writes the checkpoint file atomically, in a folder made when
// missing.
func saveState(dir, bucket string, last map[string]string) error {
	if dir == "" {
		return nil
	}
	b, err := json.Marshal(stateDoc{Version: stateVersion, Bucket: bucket, Last: last})
	if err != nil {
		return err
	}
	path := filepath.Join(dir, StateFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write state %q: %w", path, err)
	}
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return fmt.Errorf("write state %q: %w", path, err)
	}
	return nil
}
