package ingest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// testSource hands one batch when it starts; run says what it does after.
type testSource struct {
	name string
	run  func(ctx context.Context, sink traffic.Sink) error
}

func (s testSource) Name() string                                     { return s.name }
func (s testSource) Run(ctx context.Context, sink traffic.Sink) error { return s.run(ctx, sink) }

// countSink counts the events put, and refuses once its context is done.
type countSink struct {
	mu sync.Mutex
	n  int
}

func (s *countSink) Put(ctx context.Context, batch []traffic.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += len(batch)
	return nil
}

func TestRunnerDrainsThenLeavesAStuckSourceBehind(t *testing.T) {
	defer goleak.VerifyNone(t)
	core, logs := observer.New(zapcore.DebugLevel)
	sink := &countSink{}
	unstick := make(chan struct{})
	started := make(chan struct{}, 2)
	late := testSource{"late", func(ctx context.Context, sink traffic.Sink) error {
		started <- struct{}{}
		<-ctx.Done()
		// What a reader holds when told to stop still lands.
		return sink.Put(ctx, make([]traffic.Event, 5))
	}}
	stuck := testSource{"stuck", func(ctx context.Context, sink traffic.Sink) error {
		started <- struct{}{}
		<-unstick // a read no context interrupts
		return nil
	}}
	r := NewRunner([]traffic.Source{late, stuck}, sink, zap.New(core))
	errs := make(chan error, 2)
	for i := range 2 {
		go func() { errs <- r.Run(i) }()
	}
	<-started
	<-started
	begin := time.Now()
	stopped := make(chan struct{})
	go func() { r.Stop(200 * time.Millisecond); close(stopped) }()
	// The stuck source never returns until the test lets it: Stop must
	// return without it, after its timeout.
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("Stop waited for the stuck source")
	}
	if took := time.Since(begin); took < 200*time.Millisecond {
		t.Errorf("Stop returned after %s, before its 200ms timeout", took)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	if sink.n != 5 {
		t.Errorf("%d events in the sink, want the 5 held at stop", sink.n)
	}
	left := logs.FilterMessageSnippet("did not stop in time").All()
	if len(left) != 1 || left[0].ContextMap()["source"] != "stuck" {
		t.Errorf("log of sources left behind: %v", left)
	}
	r.Stop(time.Second) // a second Stop returns at once
	close(unstick)
	time.Sleep(10 * time.Millisecond)
}

func TestRunnerReturnsASourceError(t *testing.T) {
	defer goleak.VerifyNone(t)
	boom := errors.New("boom")
	r := NewRunner([]traffic.Source{testSource{"bad", func(context.Context, traffic.Sink) error { return boom }}}, &countSink{}, zap.NewNop())
	if err := r.Run(0); !errors.Is(err, boom) || err.Error() != "source bad: boom" {
		t.Errorf("Run = %v, want source bad: boom", err)
	}
	r.Stop(time.Second)
}

func TestRunnerKeepsASourceWhoseInputEnded(t *testing.T) {
	defer goleak.VerifyNone(t)
	core, logs := observer.New(zapcore.InfoLevel)
	r := NewRunner([]traffic.Source{testSource{"stdin", func(context.Context, traffic.Sink) error { return nil }}}, &countSink{}, zap.New(core))
	done := make(chan error, 1)
	go func() { done <- r.Run(0) }()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while not stopped", err)
	case <-time.After(100 * time.Millisecond):
	}
	r.Stop(time.Second)
	if err := <-done; err != nil {
		t.Error(err)
	}
	if logs.FilterMessage("source finished its input").Len() != 1 {
		t.Errorf("log: %v", logs.All())
	}
}
