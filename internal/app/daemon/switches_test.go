package daemon

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestWindowReplace: the window switch puts into the running store, and
// what a store counts for good (late events) goes on over the stores a
// reload replaced.
func TestWindowReplace(t *testing.T) {
	newStore := func() *sketch.Store {
		s, err := sketch.NewStore(sketch.DefaultConfig(), time.Now)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	now := time.Now()
	first := newStore()
	w := newWindow(first)
	// One event now, then one older than the window: late.
	put := func(table string) {
		t.Helper()
		for _, at := range []time.Time{now, now.Add(-10 * sketch.DefaultWindow)} {
			e := traffic.Event{Table: table, PK: "k", Class: traffic.Write, Units: 1, Time: at, Source: "src"}
			if err := w.Put(context.Background(), []traffic.Event{e}); err != nil {
				t.Fatal(err)
			}
		}
	}
	put("orders")
	second := newStore()
	w.replace(second)
	if w.Tracked("orders", "") || w.Tables() != 0 {
		t.Errorf("the new store tracks %d tables (orders: %v), want none", w.Tables(), w.Tracked("orders", ""))
	}
	put("users")
	if !w.Tracked("users", "") || w.Tables() != 1 || first.Tracked("users", "") {
		t.Error("a Put after the replace did not land in the new store alone")
	}
	if got, want := w.LateEvents(), map[string]uint64{"src": 2}; !maps.Equal(got, want) {
		t.Errorf("late events %v over the two stores, want %v", got, want)
	}
	if got := second.LateEvents()["src"]; got != 1 {
		t.Errorf("the new store counted %d late events, want 1", got)
	}
}
