package lease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/zap"
)

// ErrLost is returned by the writes of a lease that another worker took.
var ErrLost = errors.New("lease lost to another worker")

// States of Lease.ended.
const (
	stillHeld int32 = iota
	endLost
	endReleased
)

// errReleased is returned by the writes of a lease this worker released.
var errReleased = errors.New("lease released")

// Lease is a shard lease this worker holds. Its reader reads the shard from
// Start, calls Checkpoint as it goes, and at its end Finish or, when it
// stops early, Release. Its methods are safe for concurrent use; writes of
// one lease are serialized (each expects the counter the previous one left).
type Lease struct {
	c     *Coordinator
	shard Shard
	key   string
	start string
	// inherited: the checkpoint was Latest and the lease had been held
	// before (see Inherited).
	inherited bool
	lost      chan struct{}

	mu         sync.Mutex
	counter    types.AttributeValue
	count      int64
	checkpoint string
	// written is when the last successful write was sent; ended is
	// stillHeld, endLost or endReleased. Both are read without mu, so that
	// readiness and validity never wait for a write in flight.
	written atomic.Pointer[time.Time]
	ended   atomic.Int32
	// maybe is the counter of a write whose outcome is unknown (0: none),
	// sent at maybeSent; maybeRelease says whether it released the lease.
	maybe        int64
	maybeSent    time.Time
	maybeRelease bool
}

// Shard returns the leased shard.
func (l *Lease) Shard() Shard { return l.shard }

// Start returns the checkpoint the lease held when it was taken: a sequence
// number to read after, TrimHorizon or Latest.
func (l *Lease) Start() string { return l.start }

// Inherited reports whether the lease was taken at Latest from an earlier
// owner: a worker began reading the shard at LATEST and recorded no
// position before it stopped or vanished, so the records written since it
// began may have been counted by nobody. Reading at LATEST again would
// lose them; the new owner reads the shard from its oldest record of
// interest instead. A lease taken at Latest straight after its creation
// is not inherited: its first owner starts where start: latest says.
func (l *Lease) Inherited() bool { return l.inherited }

// Lost is closed when another worker took the lease. The reader must stop
// without writing anything more: the new owner reads from the last
// checkpoint.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Valid reports whether the lease is certainly still this worker's: not
// lost, and renewed recently enough that no other worker can have found it
// expired. A reader hands records on only while its lease is valid.
func (l *Lease) Valid() bool { return l.ended.Load() == stillHeld && l.age(l.c.now()) < l.c.valid }

// WaitValid returns nil once the lease is valid (at once, normally), ErrLost
// when it was lost, or ctx.Err(). A lease stops being valid when the lease
// table cannot be written for a while; the reader then waits instead of
// reading on, because another worker may take the lease.
func (l *Lease) WaitValid(ctx context.Context) error {
	for {
		switch {
		case l.ended.Load() != stillHeld:
			return ErrLost
		case l.Valid():
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.lost:
			return ErrLost
		case <-time.After(l.c.every / 10):
		}
	}
}

// Checkpoint records seq, the sequence number of the last record handed
// on. It returns ErrLost when another worker took the lease.
func (l *Lease) Checkpoint(ctx context.Context, seq string) error {
	return l.write(ctx, checkpointSet(seq), false)
}

// Finish records that the shard was read to its end (SHARD_END) and
// releases the lease: it is never taken again, and the shard's children
// may be.
func (l *Lease) Finish(ctx context.Context) error {
	if err := l.write(ctx, checkpointSet(ShardEnd), true); err != nil {
		return err
	}
	l.c.setFinished(l.key)
	return nil
}

// Release records seq (unless empty) and gives the lease up in the same
// write, so that another worker takes it at its next round and reads on
// from there. It is what a reader does when it stops.
func (l *Lease) Release(ctx context.Context, seq string) error {
	var set map[string]types.AttributeValue
	if seq != "" {
		set = checkpointSet(seq)
	}
	return l.write(ctx, set, true)
}

// renew increments the counter, which tells the other workers this one is
// alive.
func (l *Lease) renew(ctx context.Context) error { return l.write(ctx, nil, false) }

// checkpointSet is what a checkpoint writes, as the KCL does: the sequence
// number, sub-sequence 0 (DynamoDB Streams records have none), and no owner
// switch since.
func checkpointSet(seq string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrCheckpoint:    str(seq),
		attrSubSequence:   number(0),
		attrOwnerSwitches: number(0),
	}
}

// write does one conditional write of the lease; release also removes the
// owner. A write that finds the item changed either recovers it (an earlier
// write whose answer was lost went through after all; the item vanished or
// was re-created without an owner, the lease table having been deleted or
// reset) or loses the lease.
func (l *Lease) write(ctx context.Context, set map[string]types.AttributeValue, release bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var remove []string
	if release {
		remove = []string{attrOwner}
	}
	for {
		switch l.ended.Load() {
		case endLost:
			return ErrLost
		case endReleased:
			return errReleased
		}
		sent := l.c.now()
		out, err := l.c.db.update(ctx, l.key, l.counter, l.count+1, set, remove...)
		var conflict *errConflict
		if errors.As(err, &conflict) {
			if l.adoptLocked(conflict.old) {
				continue
			}
			if l.retriedLocked(conflict.old, set, release) {
				out, err = conflict.old, nil
			} else {
				out, err = l.recover(ctx, conflict, set, release)
			}
		}
		if err != nil {
			switch {
			case isTableGone(err):
				l.c.tableGone()
			case !errors.Is(err, ErrLost):
				// The write may or may not have happened (a timeout, a
				// connection reset after sending): remember it, so that
				// finding it done later is not mistaken for another
				// worker's write.
				l.maybe, l.maybeSent, l.maybeRelease = l.count+1, sent, release
			}
			return err
		}
		l.applyLocked(out, sent)
		if release {
			l.ended.Store(endReleased)
			l.c.drop(l, false, "")
		}
		return nil
	}
}

// adoptLocked reports whether the item found (nil: none) is the outcome of
// this worker's last write whose answer was lost, and if so takes it in.
// Called with l.mu held.
func (l *Lease) adoptLocked(av map[string]types.AttributeValue) bool {
	if l.maybe == 0 || av == nil {
		return false
	}
	it, _ := parseItem(av)
	me := l.c.cfg.WorkerID
	if it.count != l.maybe || (l.maybeRelease && it.owner != "") || (!l.maybeRelease && it.owner != me) {
		return false
	}
	l.maybe = 0
	l.applyLocked(av, l.maybeSent)
	if l.maybeRelease {
		l.ended.Store(endReleased)
		l.c.drop(l, false, "")
	}
	return true
}

// retriedLocked reports whether the item a conditional write found is that
// very write, applied: the SDK sent it again after an answer was lost (a
// connection reset after the request arrived), and the second attempt
// failed its condition on the first one's counter. The KCL checks for the
// same spurious retry when a renewal fails. Called with l.mu held.
func (l *Lease) retriedLocked(av map[string]types.AttributeValue, set map[string]types.AttributeValue, release bool) bool {
	if av == nil {
		return false
	}
	it, _ := parseItem(av)
	owner := l.c.cfg.WorkerID
	if release {
		owner = ""
	}
	if it.count != l.count+1 || it.owner != owner {
		return false
	}
	for name, v := range set {
		if !sameValue(av[name], v) {
			return false
		}
	}
	return true
}

// recover handles a conditional write that failed. Called with l.mu held.
func (l *Lease) recover(ctx context.Context, conflict *errConflict, set map[string]types.AttributeValue, release bool) (map[string]types.AttributeValue, error) {
	if conflict.old == nil {
		// The item is gone (deleted by hand, or the whole table was deleted
		// and re-created): write it back from what this worker knows.
		av := newItem(l.shard, l.checkpoint)
		av[attrCounter] = number(l.count + 1)
		maps.Copy(av, set)
		if !release {
			av[attrOwner] = str(l.c.cfg.WorkerID)
		}
		ok, err := l.c.db.put(ctx, av)
		if err != nil {
			return nil, err
		}
		if ok {
			l.c.log.Warn("lease item was missing from the lease table; wrote it back from this worker's position",
				zap.String("lease", l.key), zap.String("checkpoint", l.checkpoint))
			return av, nil
		}
		l.lose("its item was re-created by another worker")
		return nil, ErrLost
	}
	old, _ := parseItem(conflict.old)
	if old.owner == "" && old.count < l.count && !old.finished() {
		// A lower counter than this worker's, and no owner: the item was
		// re-created (table deleted, or reset by hand) since this worker's
		// last write. Its checkpoint knows less than this worker does.
		full := maps.Clone(set)
		if full == nil {
			full = map[string]types.AttributeValue{}
		}
		if _, ok := full[attrCheckpoint]; !ok {
			maps.Copy(full, checkpointSet(l.checkpoint))
		}
		var remove []string
		if release {
			remove = []string{attrOwner}
		} else {
			full[attrOwner] = str(l.c.cfg.WorkerID)
		}
		out, err := l.c.db.update(ctx, l.key, old.counter, l.count+1, full, remove...)
		var again *errConflict
		if errors.As(err, &again) {
			l.lose("written by another worker while this one wrote it back")
			return nil, ErrLost
		}
		if err == nil {
			l.c.log.Warn("lease item was re-created without an owner; wrote this worker's position back into it",
				zap.String("lease", l.key), zap.String("checkpoint", l.checkpoint))
		}
		return out, err
	}
	l.lose(fmt.Sprintf("taken by %q (counter %d, this worker's %d)", old.owner, old.count, l.count))
	return nil, ErrLost
}

// applyLocked takes in the item as written. Called with l.mu held.
func (l *Lease) applyLocked(av map[string]types.AttributeValue, sent time.Time) {
	it, _ := parseItem(av)
	l.counter, l.count = av[attrCounter], it.count
	if it.checkpoint != "" {
		l.checkpoint = it.checkpoint
	}
	l.written.Store(&sent)
}

// lose marks the lease lost. Called with l.mu held.
func (l *Lease) lose(reason string) {
	if !l.ended.CompareAndSwap(stillHeld, endLost) {
		return
	}
	close(l.lost)
	l.c.drop(l, true, reason)
}

// seen compares the item of the last scan with what this worker wrote, and
// marks the lease lost if someone else wrote it since. A lower counter is a
// scan that read the item before this worker's latest write.
func (l *Lease) seen(it item) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended.Load() != stillHeld || l.adoptLocked(it.raw) {
		return
	}
	if it.count > l.count || (it.count == l.count && !sameValue(it.counter, l.counter)) {
		if it.owner == l.c.cfg.WorkerID {
			l.lose(fmt.Sprintf("written under this worker's id by another process (counter %d, this worker's %d): is worker_id set to the same value on two replicas?", it.count, l.count))
			return
		}
		l.lose(fmt.Sprintf("taken by %q (counter %d, this worker's %d)", it.owner, it.count, l.count))
	}
}

// dueForRenewal reports whether the lease was not written for after.
func (l *Lease) dueForRenewal(now time.Time, after time.Duration) bool { return l.age(now) >= after }

// restore writes the lease's item back when a scan found it missing, and
// reports whether it did.
func (l *Lease) restore(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended.Load() != stillHeld {
		return false, nil
	}
	av := newItem(l.shard, l.checkpoint)
	av[attrCounter] = number(l.count + 1)
	av[attrOwner] = str(l.c.cfg.WorkerID)
	sent := l.c.now()
	ok, err := l.c.db.put(ctx, av)
	if ok {
		l.applyLocked(av, sent)
	}
	if err != nil && !isTableGone(err) {
		// The write may have happened with its answer lost: finding this
		// worker's own counter later is not another worker's write.
		l.maybe, l.maybeSent, l.maybeRelease = l.count+1, sent, false
	}
	return ok, err
}

// age returns how long ago the lease was last written.
func (l *Lease) age(now time.Time) time.Duration {
	w := l.written.Load()
	if w == nil {
		return time.Duration(1<<63 - 1)
	}
	return now.Sub(*w)
}
