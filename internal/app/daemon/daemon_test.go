package daemon

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/internal/logging"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// lateSource hands one batch when it starts and another only after it was
// told to stop, under its cancelled context: the batch a real reader holds
// when SIGTERM arrives.
type lateSource struct{ started chan struct{} }

func (s *lateSource) Name() string { return "late" }

func (s *lateSource) Run(ctx context.Context, sink traffic.Sink) error {
	batch := func(key string, n int) []traffic.Event {
		b := make([]traffic.Event, n)
		for i := range b {
			b[i] = traffic.Event{Table: "orders", PK: key, Class: traffic.Write, Units: 1, Time: time.Now(), Source: "late"}
		}
		return b
	}
	if err := sink.Put(ctx, batch("USER#1", 10)); err != nil {
		return err
	}
	close(s.started)
	<-ctx.Done()
	time.Sleep(50 * time.Millisecond) // still busy when told to stop
	return sink.Put(ctx, batch("USER#2", 5))
}

// syncBuffer is a bytes.Buffer safe for the daemon's log writes and the
// test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestDaemonDrainsSourcesOnStop(t *testing.T) {
	var logs syncBuffer
	log, err := logging.New(&logs, "debug", "logfmt")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.History.Path = t.TempDir()
	d, err := New(cfg, Options{Log: log, Stdout: &logs, Web: Web{Ingest: true}})
	if err != nil {
		t.Fatal(err)
	}
	src := &lateSource{started: make(chan struct{})}
	d.running.sources = []traffic.Source{src}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, nil) }()
	<-src.started
	cancel() // what SIGTERM does
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("daemon did not stop")
	}
	snap := d.core.Load().store.Snapshot()
	var events uint64
	for _, ts := range snap.Tables {
		events += ts.Events
	}
	if events != 15 {
		t.Errorf("store holds %d events after the drain, want 15 (the batch in flight at stop included)\n%s", events, logs.String())
	}
	if d.ready.Check() == nil {
		t.Error("still ready after stop")
	}
	for _, want := range []string{`msg="hotkeyd started"`, `msg="http server stopped"`, `msg=stopped`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

func TestDaemonNeedsASource(t *testing.T) {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	if _, err := New(cfg, Options{}); !errors.Is(err, errNoSources) {
		t.Errorf("New without sources: %v, want %v", err, errNoSources)
	}
	if _, err := New(cfg, Options{Web: Web{Ingest: true}}); err != nil {
		t.Errorf("New with HTTP ingest alone: %v", err)
	}
}

// TestAnnouncer checks the detector's log lines as the README shows them,
// through the process's logfmt logger: one line when a diagnosis is raised,
// none while it stays flagged, one when it clears.
func TestAnnouncer(t *testing.T) {
	var logs syncBuffer
	log, _ := logging.New(&logs, "info", "logfmt")
	a := export.NewAnnouncer(log, nil)
	a.Announce(makeChanges(false, "USER#42"))
	a.Announce(nil) // still hot: no new line
	a.Announce(makeChanges(true, "USER#42"))
	out := logs.String()
	if n := strings.Count(out, `msg="hot key"`); n != 1 {
		t.Errorf("%d hot key lines, want 1:\n%s", n, out)
	}
	for _, want := range [][2]string{
		{"warn", `msg="hot key" table=orders class=write key=USER#42 severity=warning share=0.25 peak_units_per_second=600 fix=write_sharding suffix_count=2`},
		{"info", `msg="hot key cleared" table=orders class=write key=USER#42`},
	} {
		if !regexp.MustCompile(`level=` + want[0] + ` caller=\S+ ` + regexp.QuoteMeta(want[1])).MatchString(out) {
			t.Errorf("log lacks level=%s ... %s:\n%s", want[0], want[1], out)
		}
	}
}

// makeChanges returns one change per key: a hot key raised, or cleared.
func makeChanges(cleared bool, keys ...string) []report.Change {
	var out []report.Change
	for _, k := range keys {
		d := report.Diagnosis{Cause: report.KindHotKey, Keys: []string{k}, Class: "write", Severity: report.SeverityWarning,
			Share: 0.25, PeakUnitsPerSecond: 600, Limit: 1000,
			Fix: report.Recommendation{Kind: "write_sharding", SuffixCount: 2, Text: "shard it"}}
		out = append(out, report.Change{Flag: report.Flag{Table: "orders", Diagnosis: d}, Cleared: cleared})
	}
	return out
}
