package history

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history/view"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// ErrBadQuery marks a query the store cannot answer as asked: the API
// answers it 400 (view.ErrBadQuery).
var ErrBadQuery = view.ErrBadQuery

// Cells answers a Query from the database and the cells still open.
func (s *Store) Cells(ctx context.Context, q Query) (Answer, error) {
	if err := s.Health(); err != nil && s.db == nil {
		return Answer{}, fmt.Errorf("history not recorded: %w", err)
	}
	return s.reader().cells(ctx, q, s.openCells)
}

// Incidents returns the incidents overlapping [from, to), of table when
// not empty, oldest first: those written and those still open.
func (s *Store) Incidents(ctx context.Context, from, to time.Time, table string) ([]Incident, error) {
	if err := s.Health(); err != nil && s.db == nil {
		return nil, fmt.Errorf("history not recorded: %w", err)
	}
	// The forms not written yet are taken before the database is read:
	// one the writer commits meanwhile is then in the rows, or here.
	s.mu.Lock()
	newest := make([]Incident, 0, len(s.open)+len(s.unwritten))
	for _, u := range s.unwritten { // handed to the writer, not written yet
		newest = append(newest, u.inc)
	}
	for _, oi := range s.open { // the newest figures of the open ones
		newest = append(newest, oi.inc)
		newest[len(newest)-1].Keys = slices.Clone(oi.inc.Keys)
	}
	s.mu.Unlock()
	incs, err := s.reader().incidents(ctx, from, to, table)
	if err != nil {
		return nil, err
	}
	byID := map[string]int{}
	for i, inc := range incs {
		byID[inc.ID] = i
	}
	for _, inc := range newest {
		if inc.End != nil && inc.End.Before(from) {
			continue
		}
		if i, ok := byID[inc.ID]; ok {
			incs[i] = inc
		} else if inc.Start.Before(to) && (table == "" || table == inc.Table) {
			byID[inc.ID] = len(incs)
			incs = append(incs, inc) // raised, not written yet
		}
	}
	sortIncidents(incs)
	return incs, nil
}

func (s *Store) reader() *Reader {
	return &Reader{db: s.rdb, res: s.opts.Resolutions, ceil: [2]float64{s.opts.ReadCeiling, s.opts.WriteCeiling}, now: s.opts.Now}
}

// openCells returns the open cells of a table at one step, by class.
func (s *Store) openCells(table, index string, step time.Duration) [traffic.NumClasses]*Cell {
	var out [traffic.NumClasses]*Cell
	s.mu.Lock()
	defer s.mu.Unlock()
	tc := s.tables[entry{table, index}]
	if tc == nil {
		return out
	}
	for l, r := range s.opts.Resolutions {
		if r.Step != step {
			continue
		}
		for c, a := range tc.open[l] {
			if a != nil && a.seconds > 0 {
				cell := a.cell()
				out[c] = &cell
			}
		}
	}
	return out
}

// Reader reads a history database: the daemon's API, and `hotkeyd
// report` on the file of a running daemon.
type Reader struct {
	db   *sql.DB
	res  []Resolution
	ceil [2]float64
	now  func() time.Time
}

// OpenReader opens the database under dir read-only.
func OpenReader(ctx context.Context, dir string) (*Reader, error) {
	path := dir + "/" + FileName
	db, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		return nil, fmt.Errorf("open history database %s: %w", path, err)
	}
	if err := checkReadable(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("history database %s: %w", path, err)
	}
	return &Reader{db: db, res: DefaultResolutions, ceil: [2]float64{3000, 1000}, now: time.Now}, nil
}

func checkReadable(ctx context.Context, db *sql.DB) error {
	var id int64
	if err := db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&id); err != nil {
		return err
	}
	if id != applicationID {
		return fmt.Errorf("%w: application_id %#x", errForeign, id)
	}
	return nil
}

// Close closes the database.
func (r *Reader) Close() error { return r.db.Close() }

// Cells answers a Query from the database.
func (r *Reader) Cells(ctx context.Context, q Query) (Answer, error) {
	return r.cells(ctx, q, nil)
}

// Incidents returns the incidents overlapping [from, to), of table when
// not empty, oldest first.
func (r *Reader) Incidents(ctx context.Context, from, to time.Time, table string) ([]Incident, error) {
	return r.incidents(ctx, from, to, table)
}

// pickStep returns the resolution a query is answered at: the one asked,
// rounded up to a kept one; else the finest that still keeps From and
// covers the range in at most MaxCells cells; else the coarsest.
func (r *Reader) pickStep(q Query) time.Duration {
	if q.Step > 0 {
		for _, res := range r.res {
			if res.Step >= q.Step {
				return res.Step
			}
		}
		return r.res[len(r.res)-1].Step
	}
	now := r.now()
	for _, res := range r.res {
		if !q.From.Before(now.Add(-res.Keep)) && q.To.Sub(q.From)/res.Step <= MaxCells {
			return res.Step
		}
	}
	return r.res[len(r.res)-1].Step
}

// checkQuery says what is wrong with a query.
func checkQuery(q Query) error {
	switch {
	case q.Table == "":
		return fmt.Errorf("%w: table is required", ErrBadQuery)
	case !q.From.Before(q.To):
		return fmt.Errorf("%w: from (%s) must be before to (%s)", ErrBadQuery, q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	case q.Class != "" && q.Class != "read" && q.Class != "write":
		return fmt.Errorf("%w: class %q is neither read nor write", ErrBadQuery, q.Class)
	case q.Step < 0:
		return fmt.Errorf("%w: step must be positive", ErrBadQuery)
	}
	return nil
}

// cells answers q from the database, with the open cells of open (nil:
// none) over the rows of the same start.
func (r *Reader) cells(ctx context.Context, q Query, open func(string, string, time.Duration) [traffic.NumClasses]*Cell) (Answer, error) {
	if err := checkQuery(q); err != nil {
		return Answer{}, err
	}
	step := r.pickStep(q)
	a := Answer{Table: q.Table, Index: q.Index, From: q.From.UTC(), To: q.To.UTC(), StepSeconds: int64(step / time.Second)}
	for _, res := range r.res {
		a.Resolutions = append(a.Resolutions, ResolutionDoc{StepSeconds: int64(res.Step / time.Second), KeptSeconds: int64(res.Keep / time.Second)})
	}
	from := floorTo(q.From.Unix(), step)
	rows, err := r.db.QueryContext(ctx, `SELECT class, start, seconds, units, events, throttled, distinct_keys, busiest, keys, shards
		FROM cells WHERE tbl=? AND idx=? AND step=? AND start>=? AND start<? ORDER BY start`,
		q.Table, q.Index, a.StepSeconds, from, q.To.Unix())
	if err != nil {
		return Answer{}, fmt.Errorf("read cells of %s: %w", q.Table, err)
	}
	defer rows.Close()
	byClass := map[string][]Cell{}
	for rows.Next() {
		rw := row{table: q.Table, index: q.Index, step: a.StepSeconds}
		if err := rows.Scan(&rw.class, &rw.start, &rw.seconds, &rw.units, &rw.events, &rw.throttled, &rw.distinct, &rw.busiest, &rw.keys, &rw.shards); err != nil {
			return Answer{}, fmt.Errorf("read cells of %s: %w", q.Table, err)
		}
		c, err := cellOf(rw)
		if err != nil {
			return Answer{}, fmt.Errorf("read cells of %s: %w", q.Table, err)
		}
		byClass[rw.class] = append(byClass[rw.class], c)
	}
	if err := rows.Err(); err != nil {
		return Answer{}, fmt.Errorf("read cells of %s: %w", q.Table, err)
	}
	var live [traffic.NumClasses]*Cell
	if open != nil {
		live = open(q.Table, q.Index, step)
	}
	for c := range traffic.Class(traffic.NumClasses) {
		name := c.String()
		if q.Class != "" && q.Class != name {
			continue
		}
		cells := withOpen(byClass[name], live[c], from, q.To.Unix())
		a.Series = append(a.Series, Series{Class: name, Ceiling: r.ceil[c], Cells: cells})
	}
	return a, nil
}

// withOpen puts an open cell in place of its row, or after the rows.
func withOpen(cells []Cell, open *Cell, from, to int64) []Cell {
	if cells == nil {
		cells = []Cell{}
	}
	if open == nil || open.Start.Unix() < from || open.Start.Unix() >= to {
		return cells
	}
	i, found := slices.BinarySearchFunc(cells, open.Start, func(c Cell, t time.Time) int { return c.Start.Compare(t) })
	if found {
		cells[i] = *open
		return cells
	}
	return slices.Insert(cells, i, *open)
}

// incidents reads the incidents overlapping [from, to).
func (r *Reader) incidents(ctx context.Context, from, to time.Time, table string) ([]Incident, error) {
	if !from.Before(to) {
		return nil, fmt.Errorf("%w: from (%s) must be before to (%s)", ErrBadQuery, from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	rows, err := r.db.QueryContext(ctx, `SELECT id, tbl, idx, cause, class, ident, keys, severity, start_ms, end_ms, last_seen_ms, peak, summary, fix, fix_kind
		FROM incidents WHERE start_ms < ? AND (end_ms IS NULL OR end_ms >= ?) AND (? = '' OR tbl = ?) ORDER BY start_ms, id`,
		to.UnixMilli(), from.UnixMilli(), table, table)
	if err != nil {
		return nil, fmt.Errorf("read incidents: %w", err)
	}
	defer rows.Close()
	out := []Incident{}
	for rows.Next() {
		oi, err := scanIncident(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, oi.inc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read incidents: %w", err)
	}
	return out, nil
}

// scanIncident reads one row of incidents.
func scanIncident(rows *sql.Rows) (*openIncident, error) {
	var inc Incident
	var ident, keys string
	var start, lastSeen int64
	var end sql.NullInt64
	if err := rows.Scan(&inc.ID, &inc.Table, &inc.Index, &inc.Cause, &inc.Class, &ident, &keys, &inc.Severity,
		&start, &end, &lastSeen, &inc.Peak, &inc.Summary, &inc.Fix, &inc.FixKind); err != nil {
		return nil, fmt.Errorf("read incidents: %w", err)
	}
	var id [3]string
	if err := errors.Join(json.Unmarshal([]byte(ident), &id), json.Unmarshal([]byte(keys), &inc.Keys)); err != nil {
		return nil, fmt.Errorf("read incident %s: %w", inc.ID, err)
	}
	inc.Start = time.UnixMilli(start).UTC()
	if end.Valid {
		e := time.UnixMilli(end.Int64).UTC()
		inc.End = &e
	}
	k := report.IncidentKey{Table: inc.Table, Index: inc.Index, Cause: id[0], Class: id[1], Key: id[2]}
	return &openIncident{key: k, inc: inc, lastSeen: time.UnixMilli(lastSeen).UTC()}, nil
}

// loadOrphans reads the incidents a previous run left open: each is
// continued when its diagnosis is flagged again within the grace, else
// closed at its last sighting.
func (s *Store) loadOrphans(ctx context.Context) error {
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, tbl, idx, cause, class, ident, keys, severity, start_ms, end_ms, last_seen_ms, peak, summary, fix, fix_kind
		FROM incidents WHERE end_ms IS NULL`)
	if err != nil {
		return fmt.Errorf("read open incidents: %w", err)
	}
	defer rows.Close()
	deadline := s.opened.Add(s.opts.Grace)
	for rows.Next() {
		oi, err := scanIncident(rows)
		if err != nil {
			return err
		}
		oi.deadline = deadline
		s.orphans[oi.key] = oi
	}
	return rows.Err()
}

// readOpenCell reads a cell a previous run wrote, to go on with it; nil
// when there is none or it cannot be read (a fresh cell then starts).
func (s *Store) readOpenCell(id entry, step, start int64, class string) *acc {
	rw := row{table: id.table, index: id.index, class: class, step: step, start: start}
	err := s.rdb.QueryRow(`SELECT seconds, units, events, throttled, distinct_keys, busiest, keys, shards
		FROM cells WHERE tbl=? AND idx=? AND step=? AND start=? AND class=?`, id.table, id.index, step, start, class).
		Scan(&rw.seconds, &rw.units, &rw.events, &rw.throttled, &rw.distinct, &rw.busiest, &rw.keys, &rw.shards)
	if err != nil {
		return nil
	}
	a, err := accOf(rw)
	if err != nil {
		return nil
	}
	return a
}

// sortIncidents orders incidents oldest first.
func sortIncidents(incs []Incident) {
	slices.SortFunc(incs, func(a, b Incident) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// Entry is a table, or one of its indexes, that has cells.
type Entry struct{ Table, Index string }

// Tables returns the tables and indexes with cells starting in [from,
// to), sorted.
func (r *Reader) Tables(ctx context.Context, from, to time.Time) ([]Entry, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT DISTINCT tbl, idx FROM cells WHERE start>=? AND start<? ORDER BY tbl, idx`, from.Unix(), to.Unix())
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		if err := rows.Scan(&e.Table, &e.Index); err != nil {
			return nil, fmt.Errorf("list tables: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
