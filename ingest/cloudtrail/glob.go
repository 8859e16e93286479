package cloudtrail

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CloudTrail delivers to AWSLogs/<account>/CloudTrail/<region>/<yyyy>/<mm>/<dd>/,
// so a folder synced from S3 is matched with "**" patterns, which
// path/filepath.Glob does not know. A "**" segment matches any number of
// folders, none included.

// validatePattern checks a pattern's syntax.
func validatePattern(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	for _, seg := range strings.Split(filepath.ToSlash(p), "/") {
		if seg == "**" {
			continue
		}
		if _, err := filepath.Match(seg, ""); err != nil {
			return err
		}
	}
	return nil
}

// hasMeta reports whether a path segment holds glob syntax.
func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// expand returns the regular files a pattern matches.
func expand(pattern string) ([]string, error) {
	if !strings.Contains(pattern, "**") {
		if !hasMeta(pattern) {
			fi, err := os.Stat(pattern)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil, nil
				}
				return nil, err
			}
			if fi.Mode().IsRegular() {
				return []string{pattern}, nil
			}
			return nil, nil
		}
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		return regular(m), nil
	}
	// Walk from the longest folder prefix without glob syntax.
	segs := strings.Split(filepath.ToSlash(filepath.Clean(pattern)), "/")
	i := 0
	for i < len(segs) && !hasMeta(segs[i]) {
		i++
	}
	root := strings.Join(segs[:i], "/")
	switch {
	case root == "" && strings.HasPrefix(filepath.ToSlash(pattern), "/"):
		root = "/"
	case root == "":
		root = "."
	}
	rest := segs[i:]
	root = filepath.FromSlash(root)
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			// An unreadable folder below the root is skipped, not fatal.
			if d != nil && d.IsDir() && path != root {
				return filepath.SkipDir
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return nil
		}
		if matchSegs(rest, strings.Split(filepath.ToSlash(rel), "/")) {
			out = append(out, path)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return out, err
}

func regular(paths []string) []string {
	out := paths[:0]
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	return out
}

// matchSegs matches path segments against pattern segments, "**" matching
// any number of segments.
func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 1 {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := filepath.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
