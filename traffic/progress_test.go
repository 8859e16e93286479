package traffic

import (
	"context"
	"testing"
	"time"
)

func TestProgressWatermark(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	p := NewProgress(func() time.Time { return now })
	if _, ok := p.Watermark("kinesis"); ok {
		t.Fatal("an unknown source has a watermark")
	}

	// A source without lanes (arrival time) stands at now, with no lag.
	p.Declare("http", 0)
	if w, ok := p.Watermark("http"); !ok || !w.Equal(now) {
		t.Fatalf("http watermark = %v, %v; want %v", w, ok, now)
	}

	// Two shards: the slowest busy one holds the watermark; an idle one
	// does not.
	a, b := p.Lane("dynamodb-streams"), p.Lane("dynamodb-streams")
	a.Advance(t0.Add(-50 * time.Second))
	b.Advance(t0.Add(-10 * time.Second))
	st, _ := p.State("dynamodb-streams")
	if want := t0.Add(-50 * time.Second); !st.Watermark.Equal(want) || st.Lag != 50*time.Second || !st.CatchingUp {
		t.Fatalf("two busy lanes: %+v; want watermark %v, lag 50s, catching up", st, want)
	}
	a.Idle()
	st, _ = p.State("dynamodb-streams")
	if want := t0.Add(-10 * time.Second); !st.Watermark.Equal(want) || st.Lag != 10*time.Second || st.CatchingUp {
		t.Fatalf("one idle lane: %+v; want watermark %v, lag 10s, not catching up", st, want)
	}
	b.Idle()
	st, _ = p.State("dynamodb-streams")
	if !st.Watermark.Equal(now) || st.Lag != 0 {
		t.Fatalf("all idle: %+v; want watermark now, lag 0", st)
	}
	// Times only move forward within a lane; a closed lane holds nothing.
	b.Advance(t0.Add(-time.Hour))
	if st, _ = p.State("dynamodb-streams"); st.Lag != 10*time.Second {
		t.Fatalf("a lane went back in time: %+v", st)
	}
	b.Close()
	if st, _ = p.State("dynamodb-streams"); st.Lag != 0 {
		t.Fatalf("a closed lane holds the watermark: %+v", st)
	}

	// CloudTrail delivers up to 15 minutes late: caught up, it stands at
	// the newest event delivered or now - 15 min, whichever is later, and
	// lags behind only past that delay.
	p.Declare("cloudtrail", CloudTrailDelay)
	ct := p.Lane("cloudtrail")
	ct.Idle()
	if w, _ := p.Watermark("cloudtrail"); !w.Equal(now.Add(-CloudTrailDelay)) {
		t.Fatalf("idle cloudtrail watermark = %v; want now - 15 min", w)
	}
	ct.Delivered(t0.Add(-5 * time.Minute))
	if w, _ := p.Watermark("cloudtrail"); !w.Equal(t0.Add(-5 * time.Minute)) {
		t.Fatalf("cloudtrail watermark after a delivery = %v; want its newest event", w)
	}
	ct.Advance(t0.Add(-6 * time.Minute))
	if st, _ = p.State("cloudtrail"); st.Lag != 5*time.Minute || st.CatchingUp {
		t.Fatalf("cloudtrail reading a fresh file: %+v; want lag 5m, not catching up", st)
	}
	now = now.Add(time.Hour)
	if st, _ = p.State("cloudtrail"); !st.CatchingUp {
		t.Fatalf("cloudtrail an hour behind is not catching up: %+v", st)
	}
	if got := len(p.States()); got != 3 {
		t.Fatalf("States() has %d sources, want 3", got)
	}
}

func TestLaneTrack(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	p := NewProgress(func() time.Time { return t0.Add(time.Minute) })
	l := p.Lane("jsonl")
	var got int
	sink := l.Track(SinkFunc(func(_ context.Context, b []Event) error { got += len(b); return nil }))
	batch := []Event{{Time: t0.Add(2 * time.Second)}, {Time: t0.Add(5 * time.Second)}, {Time: t0}}
	if err := sink.Put(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if w, _ := p.Watermark("jsonl"); got != 3 || !w.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after a batch: %d events, watermark %v; want 3 and the newest event time (busy)", got, w)
	}
	// A nil Progress keeps nothing and breaks nothing.
	var none *Progress
	none.Declare("x", 0)
	nl := none.Lane("x")
	nl.Advance(t0)
	nl.Idle()
	nl.Close()
	if _, ok := none.Watermark("x"); ok {
		t.Fatal("a nil Progress has a watermark")
	}
}
