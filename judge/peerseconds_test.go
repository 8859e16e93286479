package judge

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// stubBoard hands the peer's summary as a board round would: refreshed
// every `every` of the virtual clock.
type stubBoard struct{ peers []sketch.Replica }

func (b *stubBoard) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (b *stubBoard) Every() time.Duration          { return 10 * time.Second / 3 }
func (b *stubBoard) Peers() []sketch.Replica       { return b.peers }

// TestPeerTableSeconds: a replica that reads none of a table's shards
// sees, over the evaluations of its tick (once a second), every second of
// the table the peer's summaries have brought, each with its units, as
// history.Store.recordTable folds them (the last value seen of each
// second): the seconds before the last that the summaries carry
// (detect.EarlierSeconds), then the last (detect.LastSeconds). With only
// the last second of each evaluation, a board round of failover_time/3
// (10 s: 3.3 s) would leave the seconds between two rounds unseen.
func TestPeerTableSeconds(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	cfg := sketch.DefaultConfig()
	cfg.Window = time.Minute
	a, _ := sketch.NewStore(cfg, clock)
	b, _ := sketch.NewStore(cfg, clock)
	board := &stubBoard{}
	r, err := NewReplicas(ReplicasConfig{Worker: "b", Store: b, Tracker: detect.NewTracker(detect.DefaultSettings()), Tracked: 64, MaxBytes: 400_000, Log: zap.NewNop()},
		func(Publish) (Board, error) { return board, nil })
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[int64]float64{}
	written := 0.0
	lastRound := now
	var published time.Time // the peer's last second on the board
	for s := range 40 {
		var batch []traffic.Event
		for i := range 10 {
			batch = append(batch, traffic.Event{Table: "t1", PK: "K" + string(rune('a'+i)), Class: traffic.Write, Units: 1, Time: now})
		}
		written += 10
		if err := a.Put(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
		if s == 0 || now.Sub(lastRound) >= board.Every() {
			sum := a.Summary(true)
			board.peers = []sketch.Replica{{Worker: "a", Summary: sum}}
			published = sum.Tables[0].LastSecond
			lastRound = now
		}
		j := r.Evaluate()
		earlier := detect.EarlierSeconds(j.Snapshot, 10)
		for i, sec := range detect.LastSeconds(j.Snapshot, 10) {
			if sec.Table != "t1" || sec.At.IsZero() {
				continue
			}
			if i < len(earlier) {
				for _, e := range earlier[i] {
					recorded[e.At.Unix()] = e.Classes[traffic.Write].Units
				}
			}
			recorded[sec.At.Unix()] = sec.Classes[traffic.Write].Units
		}
	}
	sum := 0.0
	for _, u := range recorded {
		sum += u
	}
	start := time.Unix(1_700_000_000, 0)
	want := float64(published.Sub(start)/time.Second+1) * 10
	if sum != want || len(recorded) != int(want/10) {
		t.Errorf("replica b saw %d seconds of t1 holding %.0f units; the peer published %.0f units in %.0f seconds (written %.0f)",
			len(recorded), sum, want, want/10, written)
	}
}
