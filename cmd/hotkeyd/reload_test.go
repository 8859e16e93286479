package main

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/traffic"
)

func TestChangedKeys(t *testing.T) {
	base := config.Default()
	for _, c := range []struct {
		change func(*config.Config)
		want   []string
	}{
		{func(*config.Config) {}, nil},
		{func(c *config.Config) { c.Detector.Threshold = 0.3 }, []string{"threshold"}},
		{func(c *config.Config) { c.Detector.Threshold, c.Detector.Top = 0.3, 5 }, []string{"threshold", "detector"}},
		{func(c *config.Config) { c.Detector.Top = 20; c.Window = time.Hour }, []string{"window", "detector"}},
		{func(c *config.Config) { c.Tables = map[string]config.Table{"orders": {PartitionKey: "id"}} }, []string{"tables"}},
		{func(c *config.Config) { c.Keys, c.KeyHashSecret = "hash", "s" }, []string{"keys", "key_hash_secret"}},
	} {
		next := base
		c.change(&next)
		if got := changedKeys(base, next); !slices.Equal(got, c.want) {
			t.Errorf("changedKeys = %v, want %v", got, c.want)
		}
	}
}

// TestReloadKeysClassified: every key of the configuration file says how a
// reload applies it.
func TestReloadKeysClassified(t *testing.T) {
	ct := reflect.TypeFor[config.Config]()
	names := []string{"threshold"} // the detector's, set at the top level
	for i := range ct.NumField() {
		name, _, _ := strings.Cut(ct.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	for _, name := range names {
		if _, ok := reloadKeys[name]; !ok {
			t.Errorf("config key %s: not in reloadKeys; say how a reload applies it (and document it in the README)", name)
		}
	}
}

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
