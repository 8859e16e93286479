// Package atomicfile writes the small state files hotkeyd keeps across
// restarts (stream checkpoints, the files and objects read) so that a
// crash leaves either the old content or the new one, never a torn file.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces the file path with data: a temporary file in the same
// folder, synced, renamed over path, then the folder synced, so that the
// rename itself survives a crash.
func Write(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
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
