package cloudtrail

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hotkeyd/hotkeyd/internal/atomicfile"
)

// StateFile is the name of the file, in the checkpoint folder, that lists
// the log files already read. CloudTrail never changes a delivered file, so
// a file read once is done: the name, size and modification time are all a
// restart needs to skip it.
const StateFile = "cloudtrail-files.json"

// stateVersion is written in the file, for future changes of its shape.
const stateVersion = 1

// fileState is what is remembered of a file read.
type fileState struct {
	Size    int64 `json:"size"`
	ModTime int64 `json:"mtime_ns"`
}

type stateDoc struct {
	Version int                  `json:"version"`
	Files   map[string]fileState `json:"files"`
}

// loadState reads the state file in dir. A missing file is an empty state;
// a corrupt one is an error, since starting over would count every file
// again.
func loadState(dir string) (map[string]fileState, error) {
	files := map[string]fileState{}
	if dir == "" {
		return files, nil
	}
	path := filepath.Join(dir, StateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		// No state yet; a folder that cannot be made is said when the
		// state is saved (Source.Ready).
		return files, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state %q: %w", path, err)
	}
	var doc stateDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decode state %q: %w (move it away to read every file again)", path, err)
	}
	if doc.Version != stateVersion {
		return nil, fmt.Errorf("decode state %q: unknown version %d", path, doc.Version)
	}
	for k, v := range doc.Files {
		files[k] = v
	}
	return files, nil
}

// saveState writes the state file atomically (package atomicfile), so a
// crash leaves either the old state or the new one. The folder is made
// when missing (the example config's path under the shipped systemd unit,
// a fresh volume).
func saveState(dir string, files map[string]fileState) error {
	if dir == "" {
		return nil
	}
	b, err := json.Marshal(stateDoc{Version: stateVersion, Files: files})
	if err != nil {
		return err
	}
	path := filepath.Join(dir, StateFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write state %q: %w", path, err)
	}
	if err := atomicfile.Write(path, b); err != nil {
		return fmt.Errorf("write state %q: %w", path, err)
	}
	return nil
}
