package sketch

import (
	"context"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// sinceRig is a live store (a 20 s window in slots of 5 s) on a virtual
// clock, and a caller of SnapshotSince that holds whatever it was given.
type sinceRig struct {
	t     *testing.T
	now   time.Time
	store *Store
	held  map[string]uint64
	every bool // ask for every second
	marks fixedMarks
}

func newSinceRig(t *testing.T) *sinceRig {
	r := &sinceRig{t: t, now: time.Unix(1_700_000_000, 0), held: map[string]uint64{}, marks: fixedMarks{}}
	var err error
	r.store, err = NewStore(Config{Window: 20 * time.Second, SubWindows: 4, Tracked: 10}, func() time.Time { return r.now })
	if err != nil {
		t.Fatal(err)
	}
	r.store.SetWatermarks(r.marks)
	return r
}

func (r *sinceRig) put(table, source string, at time.Time, n int) {
	batch := make([]traffic.Event, n)
	for i := range batch {
		batch[i] = traffic.Event{Table: table, PK: "K", Class: traffic.Write, Units: 1, Time: at, Source: source}
	}
	if err := r.store.Put(context.Background(), batch); err != nil {
		r.t.Fatal(err)
	}
}

// take takes SnapshotSince and returns, per table, whether it was copied
// out (true) or kept.
func (r *sinceRig) take() map[string]bool {
	snap := r.store.SnapshotSince(func(table, _ string) (uint64, bool) { return r.held[table], r.every }, nil)
	out := map[string]bool{}
	for _, ts := range snap.Tables {
		out[ts.Table] = !ts.Kept
		if ts.Kept && (ts.Events != 0 || len(ts.Classes[traffic.Write].Top) != 0) {
			r.t.Errorf("%s: a kept entry with counts", ts.Table)
		}
		if !ts.Kept && ts.Version == 0 {
			r.t.Errorf("%s: copied out without a version", ts.Table)
		}
		r.held[ts.Table] = ts.Version
	}
	return out
}

// TestSnapshotSinceDue holds each rule of SnapshotSince: what makes a
// table's picture due again, and what does not.
func TestSnapshotSinceDue(t *testing.T) {
	t.Run("a table new to the caller, then kept", func(t *testing.T) {
		r := newSinceRig(t)
		r.put("a", "", r.now, 10)
		if !r.take()["a"] {
			t.Error("a new table kept")
		}
		if r.take()["a"] {
			t.Error("copied out again with nothing new")
		}
		r.held["a"] = 0 // a caller that lost it
		if !r.take()["a"] {
			t.Error("kept for a caller that holds none")
		}
	})
	t.Run("events wait for their second to close", func(t *testing.T) {
		r := newSinceRig(t)
		r.put("a", "", r.now, 10)
		r.take()
		for range 9 {
			r.now = r.now.Add(100 * time.Millisecond)
			r.put("a", "", r.now, 10)
			if r.take()["a"] {
				t.Fatalf("copied out at %v, within the second", r.now)
			}
		}
		r.now = r.now.Add(100 * time.Millisecond)
		if !r.take()["a"] {
			t.Error("kept as its second closed, with events in it")
		}
	})
	t.Run("an idle table: its recent seconds, then nothing", func(t *testing.T) {
		r := newSinceRig(t)
		r.put("a", "", r.now, 10)
		r.take()
		var copied []int
		for s := 1; s <= 12; s++ {
			r.now = r.now.Add(time.Second)
			if r.take()["a"] {
				copied = append(copied, s)
			}
		}
		// Its events' second is among the recent seconds (3) judged at
		// the seconds 1 to 3, leaves them at 4; nothing after.
		if len(copied) != 4 || copied[3] != 4 {
			t.Errorf("copied out at seconds %v, want 1 to 4", copied)
		}
	})
	t.Run("every second while the caller asks", func(t *testing.T) {
		r := newSinceRig(t)
		r.put("a", "", r.now, 10)
		r.take()
		r.now = r.now.Add(10 * time.Second)
		r.take()
		r.every = true
		for s := range 3 {
			r.now = r.now.Add(time.Second)
			if !r.take()["a"] {
				t.Errorf("kept at second %d though asked for every second", s)
			}
			if r.take()["a"] {
				t.Errorf("copied out twice in second %d", s)
			}
		}
	})
	t.Run("the window's start moves while it holds traffic", func(t *testing.T) {
		r := newSinceRig(t)
		r.now = r.now.Add(30 * time.Second) // a full window since the store began
		r.put("a", "", r.now, 10)
		r.put("b", "", r.now, 10)
		r.take()
		var copied []int
		for s := 1; s <= 45; s++ {
			r.now = r.now.Add(time.Second)
			if s == 30 {
				r.put("b", "", r.now.Add(-time.Second), 1) // b gets a late event
			}
			if r.take()["a"] && s > 4 {
				copied = append(copied, s)
			}
		}
		// The slot of 5 s moves at seconds 5, 10, 15 (4 and before: its
		// recent seconds); its events leave the window at 20; empty
		// since, it moves without being copied out.
		if len(copied) != 4 || copied[0] != 5 || copied[3] != 20 {
			t.Errorf("copied out at seconds %v, want 5, 10, 15, 20", copied)
		}
	})
	t.Run("a source holding the judged seconds back", func(t *testing.T) {
		r := newSinceRig(t)
		r.marks["stream"] = r.now
		r.put("a", "stream", r.now, 10)
		r.take()
		var copied []int
		for s := 1; s <= 6; s++ {
			r.now = r.now.Add(time.Second)
			r.put("a", "stream", r.now, 10)
			if r.take()["a"] {
				copied = append(copied, s)
			}
		}
		// The watermark stands: events are copied out once two seconds of
		// the clock passed since the last picture.
		if len(copied) != 3 || copied[0] != 2 {
			t.Errorf("copied out at seconds %v, want 2, 4 and 6", copied)
		}
		if p := r.store.Pulse(); p != r.store.Pulse() {
			t.Error("Pulse differs with nothing moved")
		}
		p := r.store.Pulse()
		r.marks["stream"] = r.now
		if r.store.Pulse() == p {
			t.Error("Pulse the same though the source's watermark moved")
		}
		if !r.take()["a"] {
			t.Error("kept as its source's watermark moved past its events")
		}
	})
}
