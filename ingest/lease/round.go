package lease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/zap"
)

// round is one pass: renew, scan, check what is held, create, take, clean.
func (c *Coordinator) round(ctx context.Context) {
	// Renewals first: they keep the leases alive even when the rest of the
	// round fails.
	c.renew(ctx)
	if ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	gone := c.gone
	c.mu.Unlock()
	if gone {
		created, err := c.db.ensure(ctx)
		if err != nil {
			c.fail(ctx, err)
			return
		}
		c.mu.Lock()
		c.gone = false
		c.mu.Unlock()
		if created {
			if len(c.seen) > 0 {
				c.log.Warn("lease table was deleted; created it again, and writing back the leases known from the last scan")
			} else {
				c.log.Info("created lease table with on-demand billing")
			}
		}
	}
	raw, err := c.db.scan(ctx)
	if err != nil {
		if isTableGone(err) {
			c.tableGone()
		}
		c.blind = true
		c.fail(ctx, err)
		return
	}
	view := c.observe(raw)
	c.checkHeld(ctx, view)
	shards, err := c.lister.ListShards(ctx)
	if err != nil {
		c.fail(ctx, fmt.Errorf("list shards: %w", err))
		return
	}
	listed := make(map[string]Shard, len(shards))
	streams := map[string]bool{}
	for _, s := range shards {
		listed[s.Key()] = s
		streams[s.Stream] = true
	}
	c.restoreVanished(ctx, view, listed, streams)
	c.create(ctx, view, shards)
	c.take(ctx, view, listed, streams)
	c.clean(ctx, view, listed, streams)
	c.succeeded()
}

// renew writes the counter of every held lease not written lately (a
// reader's checkpoint is a renewal too).
func (c *Coordinator) renew(ctx context.Context) {
	now := c.now()
	c.mu.Lock()
	held := maps.Clone(c.held)
	c.mu.Unlock()
	var due []*Lease
	for _, key := range slices.Sorted(maps.Keys(held)) {
		if l := held[key]; l.dueForRenewal(now, c.renewAfter) {
			due = append(due, l)
		}
	}
	for _, l := range due {
		err := l.renew(ctx)
		if err != nil && !errors.Is(err, ErrLost) && !errors.Is(err, errReleased) && ctx.Err() == nil {
			c.report(fmt.Errorf("renew lease %q: %w", l.key, err))
		}
	}
}

// observe turns a scan into the view of this round and notes when each
// counter moved, on this worker's clock.
func (c *Coordinator) observe(raw []map[string]types.AttributeValue) map[string]*observed {
	now := c.now()
	view := make(map[string]*observed, len(raw))
	finished := map[string]bool{}
	for _, av := range raw {
		it, ok := parseItem(av)
		if !ok {
			continue
		}
		key := it.shard.Key()
		c.reportProblems(key, it.problems)
		o := &observed{it: it}
		prev := c.seen[key]
		switch {
		case prev == nil && it.owner == "":
			// Never seen, unowned: free at once.
		case prev == nil || c.blind || !sameValue(prev.it.counter, it.counter):
			// New to this worker, or moved since: its clock starts now. After
			// a failed scan every lease starts afresh, so that time this
			// worker could not see the table does not count against owners
			// that could.
			o.changed = now
		default:
			o.changed = prev.changed
		}
		view[key] = o
		if it.finished() {
			finished[key] = true
		}
		delete(c.vanished, key)
	}
	for key, prev := range c.seen {
		if _, ok := view[key]; !ok {
			if _, known := c.vanished[key]; !known {
				c.vanished[key] = vanished{last: prev, since: now}
			}
		}
	}
	c.seen, c.blind = view, false
	c.mu.Lock()
	for key := range c.finishing {
		// Finished by this worker after the scan read its item.
		if o := view[key]; o != nil && !o.it.finished() {
			finished[key] = true
		} else {
			delete(c.finishing, key)
		}
	}
	c.finished = finished
	c.mu.Unlock()
	return view
}

// checkHeld compares the held leases with the scan: one another worker
// wrote is lost; one whose item vanished is written back.
func (c *Coordinator) checkHeld(ctx context.Context, view map[string]*observed) {
	c.mu.Lock()
	held := make([]*Lease, 0, len(c.held))
	for _, l := range c.held {
		held = append(held, l)
	}
	c.mu.Unlock()
	for _, l := range held {
		o := view[l.key]
		if o != nil {
			l.seen(o.it)
			continue
		}
		ok, err := l.restore(ctx)
		switch {
		case err != nil:
			c.report(fmt.Errorf("write back lease %q: %w", l.key, err))
		case ok:
			c.log.Warn("lease item was missing from the lease table; wrote it back from this worker's position", zap.String("lease", l.key))
		}
		delete(c.vanished, l.key)
	}
}

// restoreVanished writes back the items of listed shards that a scan found
// missing although this worker saw them before: the table was deleted and
// re-created, or an item was deleted by hand. Creating them afresh would
// start those shards over. Free and finished leases are written back at
// once; one another worker held is left to that worker for FailoverTime
// (it writes back its own, with its newer position), then written back
// without an owner.
func (c *Coordinator) restoreVanished(ctx context.Context, view map[string]*observed, listed map[string]Shard, streams map[string]bool) {
	now := c.now()
	for _, key := range slices.Sorted(maps.Keys(c.vanished)) {
		v := c.vanished[key]
		it := v.last.it
		if !streams[it.shard.Stream] || c.Lease(key) != nil {
			delete(c.vanished, key)
			continue
		}
		if _, ok := listed[key]; !ok {
			// A trimmed shard's lease, deleted on purpose.
			delete(c.vanished, key)
			continue
		}
		heldByOther := it.owner != "" && !it.finished() && now.Sub(v.last.changed) < c.cfg.FailoverTime
		if heldByOther && now.Sub(v.since) < c.cfg.FailoverTime {
			continue
		}
		av := newItem(it.shard, it.checkpoint)
		if it.checkpoint == "" {
			av[attrCheckpoint] = str(TrimHorizon)
		}
		av[attrCounter] = number(it.count + 1)
		av[attrOwnerSwitches] = number(it.switches)
		ok, err := c.db.put(ctx, av)
		if err != nil {
			c.report(fmt.Errorf("write back lease %q: %w", key, err))
			continue
		}
		delete(c.vanished, key)
		if ok {
			c.log.Warn("lease item was missing from the lease table; wrote it back from the last scan, without an owner",
				zap.String("lease", key), zap.String("checkpoint", it.checkpoint), zap.String("last_owner", it.owner))
			o := &observed{it: it}
			o.it.owner, o.it.counter, o.it.count = "", number(it.count+1), it.count+1
			view[key] = o
			c.seen[key] = o
		}
	}
}

// create writes a lease for every listed shard that has none. The shards
// of a stream the table has no lease of, at its first listing, start at
// cfg.Start; every other shard at TRIM_HORIZON, so that nothing written
// between two listings is missed.
func (c *Coordinator) create(ctx context.Context, view map[string]*observed, shards []Shard) {
	for _, s := range shards {
		if c.streams[s.Stream] {
			continue
		}
		c.streams[s.Stream] = true
		known := false
		for _, o := range view {
			if o.it.shard.Stream == s.Stream {
				known = true
				break
			}
		}
		for _, v := range c.vanished {
			if v.last.it.shard.Stream == s.Stream {
				known = true
			}
		}
		if !known && c.cfg.Start != TrimHorizon {
			for _, t := range shards {
				if t.Stream == s.Stream {
					c.startAt[t.Key()] = true
				}
			}
		}
	}
	for _, s := range shards {
		key := s.Key()
		if _, ok := view[key]; ok {
			delete(c.startAt, key)
			continue
		}
		if _, ok := c.vanished[key]; ok {
			continue
		}
		cp := TrimHorizon
		if c.startAt[key] {
			cp = c.cfg.Start
		}
		av := newItem(s, cp)
		ok, err := c.db.put(ctx, av)
		if err != nil {
			c.report(fmt.Errorf("create lease: %w", err))
			continue
		}
		delete(c.startAt, key)
		if ok {
			c.log.Debug("created lease", zap.String("lease", key), zap.String("checkpoint", cp))
			it, _ := parseItem(av)
			o := &observed{it: it}
			view[key] = o
			c.seen[key] = o
		}
	}
}

// take takes this round's share of free leases, or steals one.
func (c *Coordinator) take(ctx context.Context, view map[string]*observed, listed map[string]Shard, streams map[string]bool) {
	now := c.now()
	me := c.cfg.WorkerID
	var cands []candidate
	for _, key := range slices.Sorted(maps.Keys(view)) {
		o := view[key]
		if !streams[o.it.shard.Stream] {
			continue
		}
		_, isListed := listed[key]
		held := c.Lease(key) != nil
		cand := candidate{key: key, owner: o.it.owner}
		switch {
		case held:
			cand.owner, cand.live = me, true
		case o.it.owner == me:
			// A lease an earlier process with this worker id held: free.
		case o.it.owner != "":
			cand.live = now.Sub(o.changed) < c.cfg.FailoverTime
		}
		cand.ready = isListed && !o.it.finished() && c.parentsDone(o.it.shard, listed[key], view, listed)
		if !cand.live && !cand.ready {
			continue
		}
		cands = append(cands, cand)
	}
	p := choose(me, cands, c.rnd)
	c.m.workers.WithLabelValues(c.cfg.Table).Set(float64(p.workers))
	for _, key := range p.take {
		c.takeOne(ctx, view[key], false)
	}
	if p.steal != "" {
		c.log.Info("stealing a lease to even the spread", zap.String("lease", p.steal), zap.String("from", p.victim),
			zap.Int("target", p.target), zap.Int("workers", p.workers))
		c.takeOne(ctx, view[p.steal], true)
	}
}

// parentsDone reports whether every parent of a shard was read to its end:
// its lease is at SHARD_END, or it has no lease and is no longer listed
// (trimmed, or it ended before this table knew the stream).
func (c *Coordinator) parentsDone(s, listedAs Shard, view map[string]*observed, listed map[string]Shard) bool {
	parents := append(slices.Clone(s.Parents), listedAs.Parents...)
	for _, p := range parents {
		if p == "" {
			continue
		}
		pk := Shard{Stream: s.Stream, ID: p}.Key()
		if o, ok := view[pk]; ok {
			if !o.it.finished() {
				return false
			}
			continue
		}
		if _, ok := listed[pk]; ok {
			return false
		}
	}
	return true
}

// takeOne takes one lease with a conditional write on the counter this
// round saw, repairing attributes of the wrong type on the way.
func (c *Coordinator) takeOne(ctx context.Context, o *observed, steal bool) {
	it := o.it
	key := it.shard.Key()
	me := c.cfg.WorkerID
	set := repairs(it)
	set[attrOwner] = str(me)
	if it.owner != "" && it.owner != me {
		set[attrOwnerSwitches] = number(it.switches + 1)
	}
	sent := c.now()
	out, err := c.db.update(ctx, key, it.counter, it.count+1, set)
	var conflict *errConflict
	switch {
	case errors.As(err, &conflict):
		now, _ := parseItem(conflict.old)
		c.log.Info("lost the race for a lease; another worker wrote it first",
			zap.String("lease", key), zap.String("owner", now.owner), zap.Int64("counter", now.count), zap.Int64("expected", it.count))
		return
	case err != nil:
		if isTableGone(err) {
			c.tableGone()
		}
		c.report(fmt.Errorf("take lease %q: %w", key, err))
		return
	}
	taken, _ := parseItem(out)
	l := &Lease{c: c, shard: it.shard, key: key, start: taken.checkpoint, lost: make(chan struct{})}
	if l.start == "" {
		l.start = TrimHorizon
	}
	// A lease is created with counter 0; any write since (a take, a
	// renewal, a release) moved it.
	l.inherited = l.start == Latest && it.count > 0
	l.applyLocked(out, sent)
	c.mu.Lock()
	c.held[key] = l
	c.m.held.WithLabelValues(c.cfg.Table).Set(float64(len(c.held)))
	c.notifyLocked()
	c.mu.Unlock()
	if steal {
		c.m.steals.WithLabelValues(c.cfg.Table).Inc()
	} else {
		c.m.takes.WithLabelValues(c.cfg.Table).Inc()
	}
	c.log.Info("took lease", zap.String("lease", key), zap.String("from", it.owner),
		zap.String("checkpoint", l.start), zap.Bool("inherited", l.inherited), zap.Bool("stolen", steal))
}

// repairs returns the writes that put right the attributes of an item
// written by hand or by an older version: each gets the KCL's type.
func repairs(it item) map[string]types.AttributeValue {
	set := map[string]types.AttributeValue{}
	if it.checkpoint == "" {
		set[attrCheckpoint] = str(TrimHorizon)
	} else if _, ok := it.raw[attrCheckpoint].(*types.AttributeValueMemberS); !ok {
		set[attrCheckpoint] = str(it.checkpoint)
	}
	if _, ok := it.raw[attrSubSequence].(*types.AttributeValueMemberN); !ok {
		set[attrSubSequence] = number(0)
	}
	if _, ok := it.raw[attrOwnerSwitches].(*types.AttributeValueMemberN); !ok {
		set[attrOwnerSwitches] = number(it.switches)
	}
	if _, ok := it.raw[attrParents]; ok {
		if _, ok := it.raw[attrParents].(*types.AttributeValueMemberSS); !ok && len(it.shard.Parents) > 0 {
			set[attrParents] = &types.AttributeValueMemberSS{Value: it.shard.Parents}
		}
	}
	if _, ok := it.raw[attrStream].(*types.AttributeValueMemberS); !ok {
		set[attrStream] = str(it.shard.Stream)
	}
	if _, ok := it.raw[attrShard].(*types.AttributeValueMemberS); !ok {
		set[attrShard] = str(it.shard.ID)
	}
	return set
}

// clean deletes the finished leases of shards the listing no longer has
// (DynamoDB trims a shard 24 hours after it closed), so that the table
// does not grow with every shard roll-over.
func (c *Coordinator) clean(ctx context.Context, view map[string]*observed, listed map[string]Shard, streams map[string]bool) {
	for _, key := range slices.Sorted(maps.Keys(view)) {
		o := view[key]
		if _, ok := listed[key]; ok || !streams[o.it.shard.Stream] || !o.it.finished() || o.it.owner != "" {
			continue
		}
		if err := c.db.remove(ctx, key, o.it.counter); err != nil {
			c.report(err)
			continue
		}
		c.log.Debug("deleted the lease of a finished shard that is no longer listed", zap.String("lease", key))
		delete(view, key)
		delete(c.seen, key)
	}
}
