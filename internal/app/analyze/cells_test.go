package analyze

import (
	"context"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// recordCells puts events through a recorder keeping keep keys per class
// and step, and returns the cells of the orders table.
func recordCells(t *testing.T, keep int, events []traffic.Event) history.Answer {
	t.Helper()
	r := newRecorder(traffic.SinkFunc(func(context.Context, []traffic.Event) error { return nil }), keep, 10)
	if err := r.Put(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	hs := r.history(report.Report{Settings: report.Settings{ReadLimit: 3000, WriteLimit: 1000}, Tables: []report.TableReport{{Table: "orders"}}})
	if len(hs) != 1 {
		t.Fatalf("%d histories, want orders'", len(hs))
	}
	return hs[0]
}

// cellAt returns the cell of class that starts at sec seconds after t0.
func cellAt(t *testing.T, h history.Answer, class string, sec int) history.Cell {
	t.Helper()
	for _, s := range h.Series {
		for _, c := range s.Cells {
			if s.Class == class && c.Start.Equal(t0.Add(time.Duration(sec)*time.Second)) {
				return c
			}
		}
	}
	t.Fatalf("no %s cell at +%d s in %+v", class, sec, h)
	return history.Cell{}
}

// TestRecorderCellsBusiestSecond: a cell of many seconds keeps its
// busiest second, the table's and each key's, as well as its totals; a
// step that merges keeps the busier of the two; events a few seconds out
// of order still add up in their second.
func TestRecorderCellsBusiestSecond(t *testing.T) {
	var events []traffic.Event
	// 400 seconds: steps of 2 s. USER#1 takes 1 WCU a second, and 50 in
	// second 101, half of them written after seconds 102..105.
	for s := range 400 {
		events = append(events, ev(s, "USER#1", traffic.Write, 1), ev(s, "USER#2", traffic.Write, 2))
		if s == 101 {
			events = append(events, ev(101, "USER#1", traffic.Write, 24))
		}
		if s == 105 {
			events = append(events, ev(101, "USER#1", traffic.Write, 25))
		}
	}
	throttled := ev(101, "USER#1", traffic.Write, 0)
	throttled.Throttled = true
	events = append(events, throttled)
	h := recordCells(t, 5, events)
	if h.StepSeconds != 2 || len(h.Series) != 1 || h.Series[0].Class != "write" || h.Series[0].Ceiling != 1000 || len(h.Series[0].Cells) != 200 {
		t.Fatalf("history of step %d with %d series, want 200 cells of writes of 2 s against 1000 WCU/s: %+v", h.StepSeconds, len(h.Series), h.Series)
	}
	c := cellAt(t, h, "write", 100)
	// Seconds 100 and 101: USER#1 1 + 50, USER#2 2 + 2.
	if c.Units != 55 || c.Events != 6 || c.Throttled != 1 || c.BusiestSecond != 52 {
		t.Errorf("cell at +100 s: %g units, %d events, %d throttled, busiest second %g; want 55, 6, 1, 52", c.Units, c.Events, c.Throttled, c.BusiestSecond)
	}
	if len(c.Keys) != 2 || c.Keys[0].Key != "USER#1" || c.Keys[0].Units != 51 || c.Keys[0].BusiestSecond != 50 || c.Keys[1].BusiestSecond != 2 {
		t.Errorf("cell at +100 s keys %+v, want USER#1 51 units peaking at 50, then USER#2 peaking at 2", c.Keys)
	}
	if c.Rest.Units != 0 || c.Keys[0].Share != 51.0/55 {
		t.Errorf("rest %+v, USER#1's share %g; want none and 51/55", c.Rest, c.Keys[0].Share)
	}
	if q := cellAt(t, h, "write", 200); q.BusiestSecond != 3 || q.Keys[0].Key != "USER#2" || q.Keys[0].BusiestSecond != 2 {
		t.Errorf("a quiet cell: busiest %g, keys %+v; want 3 and USER#2 at 2", q.BusiestSecond, q.Keys)
	}
}

// TestRecorderCellsRestAndShards: a cell lists at most keep keys of its
// class, the rest adds up to the cell's units, and a stream's shards are
// counted with their shares.
func TestRecorderCellsRestAndShards(t *testing.T) {
	var events []traffic.Event
	for i, u := range []float64{8, 4, 2, 1, 1} {
		e := ev(0, "K"+string(rune('a'+i)), traffic.Write, u)
		e.Shard = "shardId-1"
		if i > 0 {
			e.Shard = "shardId-2"
		}
		events = append(events, e)
	}
	events = append(events, ev(0, "READER", traffic.Read, 3))
	h := recordCells(t, 2, events)
	w := cellAt(t, h, "write", 0)
	if len(w.Keys) != 2 || w.Keys[0].Key != "Ka" || w.Keys[1].Key != "Kb" || w.Rest.Units != 4 || w.Rest.Share != 0.25 {
		t.Errorf("write cell keys %+v rest %+v; want Ka and Kb, the rest 4 units (25%%)", w.Keys, w.Rest)
	}
	if len(w.Shards) != 2 || w.Shards[0].Shard != "shardId-2" || w.Shards[0].Records != 4 || w.Shards[0].Share != 0.8 || w.Shards[1].Records != 1 {
		t.Errorf("write cell shards %+v; want shardId-2 with 4 records (80%%), then shardId-1", w.Shards)
	}
	r := cellAt(t, h, "read", 0)
	if len(r.Keys) != 1 || r.Keys[0].Key != "READER" || r.Keys[0].Share != 1 || len(r.Shards) != 0 || r.BusiestSecond != 3 {
		t.Errorf("read cell %+v; want READER alone, no shard, busiest 3", r)
	}
}
