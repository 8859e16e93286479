package jsonl

import (
	"context"
	"fmt"
	"io"

	"github.com/hotkeyd/hotkeyd/ingest/follow"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// files reads the files a follow.Follower hands over as JSON lines: a log
// in pieces as it grows, a compressed archive whole.
type files struct {
	src  *Source
	sink traffic.Sink // set by Run, before the Follower starts
}

// Open implements follow.Handler: every file is read.
func (h *files) Open(f follow.File) follow.Consumer {
	// The file's lane holds the source's watermark back only while a
	// read of it delivers lines: between reads it is caught up.
	lane := h.src.progress.Lane(h.src.cfg.Source)
	lane.Idle()
	return &fileLines{h: h, st: newStream(h.src.cfg.Options, f.Path), name: f.Path, lane: lane}
}

// Polled implements follow.Handler.
func (h *files) Polled([]follow.File) {
	if h.src.scanned != nil {
		h.src.scanned()
	}
}

// fileLines turns one file's content into Events.
type fileLines struct {
	h    *files
	st   *stream
	name string
	lane *traffic.Lane
}

// Read hands the complete lines of r on and keeps a last partial one for
// the next call. A file that cannot be read on is reported, not returned.
func (c *fileLines) Read(ctx context.Context, r io.Reader) error {
	sink := c.lane.Track(c.h.sink)
	defer c.lane.Idle()
	err := c.st.readFrom(ctx, r, sink)
	if err == nil {
		err = c.st.flush(ctx, sink)
	}
	return c.failed(ctx, err)
}

// Reset drops the partial line held back: the file starts over.
func (c *fileLines) Reset() { c.st.lines.reset() }

// Close hands on an unterminated last line.
func (c *fileLines) Close(ctx context.Context) error {
	defer c.lane.Close()
	c.st.finish()
	return c.failed(ctx, c.st.flush(ctx, c.h.sink))
}

// failed returns the errors that stop the reader (the sink's, ctx's) and
// reports the others.
func (c *fileLines) failed(ctx context.Context, err error) error {
	if err == nil || isSinkErr(err) || ctx.Err() != nil {
		return err
	}
	c.h.src.cfg.Reporter.Error(c.h.src.cfg.Source, "read", fmt.Errorf("read %q: %w", c.name, err))
	return nil
}
