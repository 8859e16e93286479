package follow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/hotkeyd/hotkeyd/ingest/input"
)

// Validate checks a path or glob pattern: doublestar syntax, where "**"
// matches any number of folders, "{a,b}" either name, and "*", "?" and
// "[...]" are filepath.Match's.
func Validate(pattern string) error {
	if pattern == "" {
		return errors.New("empty path")
	}
	if !doublestar.ValidatePathPattern(filepath.Clean(pattern)) {
		return fmt.Errorf("bad glob pattern %q", pattern)
	}
	return nil
}

// ValidateSettings checks the keys a file reader's configuration shares:
// paths, at least one, each a valid pattern (Validate), "-" (standard
// input) only when stdin is true; and poll_interval, not negative (zero is
// the reader's default). Its errors name the key as a path: paths[1].
func ValidateSettings(paths []string, stdin bool, poll time.Duration) error {
	var errs []error
	if poll < 0 {
		errs = append(errs, fmt.Errorf("poll_interval: must be positive, got %s", poll))
	}
	if len(paths) == 0 {
		errs = append(errs, errors.New("paths: at least one path is required"))
	}
	for i, p := range paths {
		var err error
		switch {
		case p == "-" && !stdin:
			err = errors.New("stdin is not supported by this source")
		case p != "-":
			err = Validate(p)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("paths[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// hasMeta reports whether a pattern holds glob syntax.
func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[{\`) }

// match is one regular file the patterns matched.
type match struct {
	path string
	info os.FileInfo // of the file, symbolic links followed
	id   fileID
	// link is set when path is a symbolic link.
	link bool
}

// skip is a path the patterns matched that is not read, and why.
type skip struct {
	path   string
	reason string
	// broken is set when the path cannot be read as it is (not a regular
	// file, a symbolic link loop, no permission): the source is not ready
	// while it lasts. A symbolic link whose target does not exist yet is
	// not broken.
	broken bool
}

// list expands the patterns into the regular files they match, each file
// once (one path per file: a symbolic link and its target, or two
// patterns, do not make it twice, and the link's own path is kept only
// when the target's is not matched), oldest first. Literal paths are kept
// whether or not they exist yet. err is the first folder that could not be
// listed at all.
//
// Symbolic links to regular files are followed, under "**" too; symbolic
// links to folders are not followed by "**" (a loop would list the same
// files under endless names) but are when a pattern names them before its
// first wildcard.
func list(patterns []string) (files []match, skips []skip, err error) {
	seen := map[string]bool{}
	byID := map[fileID]int{}
	for _, p := range patterns {
		var paths []string
		if hasMeta(p) {
			if err == nil {
				err = checkBase(p)
			}
			// Errors below the base folder (an unreadable sub-folder) skip
			// that folder only.
			paths, _ = doublestar.FilepathGlob(p, doublestar.WithNoFollow())
		} else {
			paths = []string{filepath.Clean(p)}
		}
		dirsOK := strings.HasSuffix(filepath.ToSlash(p), "**")
		for _, path := range paths {
			if seen[path] {
				continue
			}
			seen[path] = true
			m, sk, ok := classify(path, dirsOK)
			if !ok {
				if sk.reason != "" {
					skips = append(skips, sk)
				}
				continue
			}
			if i, dup := byID[m.id]; dup && m.id != (fileID{}) {
				if files[i].link && !m.link {
					files[i] = m
				}
				continue
			}
			byID[m.id] = len(files)
			files = append(files, m)
		}
	}
	sort.Slice(files, func(i, j int) bool {
		ti, tj := files[i].info.ModTime(), files[j].info.ModTime()
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return files[i].path < files[j].path
	})
	return files, skips, err
}

// checkBase returns why the folder a pattern starts from cannot be listed,
// or nil (a folder that does not exist yet is fine: it may appear).
func checkBase(pattern string) error {
	base, _ := doublestar.SplitPattern(filepath.ToSlash(filepath.Clean(pattern)))
	_, err := os.ReadDir(filepath.FromSlash(base))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("list %q: %w", pattern, err)
}

// classify stats one matched path. ok is set for a regular file; otherwise
// sk says why it is skipped (an empty reason: nothing to say, such as a
// path that does not exist). dirsOK says a folder is no surprise (the
// pattern ends in "**", which matches folders too).
func classify(path string, dirsOK bool) (m match, sk skip, ok bool) {
	fi, err := os.Stat(path)
	if err != nil {
		lfi, lerr := os.Lstat(path)
		switch {
		case lerr != nil:
			return m, skip{}, false // not there (yet), or gone
		case errors.Is(err, syscall.ELOOP):
			return m, skip{path, "symbolic link loop", true}, false
		case errors.Is(err, fs.ErrNotExist) && lfi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			return m, skip{path, fmt.Sprintf("symbolic link to %q, which does not exist (yet)", target), false}, false
		}
		return m, skip{path, err.Error(), true}, false
	}
	lfi, err := os.Lstat(path)
	link := err == nil && lfi.Mode()&fs.ModeSymlink != 0
	switch mode := fi.Mode(); {
	case mode.IsRegular():
		return match{path: path, info: fi, id: idOf(fi), link: link}, skip{}, true
	case mode.IsDir() && link:
		return m, skip{path, "symbolic link to a folder: not followed by wildcards", false}, false
	case mode.IsDir() && dirsOK:
		return m, skip{}, false
	case mode.IsDir():
		return m, skip{path, "is a folder", true}, false
	default:
		return m, skip{path, fmt.Sprintf("not a regular file (%s)", input.FileKind(mode)), true}, false
	}
}

// stamp is what tells a file's version apart: its size and modification
// time.
type stamp struct {
	size  int64
	mtime time.Time
}

func stampOf(fi os.FileInfo) stamp { return stamp{fi.Size(), fi.ModTime()} }
