package streamrecord

import "github.com/zeebo/xxh3"

// recentIDsGeneration is how many records one generation of recentIDs
// holds. Kinesis delivers a record twice when a write to it was retried,
// right after the first copy; two generations remember at least this many
// records back, several minutes of a busy shard (1000 records per second
// at most), in about 2 MB.
const recentIDsGeneration = 1 << 16

// recentIDs remembers the records read lately, to count a record delivered
// twice once: Kinesis Data Streams guarantees at-least-once delivery, and
// a Lambda batch retried is logged again. Records are known by a 64-bit
// hash of table, eventID and sequence number (a collision, about one in
// 10^14 for two generations, drops one record). It holds two generations
// of at most gen records each: when the current one is full, the older is
// dropped. Not safe for concurrent use.
type recentIDs struct {
	gen      int
	cur, old map[uint64]struct{}
	h        xxh3.Hasher
}

func newRecentIDs(gen int) *recentIDs {
	return &recentIDs{gen: gen, cur: make(map[uint64]struct{})}
}

// add records a record and reports whether it was there already.
func (r *recentIDs) add(table, eventID, seq string) bool {
	r.h.Reset()
	for _, s := range [...]string{table, "\x00", eventID, "\x00", seq} {
		_, _ = r.h.WriteString(s)
	}
	h := r.h.Sum64()
	if _, ok := r.cur[h]; ok {
		return true
	}
	if _, ok := r.old[h]; ok {
		return true
	}
	if len(r.cur) >= r.gen {
		r.old, r.cur = r.cur, make(map[uint64]struct{}, r.gen)
	}
	r.cur[h] = struct{}{}
	return false
}
