package daemon

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// stubbornSource delivers nothing and takes a while to stop once told,
// as a reader finishing a batch does; started counts its runs.
type stubbornSource struct {
	started atomic.Int32
	stop    time.Duration
}

func (s *stubbornSource) Name() string { return "stubborn" }

func (s *stubbornSource) Run(ctx context.Context, _ traffic.Sink) error {
	s.started.Add(1)
	<-ctx.Done()
	time.Sleep(s.stop)
	return nil
}

// TestPipelineStopDuringReplace: a stop that comes while a reload drains
// the running sources waits for that drain and starts nothing new.
func TestPipelineStopDuringReplace(t *testing.T) {
	p := newPipeline(zap.NewNop(), traffic.SinkFunc(func(context.Context, []traffic.Event) error { return nil }))
	old := &stubbornSource{stop: 300 * time.Millisecond}
	ran := make(chan error, 1)
	go func() { ran <- p.Run(&generation{sources: []traffic.Source{old}}) }()
	for old.started.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	next := &stubbornSource{}
	replaced := make(chan error, 1)
	swapped := false
	go func() {
		replaced <- p.Replace(&generation{sources: []traffic.Source{next}}, 10*time.Second, func() { swapped = true })
	}()
	for {
		p.mu.Lock()
		draining := p.draining != nil
		p.mu.Unlock()
		if draining {
			break
		}
		time.Sleep(time.Millisecond)
	}
	p.Stop(10 * time.Second)
	if err := <-replaced; !errors.Is(err, errStopping) {
		t.Errorf("Replace during a stop: %v, want errStopping", err)
	}
	if err := <-ran; err != nil {
		t.Errorf("Run: %v", err)
	}
	if swapped || next.started.Load() != 0 {
		t.Errorf("the new sources started during the stop (swapped %v)", swapped)
	}
}
