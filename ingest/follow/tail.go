package follow

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"go.uber.org/zap"
)

const (
	// headLen is how much of a file's start is kept to recognise a copy of
	// it under another name.
	headLen = 1024
	// minPrint is the shortest start that can recognise a copy: shorter,
	// two logs that merely begin alike would be taken for one another.
	minPrint = 64
	// windowLen is how many bytes before the offset read are kept to tell
	// a file truncated and written again between two polls.
	windowLen = 64
	// maxPrints bounds the starts kept of files no longer followed.
	maxPrints = 64
)

// tail is one growing file followed.
type tail struct {
	file   File
	f      *os.File
	info   os.FileInfo // at open: the file's identity
	id     fileID
	offset int64 // bytes read (or skipped) from the start
	c      Consumer
	// head is the file's first bytes, up to headLen and no further than
	// offset; window the last bytes before offset, up to windowLen.
	head, window []byte
	// last is the size and modification time seen at the last read.
	last stamp
	// orphaned is the poll at which the file left its path (0 while it is
	// the file at its path); replaced means its path holds a new file.
	orphaned int
	replaced bool
}

// startTail starts following a growing file, at its end or from its
// start (after what a copy of it already gave). It returns nil, and fh
// stays the caller's, when the Handler does not want the file.
func (fl *Follower) startTail(m match, fh *os.File, fi os.FileInfo, f File, atEnd bool) (*tail, error) {
	t := &tail{f: fh, info: fi, id: m.id, file: f}
	if atEnd {
		t.offset = fi.Size()
	} else if head := readHead(fh, headLen); len(head) > 0 {
		if skip := fl.copied(head, m.id); skip > 0 {
			t.offset = min(skip, fi.Size())
			fl.log.Info("file holds what was read already under another name: read after it",
				zap.String("path", m.path), zap.Int64("offset", t.offset))
		}
	}
	t.file.Offset = t.offset
	if t.c = fl.h.Open(t.file); t.c == nil {
		return nil, nil
	}
	if _, err := fh.Seek(t.offset, io.SeekStart); err != nil {
		return nil, &openError{fmt.Errorf("seek %q: %w", m.path, err)}
	}
	t.readHead()
	t.window = t.window[:0]
	if n := min(t.offset, windowLen); n > 0 {
		t.window = make([]byte, n, windowLen)
		if _, err := fh.ReadAt(t.window, t.offset-n); err != nil {
			t.window = t.window[:0]
		}
	}
	fl.tails[m.path] = t
	for _, o := range fl.orphans {
		if o.file.Path == m.path {
			o.replaced = true
		}
	}
	fl.log.Info("following file", zap.String("path", m.path), zap.Int64("offset", t.offset))
	return t, nil
}

// checkTails notices the files followed that left their path: renamed
// away, or replaced by a new file.
func (fl *Follower) checkTails() {
	for path, t := range fl.tails {
		fi, err := os.Stat(path)
		switch {
		case err != nil:
			fl.log.Debug("file left its path", zap.String("path", path))
			fl.orphan(t, false)
		case !os.SameFile(fi, t.info):
			fl.log.Info("file rotated", zap.String("path", path))
			fl.orphan(t, true)
		}
	}
}

// orphan moves t out of the path map; it is still read until it is done.
func (fl *Follower) orphan(t *tail, replaced bool) {
	delete(fl.tails, t.file.Path)
	t.orphaned = fl.polls
	t.replaced = replaced
	fl.orphans = append(fl.orphans, t)
}

// adopt moves an orphan that reappeared under a name the patterns match
// (renamed) back into the path map, keeping its offset, and returns it. It
// returns the file followed under another name when m is one (a hard link,
// a symbolic link and its target), and nil for a file not followed.
func (fl *Follower) adopt(m match) *tail {
	for i, t := range fl.orphans {
		if os.SameFile(m.info, t.info) {
			fl.orphans = append(fl.orphans[:i], fl.orphans[i+1:]...)
			t.file.Path, t.orphaned, t.replaced = m.path, 0, false
			fl.tails[m.path] = t
			return t
		}
	}
	for _, t := range fl.tails {
		if os.SameFile(m.info, t.info) {
			return t
		}
	}
	return nil
}

// readTails reads the growing files to their end: the orphans first, so
// that lines keep their order across a rotation, then the others oldest
// first. Orphans whose path holds a new file, or that waited long enough,
// are then finished.
func (fl *Follower) readTails(ctx context.Context, matches []match) error {
	for _, t := range fl.orphans {
		if err := fl.readTail(ctx, t); err != nil {
			return err
		}
	}
	for _, m := range matches {
		if t := fl.tails[m.path]; t != nil {
			if err := fl.readTail(ctx, t); err != nil {
				return err
			}
		}
	}
	kept := fl.orphans[:0]
	for _, t := range fl.orphans {
		if t.replaced || fl.polls-t.orphaned >= orphanPolls {
			if err := fl.finish(ctx, t); err != nil {
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

// readTail reads t from its offset to its current end, after checking
// that the file was not truncated since the last read.
func (fl *Follower) readTail(ctx context.Context, t *tail) error {
	if fi, err := t.f.Stat(); err == nil {
		st := stampOf(fi)
		switch {
		case st == t.last:
			return nil // nothing written since the last read
		case fi.Size() < t.offset:
			fl.log.Info("file truncated", zap.String("path", t.file.Path), zap.Int64("offset", t.offset), zap.Int64("size", fi.Size()))
			fl.restart(t)
		case t.rewritten():
			err := fmt.Errorf("%q truncated and written again past the offset read (%d bytes) between two polls: read again from its start; what was written to it after that offset before the truncation is lost", t.file.Path, t.offset)
			fl.log.Warn("file truncated and written again between two polls", zap.String("path", t.file.Path),
				zap.Int64("offset", t.offset), zap.Int64("size", fi.Size()))
			fl.rep.Error(fl.cfg.Source, ReasonTruncated, err)
			fl.restart(t)
		}
		t.last = st
	}
	if t.offset == 0 && t.orphaned == 0 {
		// Nothing read yet: a file followed while it was empty (or too
		// short to tell) may turn out to be a compressed archive, whose
		// compressor created it and wrote its first bytes later.
		switch codec, undecided, err := sniffFile(t.f); {
		case err != nil:
			// Read as usual: the read reports what is wrong.
		case undecided:
			return nil // read once it changed and can be told
		case codec != "":
			return fl.untail(ctx, t, codec)
		}
	}
	err := t.c.Read(ctx, &tailReader{t: t, r: &ctxReader{ctx: ctx, r: t.f}})
	t.readHead()
	return err
}

// untail stops following t, found to be a compressed archive before
// anything was read from it: the next poll finds it as an archive, read
// whole once it settles.
func (fl *Follower) untail(ctx context.Context, t *tail, codec string) error {
	delete(fl.tails, t.file.Path)
	fl.log.Info("file followed is a compressed archive: reading it whole once it settles",
		zap.String("path", t.file.Path), zap.String("codec", codec))
	defer t.f.Close()
	return t.c.Close(ctx)
}

// rewritten reports whether the bytes before t's offset are no longer
// those read there: the file was truncated and written again past the
// offset since the last read.
func (t *tail) rewritten() bool {
	if len(t.window) == 0 {
		return false
	}
	buf := make([]byte, len(t.window))
	n, _ := t.f.ReadAt(buf, t.offset-int64(len(buf)))
	return !bytes.Equal(buf[:n], t.window)
}

// restart reads t again from its start, after keeping its start to
// recognise a copy of what it held.
func (fl *Follower) restart(t *tail) {
	fl.prints.add(t)
	if _, err := t.f.Seek(0, io.SeekStart); err != nil {
		return
	}
	t.offset = 0
	t.head, t.window = t.head[:0], t.window[:0]
	t.c.Reset()
}

// finish hands t's last bytes (an unterminated line) on and closes it.
func (fl *Follower) finish(ctx context.Context, t *tail) error {
	defer t.f.Close()
	fl.prints.add(t)
	return t.c.Close(ctx)
}

// readHead keeps the file's first bytes read, up to headLen.
func (t *tail) readHead() {
	if want := int(min(t.offset, headLen)); len(t.head) < want {
		t.head = readHead(t.f, want)
	}
}

// readHead returns the first n bytes of f (fewer when it is shorter).
func readHead(f *os.File, n int) []byte {
	buf := make([]byte, n)
	k, _ := f.ReadAt(buf, 0)
	return buf[:k]
}

// tailReader reads a followed file, counting the bytes read into the
// offset and keeping the last ones.
type tailReader struct {
	t *tail
	r io.Reader
}

func (tr *tailReader) Read(p []byte) (int, error) {
	n, err := tr.r.Read(p)
	if n > 0 {
		t := tr.t
		t.offset += int64(n)
		if n >= windowLen {
			t.window = append(t.window[:0], p[n-windowLen:n]...)
		} else {
			t.window = append(t.window, p[:n]...)
			if over := len(t.window) - windowLen; over > 0 {
				t.window = append(t.window[:0], t.window[over:]...)
			}
		}
	}
	return n, err
}

// print is the start of a file read, and how much of it was read: a file
// that begins with head is a copy of it, of which the first offset bytes
// were read already.
type print struct {
	head   []byte
	offset int64
	id     fileID
}

// prints are the starts of files no longer followed (rotated away,
// truncated), the most recent last.
type prints []print

func (ps *prints) add(t *tail) {
	if len(t.head) < minPrint {
		return
	}
	if len(*ps) == maxPrints {
		*ps = append((*ps)[:0], (*ps)[1:]...)
	}
	*ps = append(*ps, print{head: bytes.Clone(t.head), offset: t.offset, id: t.id})
}

// copied returns how much of a file beginning with head was read already
// under another name: the offset read of the file it is a copy of (one
// followed now or recently), or 0. A file is not a copy of itself.
func (fl *Follower) copied(head []byte, id fileID) int64 {
	var best int64
	try := func(p []byte, offset int64, pid fileID) {
		if len(p) >= minPrint && (pid != id || id == fileID{}) && bytes.HasPrefix(head, p) {
			best = max(best, offset)
		}
	}
	for _, p := range fl.prints {
		try(p.head, p.offset, p.id)
	}
	for _, t := range fl.tails {
		try(t.head, t.offset, t.id)
	}
	for _, t := range fl.orphans {
		try(t.head, t.offset, t.id)
	}
	return best
}

// peek reads up to n bytes of r for a look at its start; the caller puts
// them back in front of the rest.
func peek(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, n)
	k, err := io.ReadFull(r, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return buf[:k], err
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
