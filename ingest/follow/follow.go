// Package follow follows the files that paths and glob patterns match, for
// the readers of files (package jsonl's log follower, package cloudtrail's
// delivery folder): it lists the patterns every poll, opens what they
// match, and hands each file's content to the reader.
//
// Two kinds of file are read two ways:
//
//   - A growing file (a plain log) is tailed, like tail -F: a file there at
//     the first poll from its end (Config.FromStart: from its start), one
//     that appears later from its start; it is followed across rotation by
//     rename (its last lines are still read) and truncation in place
//     (copytruncate), including a truncation and rewrite between two polls,
//     which is told by the bytes before the offset read having changed.
//   - A finished file (compressed content — gzip, zstd, xz, recognised by
//     its first bytes — or every file with Config.Whole) is read once,
//     whole and decompressed (package input), when it has stopped changing;
//     an archive that then ends short is waited for while it is young, in
//     case its writer stalled.
//
// A file is one file whatever its names: a symbolic link and its target, a
// hard link, a file renamed to another name the patterns match, are read
// once. A rotated copy of a file already read (logrotate's copy, or its
// compressed archive) is recognised by its first bytes, and only what was
// not read yet is read from it.
//
// What is matched but cannot be read is said once in the log and not read:
// a folder, a named pipe or other special file (never opened, so a pipe
// cannot block the reader), a symbolic link loop, a file without
// permission (these make Ready fail while they last), or a symbolic link
// whose target does not exist yet.
package follow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Config configures a Follower.
type Config struct {
	// Paths are files or glob patterns (see Validate).
	Paths []string
	// Poll is how often the patterns are listed and the files read.
	Poll time.Duration
	// Whole makes every file a finished one, read once, whole, when it has
	// settled: the files of a delivery folder (CloudTrail), which are never
	// appended to. A file begun is read on for up to Finish once the
	// context of Run is done, so that a stop does not leave it counted in
	// part.
	Whole bool
	// Finish bounds how long a whole file begun is still read once the
	// context of Run is done (with Whole); zero means DefaultFinish. It
	// must stay below the daemon's drain (10 s).
	Finish time.Duration
	// FromStart reads the files there at the first poll from their start.
	// By default a growing file there at the first poll is read from its
	// end and a finished one (a compressed archive) not at all, so that a
	// restart does not count them twice. With Whole every file is read:
	// the Handler says which were read before.
	FromStart bool
	// Source is the source label of the errors reported.
	Source string
	// Reporter counts the errors (open, read, truncated); nil discards
	// them.
	Reporter traffic.Reporter
	// Log is for the lines that say what happens to a file; nil logs
	// nothing.
	Log *zap.Logger
	// Now is the clock that tells a settled file (time.Now when nil).
	Now func() time.Time
}

// File is one file as the Follower hands it to the Handler.
type File struct {
	// Path is the name the file was matched under.
	Path string
	// Size and ModTime are the file's when it was opened.
	Size    int64
	ModTime time.Time
	// Initial is set for a file that was there at the first poll.
	Initial bool
	// Finished is set for a file read whole, once.
	Finished bool
	// Codec is the compression of a file found finished by its content
	// ("gzip", "zstd", "xz"; "" otherwise).
	Codec string
	// Offset is where reading a growing file starts: its end for a file
	// there at the first poll, how much of a copy was read already under
	// another name, else 0.
	Offset int64
}

// Handler is the reader on top of a Follower. Its methods are called from
// the goroutine that runs the Follower, one call at a time.
type Handler interface {
	// Open returns the Consumer of one file's content, or nil to leave the
	// file unread (a finished file read before a restart, or one too
	// old): it is not offered again while it stays as it is.
	Open(f File) Consumer
	// Polled is called at the end of each poll with every file the
	// patterns matched.
	Polled(files []File)
}

// Consumer takes the content of one file. A growing file is handed over
// in pieces, each call of Read with what was appended since; a finished
// file in one call of Read with the whole content, decompressed.
//
// Read and Close report what goes wrong with the file itself (a read
// error, a corrupt archive) to the reader's Reporter and return nil; an
// error they return stops the Follower (a Sink that refuses a batch, ctx).
type Consumer interface {
	// Read consumes r to its end.
	Read(ctx context.Context, r io.Reader) error
	// Reset drops a partial line held back: the file was truncated and
	// what comes next starts over.
	Reset()
	// Close is called once the file is done: a finished file read, or a
	// growing one that left its path and was read to its end. It consumes
	// an unterminated last line.
	Close(ctx context.Context) error
}

// Errors reported with these reasons to the Reporter.
const (
	// ReasonOpen: a file matched cannot be opened or read as a file.
	ReasonOpen = "open"
	// ReasonList: a folder a pattern starts from cannot be listed.
	ReasonList = "list"
	// ReasonTruncated: a growing file was truncated and written again past
	// the offset read between two polls (copytruncate); what was written
	// to it between the last poll and the truncation may be lost.
	ReasonTruncated = "truncated"
)

// orphanPolls is how many polls a file that left its path (renamed, the
// new file not created yet) is still read, so that lines its writer adds
// before reopening are not lost.
const orphanPolls = 20

// settleTime is how old a finished file's modification time must be for
// it to be read at first sight; a younger file is read once two polls
// found it unchanged, so that a file still being written is not read
// half-way.
const settleTime = 2 * time.Second

// archiveWait is how long after it last changed an archive whose
// compressed content ends short is waited for rather than read: its writer
// may have stalled. Past it, it is read as it is and the reader reports it
// truncated.
const archiveWait = time.Minute

// Follower follows the files of Config.Paths. Run does the work; Ready
// may be called from any goroutine.
type Follower struct {
	cfg Config
	h   Handler
	log *zap.Logger
	rep traffic.Reporter

	mu       sync.Mutex
	notReady error

	// Owned by Run.
	polls    int
	tails    map[string]*tail // growing files, by path
	orphans  []*tail          // growing files that left their path
	done     map[string]done  // finished files read or left unread
	pending  map[string]stamp // finished files waiting to settle
	short    map[string]stamp // archives found cut short, as they were then
	reported map[string]string
	prints   prints
}

// done is a finished file read (or left unread) and its version.
type done struct {
	stamp
	id fileID
}

// New checks cfg's patterns and returns a Follower calling h.
func New(cfg Config, h Handler) (*Follower, error) {
	if len(cfg.Paths) == 0 {
		return nil, errors.New("no paths")
	}
	for _, p := range cfg.Paths {
		if err := Validate(p); err != nil {
			return nil, fmt.Errorf("path %q: %w", p, err)
		}
	}
	if cfg.Poll <= 0 {
		return nil, errors.New("poll interval must be positive")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Log
	if log == nil {
		log = zap.NewNop()
	}
	rep := cfg.Reporter
	if rep == nil {
		rep = traffic.NopReporter{}
	}
	return &Follower{
		cfg: cfg, h: h, log: log, rep: rep,
		tails:    map[string]*tail{},
		done:     map[string]done{},
		pending:  map[string]stamp{},
		short:    map[string]stamp{},
		reported: map[string]string{},
	}, nil
}

// Ready returns why a file matched cannot be read (not a regular file, no
// permission, a symbolic link loop) or a folder cannot be listed, as of
// the last poll; nil when every file matched is read. A file that does not
// exist yet is not an error: it is read when it appears.
func (fl *Follower) Ready() error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return fl.notReady
}

// Run polls until ctx is done, then closes every file and returns nil. It
// returns early with the error of a Consumer.
func (fl *Follower) Run(ctx context.Context) error {
	defer fl.closeAll()
	t := time.NewTicker(fl.cfg.Poll)
	defer t.Stop()
	for {
		if err := fl.poll(ctx); err != nil {
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

// poll is one listing: notice rotations and truncations, open the files
// that are new, read everything to its end.
func (fl *Follower) poll(ctx context.Context) error {
	fl.polls++
	initial := fl.polls == 1
	fl.checkTails()

	matches, skips, listErr := list(fl.cfg.Paths)
	problems := []error{listErr}
	if listErr != nil {
		fl.reportOnce("list "+listErr.Error(), ReasonList, listErr)
	}
	for _, sk := range skips {
		err := fmt.Errorf("skipped %q: %s", sk.path, sk.reason)
		if sk.broken {
			problems = append(problems, err)
			fl.reportOnce(sk.path, ReasonOpen, err)
		} else if fl.reported[sk.path] != sk.reason {
			fl.reported[sk.path] = sk.reason
			fl.log.Warn("file skipped", zap.String("path", sk.path), zap.String("reason", sk.reason))
		}
	}
	fl.forgetReported(matches, skips, listErr)

	files := make([]File, 0, len(matches))
	for _, m := range matches {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := fl.consider(ctx, m, initial)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var oe *openError
			if !errors.As(err, &oe) {
				return err
			}
			problems = append(problems, oe.err)
			fl.reportOnce(m.path, ReasonOpen, oe.err)
		}
		files = append(files, f)
	}
	fl.setReady(errors.Join(problems...))

	if err := fl.readTails(ctx, matches); err != nil {
		return err
	}
	fl.forgetDone(matches)
	fl.h.Polled(files)
	return nil
}

// openError is a file that could not be opened; it is tried again at the
// next poll.
type openError struct{ err error }

func (e *openError) Error() string { return e.err.Error() }

// consider handles one file matched: a growing file is opened to be
// tailed, a finished one read whole once it settled.
func (fl *Follower) consider(ctx context.Context, m match, initial bool) (File, error) {
	f := File{Path: m.path, Size: m.info.Size(), ModTime: m.info.ModTime(), Initial: initial, Finished: fl.cfg.Whole}
	if t := fl.tails[m.path]; t != nil {
		return t.file, nil
	}
	if t := fl.adopt(m); t != nil {
		return t.file, nil
	}
	if d, ok := fl.done[m.path]; ok && d.stamp == stampOf(m.info) {
		return f, nil
	}
	if fl.doneID(m.id) {
		// A finished file read under another name (renamed since).
		fl.done[m.path] = done{stampOf(m.info), m.id}
		return f, nil
	}
	if fl.cfg.Whole {
		if !fl.settled(m.path, m.info) {
			return f, nil
		}
		return f, fl.readWhole(ctx, m, f, nil)
	}
	fh, fi, err := openRegular(m.path)
	if err != nil {
		return f, &openError{err}
	}
	keep := false
	defer func() {
		if !keep {
			fh.Close()
		}
	}()
	f.Size, f.ModTime = fi.Size(), fi.ModTime()
	delete(fl.reported, m.path)
	codec, undecided, err := sniffFile(fh)
	switch {
	case err != nil:
		return f, &openError{fmt.Errorf("read %q: %w", m.path, err)}
	case undecided && !fl.settled(m.path, fi):
		return f, nil // too short to tell a log from an archive yet
	case codec == "":
		t, err := fl.startTail(m, fh, fi, f, initial && !fl.cfg.FromStart)
		if t == nil || err != nil {
			return f, err
		}
		keep = true
		return t.file, nil
	}
	f.Codec, f.Finished = codec, true
	switch {
	case initial && !fl.cfg.FromStart:
		// An archive there at the start was read before, as a log.
		fl.done[m.path] = done{stampOf(fi), m.id}
		return f, nil
	case !fl.settled(m.path, fi):
		return f, nil
	}
	return f, fl.readWhole(ctx, m, f, fh)
}

// settled reports whether a file has stopped changing: its modification
// time is older than settleTime, or the last poll saw it as it is now.
func (fl *Follower) settled(path string, fi os.FileInfo) bool {
	st := stampOf(fi)
	if fl.cfg.Now().Sub(fi.ModTime()) >= settleTime {
		delete(fl.pending, path)
		return true
	}
	if prev, ok := fl.pending[path]; ok && prev == st {
		delete(fl.pending, path)
		return true
	}
	fl.pending[path] = st
	return false
}

// readWhole reads a finished file whole and records it as done. fh is
// the file opened already, or nil.
func (fl *Follower) readWhole(ctx context.Context, m match, f File, fh *os.File) error {
	if fl.cfg.Whole {
		var done func()
		ctx, done = finishing(ctx, fl.cfg.Finish)
		defer done()
	}
	if fh == nil {
		var fi os.FileInfo
		var err error
		if fh, fi, err = openRegular(m.path); err != nil {
			return &openError{err}
		}
		defer fh.Close()
		delete(fl.reported, m.path)
		f.Size, f.ModTime = fi.Size(), fi.ModTime()
	}
	if short, err := fl.cutShort(ctx, m.path, fh, f); short || err != nil {
		return err
	}
	c := fl.h.Open(f)
	if c == nil {
		fl.done[m.path] = done{stamp{f.Size, f.ModTime}, m.id}
		return nil
	}
	content, err := input.Decompress(&ctxReader{ctx: ctx, r: fh})
	var r io.Reader = content
	switch {
	case err == nil:
		defer content.Close()
		if !fl.cfg.Whole {
			head, _ := peek(content, headLen)
			r = io.MultiReader(bytesReader(head), content)
			if skip := fl.copied(head, m.id); skip > 0 {
				fl.log.Info("file holds what was read already under another name: read after it",
					zap.String("path", m.path), zap.Int64("offset", skip))
				if _, err := io.CopyN(io.Discard, r, skip); err != nil && !errors.Is(err, io.EOF) {
					r = errReader{err}
				}
			}
		}
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		// A bad compressed header: the consumer says so as it would of a
		// file cut short.
		r = errReader{err}
	}
	fl.log.Debug("reading file", zap.String("path", m.path), zap.String("codec", f.Codec))
	if err := c.Read(ctx, r); err != nil {
		return err
	}
	if err := c.Close(ctx); err != nil {
		return err
	}
	fl.done[m.path] = done{stamp{f.Size, f.ModTime}, m.id}
	return nil
}

// cutShort reports whether fh, a finished file that settled, is an
// archive whose compressed content ends short while it changed less than
// archiveWait ago: it is then left for a later poll (a writer that stalled
// longer than the settling makes such a file), and checked again only once
// it changed. It costs one decompression of a young archive before it is
// read.
func (fl *Follower) cutShort(ctx context.Context, path string, fh *os.File, f File) (bool, error) {
	st := stamp{f.Size, f.ModTime}
	if fl.cfg.Now().Sub(f.ModTime) >= archiveWait {
		if _, ok := fl.short[path]; ok {
			delete(fl.short, path)
			fl.log.Warn("archive still ends short; reading what it holds", zap.String("path", path), zap.Int64("size", f.Size))
		}
		return false, nil
	}
	if prev, ok := fl.short[path]; ok && prev == st {
		return true, nil
	}
	if codec, _, err := sniffFile(fh); err != nil || codec == "" {
		return false, nil // read as usual; a read error is the reader's
	}
	content, err := input.Decompress(&ctxReader{ctx: ctx, r: io.NewSectionReader(fh, 0, f.Size)})
	if err == nil {
		_, err = io.Copy(io.Discard, content)
		content.Close()
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	// A header over the memory limit is no cut: the reader refuses it.
	if ce, le := (*input.CorruptError)(nil), (*input.LimitError)(nil); !errors.As(err, &ce) || errors.As(err, &le) {
		delete(fl.short, path)
		return false, nil
	}
	if _, ok := fl.short[path]; !ok {
		fl.log.Info("archive ends short; waiting for its writer", zap.String("path", path),
			zap.Int64("size", f.Size), zap.Duration("wait", archiveWait), zap.Error(err))
	}
	fl.short[path] = st
	return true, nil
}

// DefaultFinish is Config.Finish's default: a CloudTrail file of a few
// megabytes is read in well under a second.
const DefaultFinish = 5 * time.Second

// finishing returns a context that ends grace after ctx does (DefaultFinish
// when grace is 0), and the function that releases it.
func finishing(ctx context.Context, grace time.Duration) (context.Context, func()) {
	if grace <= 0 {
		grace = DefaultFinish
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-fctx.Done():
		}
	})
	return fctx, func() { stop(); cancel() }
}

// doneID reports whether the file of identity id was read as a finished
// file under another name.
func (fl *Follower) doneID(id fileID) bool {
	if id == (fileID{}) {
		return false
	}
	for _, d := range fl.done {
		if d.id == id {
			return true
		}
	}
	return false
}

// forgetDone drops the finished files that are no longer matched, so
// that memory stays bounded by the files present.
func (fl *Follower) forgetDone(matches []match) {
	if len(fl.done) == 0 && len(fl.pending) == 0 && len(fl.short) == 0 {
		return
	}
	present := make(map[string]bool, len(matches))
	for _, m := range matches {
		present[m.path] = true
	}
	for p := range fl.done {
		if !present[p] {
			delete(fl.done, p)
		}
	}
	for p := range fl.pending {
		if !present[p] {
			delete(fl.pending, p)
		}
	}
	for p := range fl.short {
		if !present[p] {
			delete(fl.short, p)
		}
	}
}

// reportOnce reports err to the Reporter the first time key is seen with
// it, and again only once it changed or went away.
func (fl *Follower) reportOnce(key, reason string, err error) {
	if fl.reported[key] == err.Error() {
		return
	}
	fl.reported[key] = err.Error()
	fl.rep.Error(fl.cfg.Source, reason, err)
}

// forgetReported drops what was reported about paths that are gone, so
// that they are reported again if they come back.
func (fl *Follower) forgetReported(matches []match, skips []skip, listErr error) {
	keep := make(map[string]bool, len(skips)+len(matches))
	for _, sk := range skips {
		keep[sk.path] = true
	}
	for _, m := range matches {
		keep[m.path] = true
	}
	if listErr != nil {
		keep["list "+listErr.Error()] = true
	}
	for k := range fl.reported {
		if !keep[k] {
			delete(fl.reported, k)
		}
	}
}

func (fl *Follower) setReady(err error) {
	fl.mu.Lock()
	fl.notReady = err
	fl.mu.Unlock()
}

// openRegular opens path for reading if it is a regular file. It never
// blocks: a named pipe put in the file's place after it was listed is
// opened without waiting for a writer, then refused.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("open %q: not a regular file (%s)", path, input.FileKind(fi.Mode()))
	}
	return f, fi, nil
}

// sniffFile reads the first bytes of an open file, at its start, to tell
// a compressed archive from a plain log. undecided is set while the file
// is too short to tell.
func sniffFile(f *os.File) (codec string, undecided bool, err error) {
	var head [8]byte
	n, err := f.ReadAt(head[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", false, err
	}
	codec, undecided = input.SniffCodec(head[:n])
	return codec, undecided, nil
}

// ctxReader reads r until ctx is done, so that a long read returns soon
// after.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func (fl *Follower) closeAll() {
	for _, t := range fl.tails {
		t.f.Close()
	}
	for _, t := range fl.orphans {
		t.f.Close()
	}
	fl.tails, fl.orphans = map[string]*tail{}, nil
}
