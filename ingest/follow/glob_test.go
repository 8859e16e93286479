package follow

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// touch creates the files (and their folders) under dir.
func touch(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// listed returns the paths list finds for pattern under dir, relative
// and sorted, and the skipped ones with their reasons.
func listed(t *testing.T, dir, pattern string) (files string, skipped map[string]skip) {
	t.Helper()
	ms, sks, err := list([]string{filepath.Join(dir, pattern)})
	if err != nil {
		t.Fatalf("%s: %v", pattern, err)
	}
	var rel []string
	for _, m := range ms {
		r, _ := filepath.Rel(dir, m.path)
		rel = append(rel, filepath.ToSlash(r))
	}
	sort.Strings(rel)
	skipped = map[string]skip{}
	for _, sk := range sks {
		r, _ := filepath.Rel(dir, sk.path)
		skipped[filepath.ToSlash(r)] = sk
	}
	return strings.Join(rel, " "), skipped
}

func TestList(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "a.json.gz", "x/b.json.gz", "x/y/c.json.gz", "x/y/c.json", "z/d.json.gz")
	cases := map[string]string{
		"**/*.json.gz":     "a.json.gz x/b.json.gz x/y/c.json.gz z/d.json.gz",
		"x/**/*.json.gz":   "x/b.json.gz x/y/c.json.gz",
		"x/**/y/*":         "x/y/c.json x/y/c.json.gz",
		"*/*.json.gz":      "x/b.json.gz z/d.json.gz",
		"x/y/c.json":       "x/y/c.json",
		"x/y/missing.json": "",
		"nope/**/*.json":   "",
		"**":               "a.json.gz x/b.json.gz x/y/c.json x/y/c.json.gz z/d.json.gz",
		"{a,z/d}.json.gz":  "a.json.gz z/d.json.gz",
	}
	for pat, want := range cases {
		got, skipped := listed(t, dir, pat)
		if got != want || len(skipped) != 0 {
			t.Errorf("%s: got %q (skipped %v), want %q", pat, got, skipped, want)
		}
	}
}

func TestListSkips(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "real.log", "deep/x/target.log")
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("real.log", "current.log")                             // a link and its target: one file
	link(filepath.Join(dir, "deep/x/target.log"), "linked.log") // a link to a file matched alone
	link("missing.log", "dangling.log")
	link("loop-b.log", "loop-a.log")
	link("loop-a.log", "loop-b.log")
	link("deep", "folder.log")
	if err := os.Mkdir(filepath.Join(dir, "dir.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.log"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}

	got, skipped := listed(t, dir, "*.log")
	if got != "linked.log real.log" {
		t.Errorf("files %q, want the link to a file matched alone and the target, not its link", got)
	}
	for name, want := range map[string]struct {
		reason string
		broken bool
	}{
		"dangling.log": {`symbolic link to "missing.log", which does not exist (yet)`, false},
		"loop-a.log":   {"symbolic link loop", true},
		"loop-b.log":   {"symbolic link loop", true},
		"folder.log":   {"symbolic link to a folder: not followed by wildcards", false},
		"dir.log":      {"is a folder", true},
		"pipe.log":     {"not a regular file (a named pipe)", true},
	} {
		sk, ok := skipped[name]
		if !ok || sk.reason != want.reason || sk.broken != want.broken {
			t.Errorf("%s: skipped %v (%+v), want %+v", name, ok, sk, want)
		}
	}
	if len(skipped) != 6 {
		t.Errorf("skipped %v, want 6", skipped)
	}

	// Under "**", links to files are followed, folders matched by "**"
	// itself are no news, and a link to a folder is not walked.
	got, skipped = listed(t, dir, "**")
	if got != "deep/x/target.log real.log" || len(skipped) != 5 || skipped["dir.log"].reason != "" {
		t.Errorf("**: files %q, skipped %v", got, skipped)
	}
	// A literal path is a file like any other.
	if got, skipped := listed(t, dir, "loop-a.log"); got != "" || !skipped["loop-a.log"].broken {
		t.Errorf("literal loop: %q %v", got, skipped)
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []string{"/var/log/*.log", "/var/log/**/*.json.gz", "a.log", "/x/{a,b}/*.log"} {
		if err := Validate(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"", "/var/log/[.log", "/var/log/[x/*.json", "/x/{a,b/*.log"} {
		if err := Validate(p); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
}
