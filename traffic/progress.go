package traffic

import (
	"context"
	"slices"
	"sync"
	"time"
)

// CatchUpSlack is how far beyond its normal delivery delay a source may
// lag before it is catching up (SourceState.CatchingUp): a sharded stream
// polled every second lags a second or two, CloudTrail up to its 15 minutes
// of delivery delay, and neither is behind then.
const CatchUpSlack = 10 * time.Second

// CloudTrailDelay is how late CloudTrail delivers its events at most: AWS
// documents delivery within about 15 minutes of the call. A CloudTrail
// reader that has read every file there is has delivered every event older
// than this.
const CloudTrailDelay = 15 * time.Minute

// Progress keeps how far each source has read in event time: its
// watermark. A source reads in lanes (a shard, a followed file, a delivery
// folder or bucket); each lane is either busy, at the newest event time it
// delivered, or idle (caught up: it read everything there is). A source's
// watermark is the oldest of its busy lanes; idle lanes do not hold it
// back, they stand at the clock's now less the source's delivery delay
// (Declare), or at the newest event time they delivered if that is later.
// A source without lanes (HTTP ingest, the demo: their events carry
// arrival time) stands at now.
//
// Progress implements the Watermark method of sketch.Watermarks, which a
// live Store calls to judge each table's seconds once every source that
// fed it has passed them. It is safe for concurrent use.
type Progress struct {
	now func() time.Time

	mu  sync.Mutex
	src map[string]*sourceProgress
}

type sourceProgress struct {
	delay time.Duration
	lanes map[*Lane]struct{}
	// last is the newest event time any lane of the source delivered,
	// kept once the lane closed.
	last time.Time
}

// NewProgress returns an empty registry on the clock now (time.Now when
// nil).
func NewProgress(now func() time.Time) *Progress {
	if now == nil {
		now = time.Now
	}
	return &Progress{now: now, src: map[string]*sourceProgress{}}
}

// Declare makes source known, with the delay after which its events
// arrive when it is caught up: 0 for a stream read as it is written,
// CloudTrailDelay for CloudTrail. A source declared twice keeps the
// longer delay. Calling it on a nil Progress does nothing.
func (p *Progress) Declare(source string, delay time.Duration) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.source(source)
	s.delay = max(s.delay, delay)
}

// source returns the source's entry, made on first use. Called with p.mu
// held.
func (p *Progress) source(name string) *sourceProgress {
	s, ok := p.src[name]
	if !ok {
		s = &sourceProgress{lanes: map[*Lane]struct{}{}}
		p.src[name] = s
	}
	return s
}

// Lane opens a lane of source. It starts busy at the clock's now, until
// it delivers (Advance) or finds nothing to read (Idle). A nil Progress
// returns a nil Lane, whose methods do nothing.
func (p *Progress) Lane(source string) *Lane {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.source(source)
	l := &Lane{p: p, s: s, t: p.now(), busy: true}
	s.lanes[l] = struct{}{}
	return l
}

// Lane is one lane of a source's progress, used by one reader goroutine
// at a time; its methods may be called on a nil Lane.
type Lane struct {
	p    *Progress
	s    *sourceProgress
	t    time.Time // the newest event time delivered (or the opening time)
	busy bool
	read bool // an event time was delivered
}

// Advance says that the lane delivered every event up to t and has more
// to read: the lane is busy at t. Times only move forward within a lane.
func (l *Lane) Advance(t time.Time) {
	if l == nil {
		return
	}
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	if !t.IsZero() {
		l.deliver(t)
	}
	l.busy = true
}

// Delivered says that the lane delivered every event up to t, without
// saying whether more is to be read.
func (l *Lane) Delivered(t time.Time) {
	if l == nil || t.IsZero() {
		return
	}
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	l.deliver(t)
}

// deliver moves the lane to t. Called with l.p.mu held.
func (l *Lane) deliver(t time.Time) {
	if !l.read || t.After(l.t) {
		l.t = t
	}
	l.read = true
	if t.After(l.s.last) {
		l.s.last = t
	}
}

// Idle says that the lane read everything there is for now: it no longer
// holds its source's watermark back.
func (l *Lane) Idle() {
	if l == nil {
		return
	}
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	l.busy = false
}

// Busy says that the lane has more to read, from the newest event time it
// delivered.
func (l *Lane) Busy() {
	if l == nil {
		return
	}
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	l.busy = true
}

// Close removes the lane: its reader stopped (a shard read to its end or
// read elsewhere now, a file gone).
func (l *Lane) Close() {
	if l == nil {
		return
	}
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	delete(l.s.lanes, l)
}

// Track returns a Sink that hands each batch to next and then advances
// the lane to the batch's newest event time (Advance: busy until the
// reader says Idle): for a reader that reads its input in about the order
// it was written, such as a followed log or a delivery folder.
func (l *Lane) Track(next Sink) Sink {
	if l == nil {
		return next
	}
	return SinkFunc(func(ctx context.Context, batch []Event) error {
		newest := Newest(batch)
		if err := next.Put(ctx, batch); err != nil {
			return err
		}
		l.Advance(newest)
		return nil
	})
}

// Newest returns the latest Time of the batch's Events, zero when none
// has one.
func Newest(batch []Event) time.Time {
	var t time.Time
	for i := range batch {
		if batch[i].Time.After(t) {
			t = batch[i].Time
		}
	}
	return t
}

// Watermark returns the event time up to which source has delivered its
// events (see Progress); ok is false when the source was never declared
// nor had a lane.
func (p *Progress) Watermark(source string) (t time.Time, ok bool) {
	if p == nil {
		return time.Time{}, false
	}
	st, ok := p.State(source)
	return st.Watermark, ok
}

// SourceState is a source's progress at one moment.
type SourceState struct {
	// Source is the Event.Source value.
	Source string
	// Watermark is the event time up to which the source has delivered
	// its events.
	Watermark time.Time
	// Lag is how far the source's slowest busy lane is behind the clock:
	// now less its newest event time delivered; 0 when every lane is
	// caught up.
	Lag time.Duration
	// Delay is the source's normal delivery delay (Declare).
	Delay time.Duration
	// CatchingUp is set while Lag is over Delay + CatchUpSlack: the source
	// reads a backlog (a start from the oldest record, a restart, a lease
	// taken over).
	CatchingUp bool
}

// State returns source's progress now.
func (p *Progress) State(source string) (SourceState, bool) {
	if p == nil {
		return SourceState{}, false
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.src[source]
	if !ok {
		return SourceState{}, false
	}
	return s.state(source, now), true
}

// States returns every known source's progress now, by source name.
func (p *Progress) States() []SourceState {
	if p == nil {
		return nil
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]SourceState, 0, len(p.src))
	for name, s := range p.src {
		out = append(out, s.state(name, now))
	}
	slices.SortFunc(out, func(a, b SourceState) int {
		if a.Source < b.Source {
			return -1
		}
		if a.Source > b.Source {
			return 1
		}
		return 0
	})
	return out
}

// state computes the source's state at now. Called with p.mu held.
func (s *sourceProgress) state(name string, now time.Time) SourceState {
	idleAt := now.Add(-s.delay)
	if s.last.After(idleAt) {
		idleAt = s.last
	}
	st := SourceState{Source: name, Watermark: idleAt, Delay: s.delay}
	var busy time.Time
	for l := range s.lanes {
		if !l.busy {
			continue
		}
		if busy.IsZero() || l.t.Before(busy) {
			busy = l.t
		}
	}
	if busy.IsZero() {
		return st
	}
	if busy.Before(st.Watermark) {
		st.Watermark = busy
	}
	st.Lag = max(0, now.Sub(busy))
	st.CatchingUp = st.Lag > s.delay+CatchUpSlack
	return st
}
