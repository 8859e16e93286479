package jsonl

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
)

// orphanScans is how many polls a file whose path vanished (renamed, the
// new file not created yet) is still read, so that lines its writer adds
// before reopening are not lost.
const orphanScans = 20

// tracked is one open file.
type tracked struct {
	path   string
	f      *os.File
	info   os.FileInfo
	offset int64
	st     *stream
	// orphaned is the scan at which the file left its path (0 while it is
	// the file at its path); replaced means its path holds a new file.
	orphaned int
	replaced bool
}

// follower polls a set of files and globs, like tail -F: it follows a path
// across rotation (rename and create, or copy and truncate) and picks up
// new files matching a glob. It runs in one goroutine, the caller's.
type follower struct {
	src      *Source
	patterns []string
	files    map[string]*tracked // the file at each path
	orphans  []*tracked          // files that left their path, read until done
	scans    int
	openErrs map[string]string // last open error per path, reported once
}

func newFollower(src *Source, patterns []string) *follower {
	return &follower{src: src, patterns: patterns, files: map[string]*tracked{}, openErrs: map[string]string{}}
}

func (fl *follower) run(ctx context.Context, sink ingest.Sink) error {
	sink = wrapSink(sink)
	defer fl.closeAll()
	t := time.NewTicker(fl.src.cfg.Poll)
	defer t.Stop()
	for {
		if err := fl.scan(ctx, sink); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// matches expands the patterns; literal paths are kept whether they exist
// or not.
func (fl *follower) matches() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range fl.patterns {
		var ms []string
		if strings.ContainsAny(p, `*?[\`) {
			ms, _ = filepath.Glob(p) // the pattern was checked in New
		} else {
			ms = []string{p}
		}
		for _, m := range ms {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	sort.Strings(out)
	return out
}

// scan is one poll: notice rotations and truncations, open new files, read
// everything to its end.
func (fl *follower) scan(ctx context.Context, sink ingest.Sink) error {
	fl.scans++
	initial := fl.scans == 1
	log := fl.src.log

	// Files we follow: still at their path, replaced, gone, truncated?
	for path, t := range fl.files {
		fi, err := os.Stat(path)
		switch {
		case err != nil:
			log.Debug("file left its path", zap.String("path", path))
			fl.orphan(t, false)
		case !os.SameFile(fi, t.info):
			log.Info("file rotated", zap.String("path", path))
			fl.orphan(t, true)
		default:
			cur, err := t.f.Stat()
			if err == nil && cur.Size() < t.offset {
				log.Info("file truncated", zap.String("path", path), zap.Int64("offset", t.offset), zap.Int64("size", cur.Size()))
				if _, err := t.f.Seek(0, io.SeekStart); err == nil {
					t.offset = 0
					t.st.lines.reset()
				}
			}
		}
	}

	// Paths without a file: a renamed file we follow, or a new file.
	var openErr error
	for _, path := range fl.matches() {
		if fl.files[path] != nil {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil {
			continue // not there (yet)
		}
		if t := fl.adopt(path, fi); t != nil {
			continue
		}
		t, err := fl.open(path, initial && !fl.src.cfg.FromStart)
		if err != nil {
			openErr = err
			if fl.openErrs[path] != err.Error() {
				fl.openErrs[path] = err.Error()
				fl.src.cfg.Reporter.Error(fl.src.cfg.Source, "open", err)
			}
			continue
		}
		delete(fl.openErrs, path)
		fl.files[path] = t
		for _, o := range fl.orphans {
			if o.path == path {
				o.replaced = true
			}
		}
	}
	fl.src.setReady(openErr)
	if fl.src.scanned != nil {
		defer fl.src.scanned()
	}

	// Read: old files first, so lines keep their order across a rotation.
	for _, t := range fl.orphans {
		if err := fl.read(ctx, t, sink); err != nil {
			return err
		}
	}
	paths := make([]string, 0, len(fl.files))
	for p := range fl.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := fl.read(ctx, fl.files[p], sink); err != nil {
			return err
		}
	}

	// Done with orphans whose path has a new file, or that waited long enough.
	kept := fl.orphans[:0]
	for _, t := range fl.orphans {
		if t.replaced || fl.scans-t.orphaned >= orphanScans {
			if err := fl.finish(ctx, t, sink); err != nil {
				return err
			}
			continue
		}
		kept = append(kept, t)
	}
	clear(fl.orphans[len(kept):])
	fl.orphans = kept
	return nil
}

// orphan moves t out of the path map; it is still read until it is done.
func (fl *follower) orphan(t *tracked, replaced bool) {
	delete(fl.files, t.path)
	t.orphaned = fl.scans
	t.replaced = replaced
	fl.orphans = append(fl.orphans, t)
}

// adopt moves an orphan that reappeared at path (renamed to a name the
// globs match) back into the path map, keeping its offset.
func (fl *follower) adopt(path string, fi os.FileInfo) *tracked {
	for i, t := range fl.orphans {
		if os.SameFile(fi, t.info) {
			fl.orphans = append(fl.orphans[:i], fl.orphans[i+1:]...)
			t.path, t.orphaned, t.replaced = path, 0, false
			t.st.name = path
			fl.files[path] = t
			return t
		}
	}
	for _, t := range fl.files {
		if os.SameFile(fi, t.info) { // a hard link, or a rename seen late
			return t
		}
	}
	return nil
}

func (fl *follower) open(path string, atEnd bool) (*tracked, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %q: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %q: %w", path, fs.ErrInvalid)
	}
	t := &tracked{path: path, f: f, info: fi, st: newStream(fl.src.cfg.Options, path)}
	if atEnd {
		off, err := f.Seek(0, io.SeekEnd)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("seek %q: %w", path, err)
		}
		t.offset = off
	}
	fl.src.log.Info("following file", zap.String("path", path), zap.Int64("offset", t.offset))
	return t, nil
}

// read reads t from its offset to its current end and hands the Events on.
func (fl *follower) read(ctx context.Context, t *tracked, sink ingest.Sink) error {
	before := t.st.counts.Bytes
	err := t.st.readFrom(ctx, t.f, sink)
	t.offset += t.st.counts.Bytes - before
	if err == nil {
		err = t.st.flush(ctx, sink)
	}
	if err != nil {
		if isSinkErr(err) || ctx.Err() != nil {
			return err
		}
		fl.src.cfg.Reporter.Error(fl.src.cfg.Source, "read", fmt.Errorf("read %q: %w", t.path, err))
	}
	return nil
}

// finish reads t's last lines, including an unterminated one, and closes it.
func (fl *follower) finish(ctx context.Context, t *tracked, sink ingest.Sink) error {
	defer t.f.Close()
	t.st.finish()
	return t.st.flush(ctx, sink)
}

func (fl *follower) closeAll() {
	for _, t := range fl.files {
		t.f.Close()
	}
	for _, t := range fl.orphans {
		t.f.Close()
	}
	fl.files, fl.orphans = nil, nil
}
