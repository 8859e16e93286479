package analyze

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Times that make no sense are refused as bad_time before they are
// counted, so that they never stretch the window the rates are taken
// over (one year-9999 line in a log of an hour would make every rate
// zero):
//
//   - a time before 2012, when DynamoDB was launched, or more than a day
//     after the clock, refused as it is read and reported on stderr like
//     any rejected record;
//   - a few events far from the rest of the input: once the input is
//     read, its events are placed in hours; a group of hours at either
//     end, cut from the others by a gap of more than a day that is also
//     longer than what the others span, and holding at most a handful of
//     the events (outlierShare, at least outlierMin), is left out, and the
//     input counted again without it.
const (
	// maxAhead is how far past the clock an event's time may be.
	maxAhead = 24 * time.Hour
	// outlierMin and outlierShare bound the events left out as outliers:
	// at most the larger of 10 and 0.1 % of the input's, and never more
	// than a tenth of them (outlierMost): a small input whose events lie
	// in several far periods (a sample of log entries) keeps them all.
	outlierMin   = 10
	outlierShare = 1000
	outlierMost  = 10
	// outlierGap is the least gap, in hours, that cuts outliers off.
	outlierGap = 24
)

// timeRange is the seconds [from, to) whose events are counted.
type timeRange struct {
	from, to int64
}

// plausible is the range of times that make sense for DynamoDB traffic
// read at now.
func plausible(now time.Time) timeRange {
	return timeRange{from: traffic.DynamoDBLaunch.Unix(), to: now.Add(maxAhead).Unix()}
}

// timeCheck is the sink in front of a part's store that refuses events of
// implausible times (bad_time, told to rep when set) and leaves out those
// outside keep; events without a time pass. It counts the events that
// pass by hour, for finding outliers.
type timeCheck struct {
	next  traffic.Sink
	rep   traffic.Reporter // nil: refuse silently (a second read)
	valid timeRange        // refused outside, as bad_time
	keep  timeRange        // left out outside, silently (outliers)
	hours map[int64]uint64
}

func newTimeCheck(next traffic.Sink, rep traffic.Reporter, valid, keep timeRange) *timeCheck {
	return &timeCheck{next: next, rep: rep, valid: valid, keep: keep, hours: map[int64]uint64{}}
}

// Put implements traffic.Sink: the batch is filtered in place.
func (c *timeCheck) Put(ctx context.Context, batch []traffic.Event) error {
	kept := batch[:0]
	// The hour of a run of events is counted once: the map is the
	// costly part, and a batch's events are mostly of one hour.
	hour, run := int64(math.MinInt64), uint64(0)
	for i := range batch {
		e := &batch[i]
		if e.Time.IsZero() {
			kept = keepAt(kept, batch, i)
			continue
		}
		sec := e.Time.Unix()
		switch {
		case sec < c.valid.from:
			c.refuse(e, "time %s is before 2012: DynamoDB did not exist yet", e.Time.UTC().Format(time.RFC3339))
			continue
		case sec >= c.valid.to:
			c.refuse(e, "time %s is more than %v after the clock", e.Time.UTC().Format(time.RFC3339), maxAhead)
			continue
		case sec < c.keep.from || sec >= c.keep.to:
			continue
		}
		if h := floorDiv(sec, 3600); h != hour {
			if run > 0 {
				c.hours[hour] += run
			}
			hour, run = h, 0
		}
		run++
		kept = keepAt(kept, batch, i)
	}
	if run > 0 {
		c.hours[hour] += run
	}
	clear(batch[len(kept):])
	if len(kept) == 0 {
		return nil
	}
	return c.next.Put(ctx, kept)
}

// keepAt appends batch[i] to kept, a prefix of batch that ends at or
// before i, without copying it onto itself while nothing was left out.
func keepAt(kept, batch []traffic.Event, i int) []traffic.Event {
	if len(kept) == i {
		return batch[:i+1]
	}
	return append(kept, batch[i])
}

func (c *timeCheck) refuse(e *traffic.Event, format string, args ...any) {
	if c.rep != nil {
		c.rep.Reject(e.Source, traffic.ReasonBadTime, fmt.Errorf(format, args...))
	}
}

// absorb adds what o counted.
func (c *timeCheck) absorb(o *timeCheck) {
	for h, n := range o.hours {
		c.hours[h] += n
	}
}

// hourCount is the events of one hour.
type hourCount struct {
	hour int64
	n    uint64
}

// outliers finds the hours to leave out: it returns the range of the
// hours kept, the events left out with the first and last hour they are
// in, or ok false when none is.
func outliers(hours map[int64]uint64) (keep timeRange, left uint64, first, last int64, ok bool) {
	hs := make([]hourCount, 0, len(hours))
	var total uint64
	for h, n := range hours {
		hs = append(hs, hourCount{h, n})
		total += n
	}
	if len(hs) < 2 {
		return timeRange{}, 0, 0, 0, false
	}
	slices.SortFunc(hs, func(a, b hourCount) int { return cmp.Compare(a.hour, b.hour) })
	// Groups of hours cut by more than outlierGap hours.
	type group struct {
		from, to int // hs[from:to]
		n        uint64
	}
	var groups []group
	for i, h := range hs {
		if i == 0 || h.hour-hs[i-1].hour > outlierGap {
			groups = append(groups, group{from: i, to: i})
		}
		g := &groups[len(groups)-1]
		g.to, g.n = i+1, g.n+h.n
	}
	budget := min(max(outlierMin, total/outlierShare), total/outlierMost)
	lo, hi := 0, len(groups) // groups kept: [lo, hi)
	span := func(a, b int) int64 { return hs[groups[b-1].to-1].hour - hs[groups[a].from].hour + 1 }
	gap := func(a, b int) int64 { return hs[groups[b].from].hour - hs[groups[a].to-1].hour }
	for hi-lo > 1 {
		// The end groups that may go: few events, far from the others.
		var gLo, gHi int64 = -1, -1
		if g := groups[lo]; left+g.n <= budget && gap(lo, lo+1) > max(outlierGap, span(lo+1, hi)) {
			gLo = gap(lo, lo+1)
		}
		if g := groups[hi-1]; left+g.n <= budget && gap(hi-2, hi-1) > max(outlierGap, span(lo, hi-1)) {
			gHi = gap(hi-2, hi-1)
		}
		if gLo < 0 && gHi < 0 {
			break
		}
		if gLo >= gHi {
			left += groups[lo].n
			lo++
		} else {
			left += groups[hi-1].n
			hi--
		}
	}
	if left == 0 {
		return timeRange{}, 0, 0, 0, false
	}
	first, last = hs[0].hour, hs[len(hs)-1].hour
	if lo == 0 {
		first = hs[groups[hi].from].hour
	}
	if hi == len(groups) {
		last = hs[groups[lo-1].to-1].hour
	}
	keep = timeRange{from: hs[groups[lo].from].hour * 3600, to: (hs[groups[hi-1].to-1].hour + 1) * 3600}
	return keep, left, first, last, true
}

// badTimes is what was refused for its time, for the report.
// refused counts every bad_time rejection: by the readers and by the
// time check.
func badTimes(refused, left uint64, first, last int64) *report.BadTime {
	if refused+left == 0 {
		return nil
	}
	bt := &report.BadTime{Events: refused + left, Refused: refused, Outliers: left}
	if left > 0 {
		from, to := time.Unix(first*3600, 0).UTC(), time.Unix((last+1)*3600-1, 0).UTC()
		bt.OutliersFrom, bt.OutliersTo = &from, &to
	}
	return bt
}
