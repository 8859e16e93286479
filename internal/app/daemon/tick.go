package daemon

import (
	"context"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/judge"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// tickEvery is how often the detector's tick looks for something to judge:
// a table's second that closed, a window that moved. A look that finds
// nothing costs the same however many tables there are
// (judge.Evaluator.Moved); the tick evaluates once in each second of the
// clock and whenever a look finds something, and an evaluation copies out
// and judges only the tables that changed. So a verdict follows its
// table's second within a tenth of a second, and an idle daemon does
// next to nothing.
const tickEvery = 100 * time.Millisecond

// core is what the detector's tick works with: the store, the tracker
// with its hysteresis, the live page's last seconds, and the evaluator
// over them (this process's window, or every replica's). A reload replaces
// it whole, sharing what it keeps.
type core struct {
	store   *sketch.Store
	tracker *detect.Tracker
	recent  *export.Recent
	judge   judge.Evaluator
	// sources are the running sources, whose notes the report carries.
	sources []traffic.Source
	// secs are the last seconds of the previous evaluation, whose array
	// the next one writes over (read by the page's and the history's
	// Record, which keep none of it).
	secs []report.TableSecond
}

// newCore returns the core over store and tracker, with new last seconds for the live page,
// judging with g's replicas when it has a lease table (made here, as they
// need the store).
func (d *Daemon) newCore(cfg config.Config, store *sketch.Store, tracker *detect.Tracker, g *generation) (*core, error) {
	c := &core{store: store, tracker: tracker, judge: judge.Alone(store, tracker), sources: g.sources,
		recent: export.NewRecent(export.RecentConfig{Window: cfg.Window, Top: cfg.Detector.Top})}
	var err error
	if g.replicas, err = newReplicas(g.sources, store, tracker, store.Config().Tracked, d.log); err != nil {
		return nil, err
	}
	if g.replicas != nil {
		c.judge = g.replicas
	}
	return c, nil
}

// tick looks every tickEvery, on the clock's tenths of a second, until
// ctx is done, and evaluates once in each second of the clock and
// whenever the window moved.
func (d *Daemon) tick(ctx context.Context, ann *export.Announcer) {
	t := time.NewTimer(nextLook())
	defer t.Stop()
	var last int64 // the clock's second of the last evaluation
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			t.Reset(nextLook())
			c := d.core.Load() // a reload may replace it
			if now.Unix() == last && !c.judge.Moved() {
				continue
			}
			last = now.Unix()
			d.evaluate(c, ann)
		}
	}
}

// nextLook is the time to the next look: the looks fall on the clock's
// tenths of a second, so that the first look of a second comes as it
// begins: a second that closes on the clock is judged at once.
func nextLook() time.Duration {
	now := time.Now()
	return now.Truncate(tickEvery).Add(tickEvery).Sub(now)
}

// evaluate judges what changed with c's hysteresis, records the second
// for the page, publishes the report with what the sources say of their
// input, and logs what became hot or cooled.
func (d *Daemon) evaluate(c *core, ann *export.Announcer) {
	j := c.judge.Evaluate()
	c.secs = detect.LastSecondsInto(c.secs, j.Snapshot, c.recent.Keys())
	secs := c.secs
	c.recent.Record(secs)
	if st := d.hist.Load(); st != nil {
		st.Record(history.Evaluation{Snapshot: j.Snapshot, Seconds: secs, Earlier: detect.EarlierSeconds(j.Snapshot, c.recent.Keys()),
			Flags: c.tracker.Flagged()})
	}
	j.Report.Rejected = d.reporter.Rejected()
	j.Report.Sources = export.SourcesReport(d.progress.States())
	j.Report.Notes = sourceNotes(c.sources)
	d.live.Publish(j.Report, j.Revisions)
	ann.Announce(j.Changes)
}

// sourceNotes gathers what the sources say a report must know of how
// their input was counted (traffic.Noter).
func sourceNotes(sources []traffic.Source) []string {
	var notes []string
	for _, src := range sources {
		if n, ok := src.(traffic.Noter); ok {
			notes = append(notes, n.Notes()...)
		}
	}
	return notes
}
