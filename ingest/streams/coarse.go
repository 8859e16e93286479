package streams

import (
	"sync"
	"time"
)

// A stream record's ApproximateCreationDateTime is the time the write
// happened, in whole seconds on DynamoDB. DynamoDB Local rounds it down to
// the minute, so read as it is a minute of backlog lands in one second.
// Each shard's times are therefore taken as coarse (granularity 60 s)
// while every one seen is a whole minute; one time with a non-zero second
// proves whole seconds for the shard, and its times are then taken as they
// are.
//
// A coarse time t is narrowed to the interval the write can lie in:
// [t, min(t+59 s, the time of the poll that read it)], and, when the
// shard's previous poll came back not full (the reader was caught up),
// not before that poll began: the record was not there yet. The record is
// placed on a second of that interval chosen by a hash of its sequence
// number, so that the same record lands on the same second at every read:
// live records land on their arrival second, a backlog spreads evenly over
// its minutes instead of piling into one second.
const coarseGranularity = time.Minute

// shardClock is what narrowing needs of one shard. It is used by the
// shard's reader goroutine only (Records, then Emit).
type shardClock struct {
	// fine is set once a record time with a non-zero second was seen.
	fine bool
	// callAt is when the current GetRecords call began; prevAt when the
	// previous one did, and prevCaughtUp whether it came back not full.
	callAt, prevAt time.Time
	prevCaughtUp   bool
	// last is the time of the last record placed, for a record without
	// a creation time.
	last time.Time
}

// shardClocks keeps a stream's shardClocks.
type shardClocks struct {
	mu sync.Mutex
	m  map[string]*shardClock
}

func (c *shardClocks) get(shard string) *shardClock {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*shardClock{}
	}
	clk, ok := c.m[shard]
	if !ok {
		clk = &shardClock{}
		c.m[shard] = clk
	}
	return clk
}

func (c *shardClocks) forget(shard string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, shard)
}

// polled records that a GetRecords call begins at t.
func (clk *shardClock) polled(t time.Time) { clk.callAt = t }

// answered closes a poll: caughtUp says whether its answer was not full.
func (clk *shardClock) answered(caughtUp bool) {
	clk.prevAt, clk.prevCaughtUp = clk.callAt, caughtUp
}

// place returns the time a record created at t (zero: unknown) with
// sequence number seq is counted at, read by a poll answered at now.
func (clk *shardClock) place(t time.Time, seq string, now time.Time) time.Time {
	switch {
	case t.IsZero():
		// No creation time: records come in the order they were
		// written, so it is taken as written with the one before it, or
		// at the poll's time.
		if clk.last.IsZero() {
			return now
		}
		return clk.last
	case clk.fine:
	case t.Second() != 0 || t.Nanosecond() != 0:
		clk.fine = true
	default:
		t = clk.narrow(t, seq, now)
	}
	clk.last = t
	return t
}

// narrow places a coarse time t (a whole minute) on a second of the
// interval the write can lie in (see coarseGranularity).
func (clk *shardClock) narrow(t time.Time, seq string, now time.Time) time.Time {
	lo := t.Unix()
	hi := t.Add(coarseGranularity).Unix() - 1
	if n := now.Unix(); n < hi {
		hi = n
	}
	if clk.prevCaughtUp && !clk.prevAt.IsZero() {
		if p := clk.prevAt.Unix(); p > lo {
			lo = p
		}
	}
	if hi < lo {
		// The bounds disagree (a clock skew between hotkeyd and the
		// service): the poll's bound wins, within the minute.
		lo = min(max(t.Unix(), hi), t.Add(coarseGranularity).Unix()-1)
		hi = lo
	}
	k := int64(fnv64(seq) % uint64(hi-lo+1))
	return time.Unix(lo+k, 0).In(t.Location())
}

// fnv64 is FNV-1a over s.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
