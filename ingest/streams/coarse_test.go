package streams

import (
	"fmt"
	"testing"
	"time"
)

func TestShardClockPlace(t *testing.T) {
	minute := time.Date(2025, 3, 1, 12, 7, 0, 0, time.UTC)

	t.Run("backlog spreads over its minute", func(t *testing.T) {
		var clk shardClock
		clk.polled(minute.Add(10 * time.Minute))
		seconds := map[int64]int{}
		for i := range 6000 {
			got := clk.place(minute, fmt.Sprintf("%021d", 1000+i), minute.Add(10*time.Minute))
			if got.Before(minute) || !got.Before(minute.Add(time.Minute)) {
				t.Fatalf("record placed at %v, outside its minute", got)
			}
			seconds[got.Unix()]++
		}
		if len(seconds) != 60 {
			t.Fatalf("a minute's backlog landed on %d seconds, want 60", len(seconds))
		}
		for s, n := range seconds {
			if n > 200 { // 100 per second on average
				t.Fatalf("second %d holds %d of 6000 records", s, n)
			}
		}
		// The same record lands on the same second at every read.
		a := clk.place(minute, "000000000000000001234", minute.Add(time.Hour))
		b := clk.place(minute, "000000000000000001234", minute.Add(time.Hour))
		if !a.Equal(b) {
			t.Fatalf("one record placed at %v then %v", a, b)
		}
	})

	t.Run("live records land on their arrival second", func(t *testing.T) {
		var clk shardClock
		prev := minute.Add(36*time.Second + 200*time.Millisecond)
		clk.polled(prev)
		clk.answered(true)
		clk.polled(prev.Add(time.Second))
		now := prev.Add(1100 * time.Millisecond)
		for i := range 100 {
			got := clk.place(minute, fmt.Sprint(i), now)
			if got.Unix() < prev.Unix() || got.Unix() > now.Unix() {
				t.Fatalf("live record placed at %v, outside [%v, %v]", got, prev, now)
			}
		}
	})

	t.Run("a poll that was full does not bound the next", func(t *testing.T) {
		var clk shardClock
		clk.polled(minute.Add(50 * time.Second))
		clk.answered(false)
		got := map[int64]bool{}
		for i := range 1000 {
			got[clk.place(minute, fmt.Sprint(i), minute.Add(55*time.Second)).Unix()] = true
		}
		if len(got) != 56 {
			t.Fatalf("records behind a full poll landed on %d seconds, want 56 (0..55)", len(got))
		}
	})

	t.Run("a non-zero second proves whole seconds", func(t *testing.T) {
		var clk shardClock
		fine := minute.Add(17 * time.Second)
		if got := clk.place(fine, "1", minute.Add(time.Hour)); !got.Equal(fine) {
			t.Fatalf("fine time moved to %v", got)
		}
		if got := clk.place(minute, "2", minute.Add(time.Hour)); !got.Equal(minute) {
			t.Fatalf("a whole minute in a shard of whole seconds moved to %v", got)
		}
	})

	t.Run("no creation time takes the record before it", func(t *testing.T) {
		var clk shardClock
		now := minute.Add(time.Hour)
		if got := clk.place(time.Time{}, "1", now); !got.Equal(now) {
			t.Fatalf("first record without a time at %v, want the poll's time", got)
		}
		at := minute.Add(3 * time.Second)
		clk.place(at, "2", now)
		if got := clk.place(time.Time{}, "3", now); !got.Equal(at) {
			t.Fatalf("record without a time at %v, want %v", got, at)
		}
	})
}
