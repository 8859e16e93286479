package lease

import (
	"maps"
	"math/rand/v2"
	"slices"
)

// candidate is what the taker knows of one lease of a stream this worker
// reads.
type candidate struct {
	key   string
	owner string // "" when unowned
	// live: owned, and its counter moved within the failover time (or it is
	// one this worker holds).
	live bool
	// ready: the shard is listed, not finished, and its parents are.
	ready bool
}

// plan is what one round takes.
type plan struct {
	take    []string // unowned leases first, then expired ones
	steal   string   // a live lease of victim, or ""
	victim  string
	target  int // the fair share: ceil(leases / workers)
	workers int // live workers, this one included
}

// choose decides what worker me takes this round, the way the KCL's lease
// taker does: the fair share is ceil(leases / live workers), where leases
// counts those held or ready to take, and live workers are the owners of
// live leases and me. Below its share a worker takes unowned leases, then
// expired ones, in random order so that workers starting together do not
// all race for the same lease. When none is free and the busiest worker
// holds at least two more than me, it steals one lease from it: one per
// round, so that the spread evens out without leases bouncing between
// workers.
func choose(me string, cands []candidate, rnd *rand.Rand) plan {
	counts := map[string]int{me: 0}
	var unowned, expired []string
	n := 0
	for _, c := range cands {
		switch {
		case c.live:
			counts[c.owner]++
			n++
		case c.ready:
			n++
			if c.owner == "" {
				unowned = append(unowned, c.key)
			} else {
				expired = append(expired, c.key)
			}
		}
	}
	p := plan{workers: len(counts)}
	if n == 0 {
		return p
	}
	p.target = (n + len(counts) - 1) / len(counts)
	need := p.target - counts[me]
	if need <= 0 {
		return p
	}
	rnd.Shuffle(len(unowned), func(i, j int) { unowned[i], unowned[j] = unowned[j], unowned[i] })
	rnd.Shuffle(len(expired), func(i, j int) { expired[i], expired[j] = expired[j], expired[i] })
	free := append(unowned, expired...)
	if len(free) > 0 {
		p.take = free[:min(need, len(free))]
		return p
	}
	// Nothing free: steal one lease from the busiest worker if that evens
	// the spread. Ties go to the first name, so the choice is stable.
	victim, most := "", 0
	for _, w := range slices.Sorted(maps.Keys(counts)) {
		if w != me && counts[w] > most {
			victim, most = w, counts[w]
		}
	}
	if victim == "" || most-counts[me] < 2 {
		return p
	}
	var theirs []string
	for _, c := range cands {
		if c.live && c.ready && c.owner == victim {
			theirs = append(theirs, c.key)
		}
	}
	if len(theirs) > 0 {
		p.steal, p.victim = theirs[rnd.IntN(len(theirs))], victim
	}
	return p
}
