package shards

import (
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestRecent leaves out the events before from, and none without one.
func TestRecent(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(secs ...int) []traffic.Event {
		var out []traffic.Event
		for _, s := range secs {
			out = append(out, traffic.Event{Time: t0.Add(time.Duration(s) * time.Second)})
		}
		return out
	}
	for _, c := range []struct {
		name   string
		in     []traffic.Event
		from   time.Time
		wantAt []int
	}{
		{"no from keeps all", at(-5, 0, 5), time.Time{}, []int{-5, 0, 5}},
		{"older left out", at(-5, -1, 0, 5), t0, []int{0, 5}},
		{"all older", at(-9, -8), t0, nil},
		{"none older", at(1, 2), t0, []int{1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Recent(c.in, c.from)
			if len(got) != len(c.wantAt) {
				t.Fatalf("kept %d events, want %d", len(got), len(c.wantAt))
			}
			for i, s := range c.wantAt {
				if want := t0.Add(time.Duration(s) * time.Second); !got[i].Time.Equal(want) {
					t.Errorf("event %d at %v, want %v", i, got[i].Time, want)
				}
			}
		})
	}
}

// TestCaughtUpFrom keeps leaving out old events until an answer hands on
// one at or after from, or shows the shard read to its newest record.
func TestCaughtUpFrom(t *testing.T) {
	from := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name string
		out  Emitted
		done bool
	}{
		{"all older", Emitted{Records: 100}, false},
		{"reached from", Emitted{Records: 100, Newest: from}, true},
		{"past from", Emitted{Records: 100, Newest: from.Add(time.Second)}, true},
		{"caught up with nothing newer", Emitted{Records: 3, CaughtUp: true}, true},
		{"shard ended", Emitted{Records: 3, End: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &shardReader[int]{from: from, log: zap.NewNop()}
			r.caughtUpFrom(c.out)
			if done := r.from.IsZero(); done != c.done {
				t.Errorf("from cleared = %v, want %v", done, c.done)
			}
		})
	}
}
