package s3trail

import (
	"fmt"
	"maps"
	"path/filepath"

	"github.com/hotkeyd/hotkeyd/ingest/internal/statefile"
)

// StateFile is the name of the checkpoint file in the checkpoint folder:
// per region folder of the layout, the last key read.
const StateFile = "cloudtrail-s3.json"

// stateFormat is the checkpoint file's: version 1 since it was first
// written.
var stateFormat = statefile.Format{What: "state", Version: 1, Redo: "read every object again"}

type stateDoc struct {
	statefile.Header
	Bucket string `json:"bucket"`
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
	var doc stateDoc
	found, err := stateFormat.Load(path, &doc)
	if err != nil || !found {
		return last, err
	}
	if doc.Bucket != bucket {
		return nil, fmt.Errorf("state %q is of bucket %q, not %q: give each source its own checkpoint_dir", path, doc.Bucket, bucket)
	}
	maps.Copy(last, doc.Last)
	return last, nil
}

// saveState writes the checkpoint file atomically, in a folder made when
// missing.
func saveState(dir, bucket string, last map[string]string) error {
	if dir == "" {
		return nil
	}
	return stateFormat.Save(filepath.Join(dir, StateFile), &stateDoc{Bucket: bucket, Last: last})
}
