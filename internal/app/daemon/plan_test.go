package daemon

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/internal/app/config"
)

// TestPlan: a reload's plan says, for each change of the file, what
// applies in place and what restarts, and builds only what restarts (an
// empty store for a new shape, a generation of sources, a listener),
// changing nothing of the running daemon.
func TestPlan(t *testing.T) {
	dir := t.TempDir()
	base := "listen: 127.0.0.1:0\nsources:\n  - type: jsonl\n    paths: [" + filepath.Join(dir, "a.log") + "]\n"
	path := filepath.Join(dir, "hotkeyd.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, file string
		// applied and restarted are the plan's lists, each restarted
		// entry by its first words; store, gen and recent say what it
		// builds.
		applied, restarted []string
		store, gen, recent bool
		err                string
	}{
		{name: "nothing", file: base},
		{name: "threshold", file: base + "threshold: 0.3\n", applied: []string{"threshold"}},
		{name: "top", file: base + "detector: {top: 5}\n", applied: []string{"detector"}, recent: true},
		{name: "keys", file: base + "keys: redact\n", applied: []string{"keys"}},
		{name: "window", file: base + "window: 2m\n", restarted: []string{"the window (window changed)", "the sources (the window restarts)"},
			store: true, gen: true, recent: true},
		{name: "sources", file: strings.ReplaceAll(base, "a.log", "b.log"), restarted: []string{"the sources (sources changed)"}, gen: true},
		{name: "no sources", file: "listen: 127.0.0.1:0\nsources: []\n", err: errNoSources.Error()},
		{name: "bad file", file: base + "threshold: 2\n", err: "threshold"},
	} {
		t.Run(c.name, func(t *testing.T) {
			write(base)
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			d, err := New(cfg, Options{Log: zap.NewNop(), Load: func() (config.Config, error) { return config.Load(path) }})
			if err != nil {
				t.Fatal(err)
			}
			store := d.core.Load().store
			write(c.file)
			p, err := d.plan()
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("plan: %v, want an error with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			if !slices.Equal(p.applied, c.applied) {
				t.Errorf("applied %q, want %q", p.applied, c.applied)
			}
			if len(p.restarted) != len(c.restarted) {
				t.Errorf("restarted %q, want %q", p.restarted, c.restarted)
			}
			for i := range min(len(p.restarted), len(c.restarted)) {
				if !strings.HasPrefix(p.restarted[i], c.restarted[i]) {
					t.Errorf("restarted[%d] %q, want it to start with %q", i, p.restarted[i], c.restarted[i])
				}
			}
			if (p.store != nil) != c.store || (p.gen != nil) != c.gen || p.recent != c.recent {
				t.Errorf("plan builds store %v, generation %v, recent %v; want %v, %v, %v", p.store != nil, p.gen != nil, p.recent, c.store, c.gen, c.recent)
			}
			if d.core.Load().store != store || len(changedKeys(d.cfg, cfg)) > 0 {
				t.Error("plan changed the running daemon")
			}
		})
	}
}

// TestPlanListener: a new listen address is bound by the plan, before
// anything changes, and a refused one refuses the reload.
func TestPlanListener(t *testing.T) {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	next := cfg
	d, err := New(cfg, Options{Log: zap.NewNop(), Web: Web{Ingest: true}, Load: func() (config.Config, error) { return next, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if d.listener, err = net.Listen("tcp", cfg.Listen); err != nil {
		t.Fatal(err)
	}
	defer d.listener.Close()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	next.Listen = busy.Addr().String()
	if _, err := d.plan(); err == nil || !strings.HasPrefix(err.Error(), "listen: ") {
		t.Errorf("plan onto a busy address: %v, want a listen error", err)
	}
	next.Listen = "localhost:0"
	p, err := d.plan()
	if err != nil {
		t.Fatalf("plan onto a free address: %v", err)
	}
	defer p.closeListener()
	if p.listener == nil || len(p.restarted) != 1 || !strings.HasPrefix(p.restarted[0], "the listener (listen changed): now on ") {
		t.Errorf("plan of a new address: listener %v, restarted %q", p.listener, p.restarted)
	}
	if d.listener.Addr() == p.listener.Addr() {
		t.Error("the plan moved the running listener")
	}
}

// TestSummary: the answer to POST /-/reload says what changed, what
// applied in place and what restarted, one line each.
func TestSummary(t *testing.T) {
	if got := (&reloadPlan{}).summary(); got != "configuration reloaded: nothing changed." {
		t.Errorf("summary of no change: %q", got)
	}
	p := &reloadPlan{changed: []string{"threshold", "window"}, applied: []string{"threshold"}, restarted: []string{"the window (window changed)", "the sources"}}
	want := "configuration reloaded: threshold, window changed.\n" +
		"applied from the next evaluation, the window and every counter kept: threshold.\n" +
		"restarted: the window (window changed).\nrestarted: the sources."
	if got := p.summary(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

// TestPlanHistory: a reload applies a new history.retention.size to the
// open store and says so; a new history.path is not applied (the store
// stays open where it is) and each reload says so until a restart.
func TestPlanHistory(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.History.Path = filepath.Join(dir, "a")
	next := cfg
	d, err := New(cfg, Options{Log: zap.NewNop(), Web: Web{Ingest: true}, Load: func() (config.Config, error) { return next, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.openHistory(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	st := d.hist.Load()
	defer st.Close()

	next.History.Retention.Size = 64 << 20
	next.History.Path = filepath.Join(dir, "b")
	p, err := d.plan()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.apply(p); err != nil {
		t.Fatal(err)
	}
	want := "configuration reloaded: history changed.\n" +
		"history.retention.size applied: the history is held to 64MiB from the writer's next retention pass, within 5m0s.\n" +
		`history.path ("` + next.History.Path + `") not applied: the history stays in "` + cfg.History.Path + `" until hotkeyd restarts.`
	if got := p.summary(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
	if got := st.RetentionSize(); got != 64<<20 {
		t.Errorf("the store's retention size is %d after the reload, want %d", got, 64<<20)
	}
	if d.hist.Load() != st || d.cfg.History.Path != cfg.History.Path || d.cfg.History.Retention.Size != 64<<20 {
		t.Errorf("after the reload: store %p (was %p), running history %+v", d.hist.Load(), st, d.cfg.History)
	}
	// The next reload of the same file says it again: the path is still
	// not the file's.
	p, err = d.plan()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.changed, []string{"history"}) || len(p.history) != 1 || !strings.HasPrefix(p.history[0], "history.path (") {
		t.Errorf("second reload: changed %q, history %q", p.changed, p.history)
	}
}

// TestPlanHistoryNone: a daemon that keeps no history says that a new
// history.path or size applies when it restarts.
func TestPlanHistoryNone(t *testing.T) {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.History.Path = ""
	next := cfg
	next.History = config.Default().History
	next.History.Retention.Size = 1 << 30
	d, err := New(cfg, Options{Log: zap.NewNop(), Web: Web{Ingest: true}, Load: func() (config.Config, error) { return next, nil }})
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.plan()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"history.retention.size (1GiB) not applied: this daemon keeps no history; it applies when hotkeyd restarts",
		`history.path ("data/") not applied: no history is kept until hotkeyd restarts`,
	}
	if !slices.Equal(p.history, want) {
		t.Errorf("history %q\nwant %q", p.history, want)
	}
}
