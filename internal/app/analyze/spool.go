package analyze

import (
	"fmt"
	"io"
	"os"
)

// spool copies the inputs that can be read only once (standard input,
// pipes, character devices such as /dev/stdin) to temporary files, so
// that they can be cut into parts and read again (outliers, or without a
// spill: spill.go): the paths to read them
// from, by name (parallel.Config.Paths), and a function that removes the
// copies. An input that cannot be opened is left as it is: reading it
// names the error. The copies take the disk space of the inputs as they
// are (compressed ones stay compressed).
func spool(names []string, stdin io.Reader) (paths map[string]string, cleanup func(), err error) {
	paths = map[string]string{}
	var made []string
	cleanup = func() {
		for _, p := range made {
			os.Remove(p)
		}
	}
	for _, name := range names {
		if _, ok := paths[name]; ok {
			continue
		}
		var src io.Reader
		if name == "-" {
			src = stdin
		} else {
			fi, err := os.Stat(name)
			if err != nil || fi.Mode().IsRegular() || fi.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) == 0 {
				continue
			}
			f, err := os.Open(name)
			if err != nil {
				continue
			}
			defer f.Close()
			src = f
		}
		tmp, err := os.CreateTemp("", "hotkeyd-analyze-*")
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("copy %s to read it in parts: %w", name, err)
		}
		made = append(made, tmp.Name())
		_, err = io.Copy(tmp, src)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("copy %s to read it in parts: %w", name, err)
		}
		paths[name] = tmp.Name()
	}
	return paths, cleanup, nil
}
