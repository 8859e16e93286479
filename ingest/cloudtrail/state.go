package cloudtrail

import (
	"errors"
	"maps"
	"path/filepath"
	"syscall"

	"github.com/hotkeyd/hotkeyd/ingest/internal/statefile"
)

// StateFile is the name of the file, in the checkpoint folder, that lists
// the log files already read. CloudTrail never changes a delivered file, so
// a file read once is done: the name, size and modification time are all a
// restart needs to skip it.
const StateFile = "cloudtrail-files.json"

// stateFormat is the state file's: version 1 since it was first written.
var stateFormat = statefile.Format{What: "state", Version: 1, Redo: "read every file again"}

// fileState is what is remembered of a file read.
type fileState struct {
	Size    int64 `json:"size"`
	ModTime int64 `json:"mtime_ns"`
}

type stateDoc struct {
	statefile.Header
	Files map[string]fileState `json:"files"`
}

// loadState reads the state file in dir. A missing file is an empty state;
// a corrupt one is an error, since starting over would count every file
// again.
func loadState(dir string) (map[string]fileState, error) {
	files := map[string]fileState{}
	if dir == "" {
		return files, nil
	}
	var doc stateDoc
	_, err := stateFormat.Load(filepath.Join(dir, StateFile), &doc)
	if errors.Is(err, syscall.ENOTDIR) {
		// No state yet; a folder that cannot be made is said when the
		// state is saved (Source.Ready).
		return files, nil
	}
	if err != nil {
		return nil, err
	}
	maps.Copy(files, doc.Files)
	return files, nil
}

// saveState writes the state file atomically, so a crash leaves either
// the old state or the new one, in a folder made when missing.
func saveState(dir string, files map[string]fileState) error {
	if dir == "" {
		return nil
	}
	return stateFormat.Save(filepath.Join(dir, StateFile), &stateDoc{Files: files})
}
