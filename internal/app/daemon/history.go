package daemon

import (
	"context"
	"errors"
	"time"

	oklog "github.com/oklog/run"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
)

// errNoHistory answers the history's paths when the daemon keeps none
// (or before Run has opened it).
var errNoHistory = errors.New("this daemon keeps no history (--history.path)")

// recorded is the history the HTTP server reads: the store once Run has
// opened it. New builds the server before Run opens anything (so that
// --config.check writes nothing).
type recorded struct{ d *Daemon }

// Cells answers from the store.
func (r recorded) Cells(ctx context.Context, q history.Query) (history.Answer, error) {
	if st := r.d.hist.Load(); st != nil {
		return st.Cells(ctx, q)
	}
	return history.Answer{}, errNoHistory
}

// Incidents answers from the store.
func (r recorded) Incidents(ctx context.Context, from, to time.Time, table string) ([]history.Incident, error) {
	if st := r.d.hist.Load(); st != nil {
		return st.Incidents(ctx, from, to, table)
	}
	return nil, errNoHistory
}

var _ export.HistoryReader = recorded{}

// readyNotes says in /-/ready's body when the daemon runs without history.
func (d *Daemon) readyNotes() []string {
	st := d.hist.Load()
	if st == nil {
		return nil
	}
	if err := st.Health(); err != nil {
		return []string{"history is not recorded: " + err.Error()}
	}
	return nil
}

// openHistory opens the history store of cfg under history.path: a
// directory it cannot write leaves the daemon running without history
// (history.Open says so in the log and hotkeyd_history_up). A demo plants
// its back-dated history first (plantDemoHistory), before any source
// starts.
func (d *Daemon) openHistory(ctx context.Context, cfg config.Config) error {
	if cfg.History.Path == "" {
		d.log.Info("no history kept: no history.path (--history.path)")
		return nil
	}
	det := cfg.Pipeline().Detect
	opts := history.Options{
		Dir: cfg.History.Path, RetentionSize: int64(cfg.History.Retention.Size),
		ReadCeiling: det.ReadLimit, WriteCeiling: det.WriteLimit, Grace: max(cfg.Window, 30*time.Second),
		Log: d.log.Named("history"), Metrics: d.histMetrics,
	}
	if d.opts.Demo {
		d.plantDemoHistory(ctx, opts)
	}
	st, err := history.Open(ctx, opts)
	if err != nil {
		return err
	}
	d.hist.Store(st)
	return nil
}

// addHistory adds the history's writer: it writes what the tick records
// until the group stops, then what is left (Run closes the store once
// the tick has stopped).
func (d *Daemon) addHistory(g *oklog.Group) {
	st := d.hist.Load()
	if st == nil {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	g.Add(func() error { return st.Run(ctx) }, func(error) { stop() })
}

// closeHistory writes the open cells and incidents as they are, for the
// next run to go on with: once the tick has stopped.
func (d *Daemon) closeHistory() {
	if st := d.hist.Load(); st != nil {
		if err := st.Close(); err != nil {
			d.log.Warn("history not closed cleanly", zap.Error(err))
		}
	}
}
