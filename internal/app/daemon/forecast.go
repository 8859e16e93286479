package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	oklog "github.com/oklog/run"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/forecast"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history"
)

// The live forecasts (docs/how-it-decides.md, "Forecasts"): the tracker
// reads each judged key's hourly series from a forecast.Cache, which an
// actor of its own refreshes from the history store, away from the tick.

const (
	// forecastRefresh is how often the cached series are read again from
	// the history: a key's hourly series gains a point an hour.
	forecastRefresh = 10 * time.Minute
	// forecastLook is how often the refresher looks at the report for a
	// judged key whose series it has not read (the first report, a key
	// new to the top); forecastMinGap bounds how often such a key makes
	// it read them all again.
	forecastLook   = 5 * time.Second
	forecastMinGap = time.Minute
	// forecastSpan is how far back a series is read: the hourly cells'
	// keep (history.DefaultResolutions).
	forecastSpan = 28 * 24 * time.Hour
)

// cellReader is what the adapter reads: history.Store, history.Reader.
type cellReader interface {
	Cells(ctx context.Context, q history.Query) (history.Answer, error)
}

// historySeries is a forecast.Series over the history's hourly cells: a
// key's point in a cell is its busiest_second_units there, stamped with
// the cell's start. The store is asked for 1-hour cells and answers at
// its finest resolution at least that coarse; an answer at another step
// is an error, since the forecasts read points as hours.
//
// A cell where the key is not among the cell's top keys
// (history.TopKeys) gives no point, not a zero: the history does not
// know what the key did there, only that other keys took more units, and
// a zero would read as a collapse and draw a false trend. The fit
// compares like hours across days, so a missing hour is a gap it skips,
// where an invented zero would pull that hour's level down.
//
// Each (table, index, class, range) is read once per historySeries and
// kept for the other keys of the same class: make one per refresh.
type historySeries struct {
	src     cellReader
	mu      sync.Mutex
	answers map[history.Query]history.Answer
}

// newHistorySeries returns the series of src, reading each table's
// cells once.
func newHistorySeries(src cellReader) *historySeries {
	return &historySeries{src: src, answers: map[history.Query]history.Answer{}}
}

var _ forecast.Series = (*historySeries)(nil)

// BusiestSeconds returns the key's busiest second of each hourly cell
// that starts in [q.From, q.To) and holds it among its top keys.
func (h *historySeries) BusiestSeconds(ctx context.Context, q forecast.Query) ([]forecast.Point, error) {
	hq := history.Query{Table: q.Table, Index: q.Index, Class: q.Class, From: q.From, To: q.To, Step: time.Hour}
	a, err := h.cells(ctx, hq)
	if err != nil {
		return nil, err
	}
	if a.StepSeconds != int64(time.Hour/time.Second) {
		return nil, fmt.Errorf("the history answers %s/%s at %d s cells, not hourly ones", q.Table, q.Index, a.StepSeconds)
	}
	var pts []forecast.Point
	for _, s := range a.Series {
		if s.Class != q.Class {
			continue
		}
		for _, c := range s.Cells {
			for _, k := range c.Keys {
				if k.Key == q.Key {
					pts = append(pts, forecast.Point{Time: c.Start, Units: k.BusiestSecond})
					break
				}
			}
		}
	}
	return pts, nil
}

// cells answers hq from the answers read so far, or from the store.
func (h *historySeries) cells(ctx context.Context, hq history.Query) (history.Answer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.answers[hq]; ok {
		return a, nil
	}
	a, err := h.src.Cells(ctx, hq)
	if err != nil {
		return history.Answer{}, fmt.Errorf("read the history of %s/%s: %w", hq.Table, hq.Index, err)
	}
	h.answers[hq] = a
	return a, nil
}

// forecastQueries are the series the forecasts of rep read: each table's
// judged keys (its top_keys), from forecastSpan before the report's end
// to the start of its hour. The hour under way is left out: its cell is
// open, and its busiest second so far would read as a drop.
func forecastQueries(rep report.Report) []forecast.Query {
	to := rep.End.Truncate(time.Hour)
	n := 0
	for _, t := range rep.Tables {
		n += len(t.TopKeys)
	}
	// Made at its size: tens of thousands with a thousand tables, made
	// again whenever a table's report changes.
	qs := make([]forecast.Query, 0, n)
	for _, t := range rep.Tables {
		for _, k := range t.TopKeys {
			qs = append(qs, forecast.Query{Table: t.Table, Index: t.Index, Class: k.Class, Key: k.Key, From: to.Add(-forecastSpan), To: to})
		}
	}
	return qs
}

// addForecasts adds the refresher of the forecasts' series: once the
// first report names keys, then every forecastRefresh, from the history
// store; none when the daemon keeps no history.
func (d *Daemon) addForecasts(g *oklog.Group) {
	st := d.hist.Load()
	if st == nil {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	g.Add(func() error {
		d.refreshForecasts(ctx, st)
		return nil
	}, func(error) { stop() })
}

// refreshForecasts refreshes the cache from src until ctx is done: every
// forecastRefresh, and sooner (at most once per forecastMinGap) when the
// report judges a key whose series was not read.
func (d *Daemon) refreshForecasts(ctx context.Context, src cellReader) {
	look := time.NewTicker(forecastLook)
	defer look.Stop()
	log := d.log.Named("forecast")
	var asked map[seriesID]bool
	var last time.Time
	var memo queryMemo
	missing := false // a series of qs is not in asked
	for {
		var qs []forecast.Query
		if st := d.live.Load(); st != nil {
			var changed bool
			if qs, changed = memo.queries(st); changed {
				missing = !allAsked(asked, qs)
			}
		}
		if since := time.Since(last); len(qs) > 0 && (since >= forecastRefresh || since >= forecastMinGap && missing) {
			if err := d.forecasts.Refresh(ctx, newHistorySeries(src), qs); err != nil && ctx.Err() == nil {
				log.Warn("forecast series not all read from the history", zap.Error(err))
			}
			asked, last, missing = askedOf(qs), time.Now(), false
		}
		select {
		case <-ctx.Done():
			return
		case <-look.C:
		}
	}
}

// seriesID names a key's series, whatever its range.
type seriesID struct{ table, index, class, key string }

// askedOf is the set of the series qs ask for.
func askedOf(qs []forecast.Query) map[seriesID]bool {
	m := make(map[seriesID]bool, len(qs))
	for _, q := range qs {
		m[seriesID{q.Table, q.Index, q.Class, q.Key}] = true
	}
	return m
}

// allAsked says whether every series of qs is in asked.
func allAsked(asked map[seriesID]bool, qs []forecast.Query) bool {
	for _, q := range qs {
		if !asked[seriesID{q.Table, q.Index, q.Class, q.Key}] {
			return false
		}
	}
	return true
}

// queryMemo keeps the queries of the last report they were made of, so
// that an idle daemon, whose report is published anew every tick but
// does not change, does not make them again every look: they are made
// again when a table's revision (export.State.Revisions: it changes
// whenever the table's report does) or the report's hour changes, or
// when the revisions are unknown.
type queryMemo struct {
	hour   time.Time
	tables []tableRevision
	qs     []forecast.Query
}

// tableRevision is one table entry of a report and its revision.
type tableRevision struct {
	table, index string
	rev          uint64
}

// queries returns the forecasts' queries of st, and whether they were
// made anew.
func (m *queryMemo) queries(st *export.State) ([]forecast.Query, bool) {
	hour := st.Report.End.Truncate(time.Hour)
	if m.same(st, hour) {
		return m.qs, false
	}
	m.hour, m.qs, m.tables = hour, forecastQueries(st.Report), m.tables[:0]
	if st.Revisions != nil {
		for i, t := range st.Report.Tables {
			m.tables = append(m.tables, tableRevision{t.Table, t.Index, st.Revisions[i]})
		}
	}
	return m.qs, true
}

// same says whether st, at hour, has the tables and revisions the
// queries were made of, every revision known.
func (m *queryMemo) same(st *export.State, hour time.Time) bool {
	if st.Revisions == nil || len(st.Revisions) != len(st.Report.Tables) || len(m.tables) != len(st.Report.Tables) || !hour.Equal(m.hour) {
		return false
	}
	for i, t := range st.Report.Tables {
		was := m.tables[i]
		if rev := st.Revisions[i]; rev == 0 || rev != was.rev || t.Table != was.table || t.Index != was.index {
			return false
		}
	}
	return true
}
