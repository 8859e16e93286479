// Package statefile keeps the readers' small JSON state files (the
// CloudTrail reader's list of files read and its S3 checkpoint, the shard
// engine's per-shard checkpoints): a version in every file, a missing file
// read as no state, a file that cannot be used told apart from one that
// cannot be read, and writes that a crash cannot tear (package
// atomicfile).
package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hotkeyd/hotkeyd/internal/atomicfile"
)

// Header is embedded in every state document: the version of its shape.
type Header struct {
	Version int `json:"version"`
}

func (h *Header) header() *Header { return h }

// Doc is a state document: a struct that embeds Header.
type Doc interface {
	header() *Header
}

// ErrCorrupt marks a state file that exists but cannot be used: not JSON
// of the document's shape, or of a version this build does not read.
var ErrCorrupt = errors.New("unusable state file")

// DecodeError is a state file that cannot be used (errors.Is ErrCorrupt).
type DecodeError struct {
	What string // "state", "checkpoint"
	Path string
	Err  error
	Redo string // what moving the file away does (Format.Redo)
}

func (e *DecodeError) Error() string {
	msg := fmt.Sprintf("decode %s %q: %v", e.What, e.Path, e.Err)
	if e.Redo != "" {
		msg += " (move it away to " + e.Redo + ")"
	}
	return msg
}

// Unwrap returns the cause and ErrCorrupt.
func (e *DecodeError) Unwrap() []error { return []error{e.Err, ErrCorrupt} }

// Format is one kind of state file.
type Format struct {
	// What names the file in errors ("state", "checkpoint").
	What string
	// Version is the version written, and read.
	Version int
	// Older are the older versions read as Version: files whose shape did
	// not change since. A file written before its kind had a version
	// member reads as version 0.
	Older []int
	// DirMode is the mode of a folder made by Save (0o700 when zero).
	DirMode fs.FileMode
	// Redo, when set, ends the error of a file that cannot be used: what
	// moving it away does ("read every file again").
	Redo string
}

// Load reads the file at path into doc. found is false, with no error,
// when there is no file. An error is either the read's (wrapped) or a
// *DecodeError.
func (f Format) Load(path string, doc Doc) (found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s %q: %w", f.What, path, err)
	}
	if err := json.Unmarshal(b, doc); err != nil {
		return false, &DecodeError{What: f.What, Path: path, Err: err, Redo: f.Redo}
	}
	if v := doc.header().Version; !f.reads(v) {
		return false, &DecodeError{What: f.What, Path: path, Err: fmt.Errorf("unknown version %d", v), Redo: f.Redo}
	}
	doc.header().Version = f.Version
	return true, nil
}

func (f Format) reads(v int) bool {
	if v == f.Version {
		return true
	}
	for _, o := range f.Older {
		if v == o {
			return true
		}
	}
	return false
}

// Save writes doc, stamped with the Format's version, to path as one line
// of JSON, atomically: a crash leaves the old file or the new one. The
// folder is made when missing (a fresh volume, the example config's path
// under the shipped systemd unit).
func (f Format) Save(path string, doc Doc) error {
	doc.header().Version = f.Version
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode %s %q: %w", f.What, path, err)
	}
	mode := f.DirMode
	if mode == 0 {
		mode = 0o700
	}
	if err := os.MkdirAll(filepath.Dir(path), mode); err != nil {
		return fmt.Errorf("write %s %q: %w", f.What, path, err)
	}
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return fmt.Errorf("write %s %q: %w", f.What, path, err)
	}
	return nil
}
