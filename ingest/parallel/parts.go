package parallel

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/hotkeyd/hotkeyd/ingest/formats"
	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// unit is one input.
type unit struct {
	name string
	// path is the file the input is read from: its name, or where
	// Config.Paths copied it.
	path string
	// regular and size are the file's, from before it was opened.
	regular bool
	size    int64

	// dec reads the input's parts; nil for an input read in order.
	dec formats.PartDecoder
	// in is the input opened whole, until it is read.
	in *input.Input
	// file is the plain file the parts are cut from, open until its last
	// part is merged.
	file *os.File
	// failed is set, under reader.mu, once a part could not be read to
	// its end: one reader would have stopped there.
	failed bool

	closeOnce sync.Once
}

// close closes what the input holds open.
func (u *unit) close() {
	u.closeOnce.Do(func() {
		if u.in != nil {
			u.in.Close()
		}
		if u.file != nil {
			u.file.Close()
		}
	})
}

// part is one part of an input: a byte range of a plain file, or the whole
// input.
type part[S traffic.Sink] struct {
	unit *unit
	// inOrder says the part is read in order, straight into the result.
	inOrder bool
	// section says the part is the bytes [start, end) of unit.file; else
	// it is the whole input.
	section    bool
	start, end int64
	// index is the part's place among its input's parts; last is set on
	// the last one.
	index int
	last  bool
	// openErr is why the input could not be opened.
	openErr error

	// Under reader.mu:
	state  state
	direct bool // counting straight into the result
	sink   S    // the part's own, when own is set
	own    bool

	// Written by the worker reading the part, read once it ended:
	span  span
	err   error // the input's, for Config.Failed
	fatal error // the whole Read's

	bytes   atomic.Int64 // of a section read so far
	newline struct {
		once sync.Once
		n    int64
	}
}

// bytesRead is how much of the input the part has read: the section's
// bytes, or the whole input's (compressed).
func (p *part[S]) bytesRead() int64 {
	if p.section || p.unit.in == nil {
		return p.bytes.Load()
	}
	return p.unit.in.BytesRead()
}

// plan makes the units and chooses the part size: the inputs' bytes shared
// out among the workers, at least MinPart.
func (r *reader[S]) plan(names []string) {
	var total int64
	for _, name := range names {
		u := &unit{name: name, path: name}
		if p, ok := r.cfg.Paths[name]; ok {
			u.path = p
		}
		if u.path != "-" {
			if fi, err := os.Stat(u.path); err == nil && fi.Mode().IsRegular() {
				u.regular, u.size = true, fi.Size()
				total += u.size
			}
		}
		r.units = append(r.units, u)
	}
	r.partSize = max(r.cfg.MinPart, (total+int64(r.cfg.Workers)-1)/int64(r.cfg.Workers))
}

// open opens an input and says how it is read: its parts. Opening is done
// in input order, one input at a time, and reads only the input's first
// bytes.
func (r *reader[S]) open(u *unit) []*part[S] {
	if u.regular {
		if parts, done := r.openLines(u); done {
			return parts
		}
	}
	in, err := input.Open(u.path, r.cfg.Stdin)
	if err != nil {
		return []*part[S]{{unit: u, inOrder: true, last: true, openErr: err}}
	}
	in.Name = u.name
	dec, ok := r.cfg.Formats.Detect(in).(formats.PartDecoder)
	if !ok || !u.regular {
		u.in = in
		return []*part[S]{{unit: u, inOrder: true, last: true}}
	}
	u.dec, u.in = dec, in
	return []*part[S]{{unit: u, last: true}}
}

// openLines opens a regular file of a line format whose content is not
// compressed and cuts it into parts at line starts; done is false when the
// file is not such, and it is opened whole.
func (r *reader[S]) openLines(u *unit) (parts []*part[S], done bool) {
	fail := func(err error) ([]*part[S], bool) {
		return []*part[S]{{unit: u, inOrder: true, last: true, openErr: err}}, true
	}
	f, err := os.Open(u.path)
	if err != nil {
		return fail(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fail(err)
	}
	head := make([]byte, input.SniffLen)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		f.Close()
		return fail(err)
	}
	head = head[:n]
	dec, ok := r.cfg.Formats.DetectHead(head).(formats.PartDecoder)
	if codec, undecided := input.SniffCodec(head); codec != "" || undecided || !ok || !dec.Lines(head) {
		f.Close()
		return nil, false
	}
	u.dec, u.file, u.size = dec, f, fi.Size()
	cuts, err := cutLines(f, u.size, int(max(1, min(int64(r.cfg.Workers), (u.size+r.partSize-1)/r.partSize))))
	if err != nil {
		return fail(err)
	}
	parts = make([]*part[S], len(cuts)-1)
	for i := range parts {
		parts[i] = &part[S]{unit: u, section: true, start: cuts[i], end: cuts[i+1], index: i, last: i == len(parts)-1}
	}
	return parts, true
}

// cutLines cuts a file of size bytes into about n parts of equal size,
// each starting at a line's start: the offsets of the parts' starts and,
// last, size. A line longer than a part makes fewer parts.
func cutLines(f io.ReaderAt, size int64, n int) ([]int64, error) {
	cuts := []int64{0}
	buf := make([]byte, 64<<10)
	for i := 1; i < n; i++ {
		at, err := lineStart(f, size*int64(i)/int64(n), size, buf)
		if err != nil {
			return nil, err
		}
		if at > cuts[len(cuts)-1] && at < size {
			cuts = append(cuts, at)
		}
	}
	return append(cuts, size), nil
}

// lineStart returns the first offset at or after at where a line starts:
// just past the first newline at or after at-1, or size.
func lineStart(f io.ReaderAt, at, size int64, buf []byte) (int64, error) {
	if at <= 0 {
		return 0, nil
	}
	for pos := at - 1; pos < size; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1, nil
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
		if n == 0 {
			break
		}
		pos += int64(n)
	}
	return size, nil
}

// decode reads part p into sink, noting the time its events span in sp.
func (r *reader[S]) decode(p *part[S], sp *span, sink traffic.Sink) error {
	u := p.unit
	t := &tally{next: sink, span: sp, reorder: int64(r.cfg.Reorder), events: &r.events}
	ctx := r.ctx
	switch {
	case p.openErr != nil:
		return p.openErr
	case p.inOrder:
		defer u.close()
		return r.cfg.Formats.Read(ctx, u.in, t)
	case p.section:
		rd := &counter{r: io.NewSectionReader(u.file, p.start, p.end-p.start), n: &p.bytes}
		fp := formats.Part{Name: u.name}
		if p.index > 0 {
			fp.LinesBefore = func() int64 { return r.linesBefore(p) }
		}
		return u.dec.DecodePart(ctx, rd, fp, t)
	}
	defer u.in.Close()
	return u.dec.DecodePart(ctx, u.in, formats.Part{Name: u.name}, t)
}

// linesBefore counts the lines of p's input before p: the newlines of the
// parts before it, each counted once, when a rejected line first needs
// its number.
func (r *reader[S]) linesBefore(p *part[S]) int64 {
	r.mu.Lock()
	var before []*part[S]
	for _, q := range r.parts {
		if q.unit == p.unit && q.index < p.index {
			before = append(before, q)
		}
	}
	r.mu.Unlock()
	var n int64
	for _, q := range before {
		n += q.newlines()
	}
	return n
}

// newlines counts the newlines of a section, once.
func (p *part[S]) newlines() int64 {
	p.newline.once.Do(func() {
		buf := make([]byte, 64<<10)
		for pos := p.start; pos < p.end; {
			n, err := p.unit.file.ReadAt(buf[:min(int64(len(buf)), p.end-pos)], pos)
			p.newline.n += int64(bytes.Count(buf[:n], []byte{'\n'}))
			if err != nil || n == 0 {
				return
			}
			pos += int64(n)
		}
	})
	return p.newline.n
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n *atomic.Int64
}

func (c *counter) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// span is the time a part's events cover, in whole seconds (the
// resolution of the per-second counts).
type span struct {
	// any says min and max hold: an event with a time was seen.
	any      bool
	min, max int64
	// back says an event ran more than the reorder limit behind the
	// newest before it.
	back bool
	// untimed says an event without a time was seen.
	untimed bool
}

// follows reports whether a part whose events span s runs in time after
// events that span prefix (Outcome.InOrder): every event has a time, none
// is earlier than the latest second before the part, and none runs more
// than the reorder limit behind the newest of the part before it.
func (s span) follows(prefix span) bool {
	switch {
	case s.untimed || s.back:
		return false
	case !s.any || !prefix.any:
		return true
	}
	return s.min >= prefix.max
}

// add widens s to cover o too.
func (s *span) add(o span) {
	s.untimed = s.untimed || o.untimed
	if !o.any {
		return
	}
	if !s.any {
		s.any, s.min, s.max = true, o.min, o.max
		return
	}
	s.min, s.max = min(s.min, o.min), max(s.max, o.max)
}

// tally is the sink in front of a part's: it notes the span of the
// events' times and counts them for the progress line.
type tally struct {
	next    traffic.Sink
	span    *span
	reorder int64
	events  *atomic.Int64
}

func (t *tally) Put(ctx context.Context, batch []traffic.Event) error {
	s := t.span
	for i := range batch {
		tm := &batch[i].Time
		if tm.IsZero() {
			s.untimed = true
			continue
		}
		sec := tm.Unix()
		switch {
		case !s.any:
			s.any, s.min, s.max = true, sec, sec
		case sec > s.max:
			s.max = sec
		default:
			s.min = min(s.min, sec)
			if sec < s.max-t.reorder {
				s.back = true
			}
		}
	}
	t.events.Add(int64(len(batch)))
	return t.next.Put(ctx, batch)
}
