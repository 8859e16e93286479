package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// RetentionEvery is how often the writer measures the database against
// --history.retention.size and drops what is past its resolution's time.
const RetentionEvery = 5 * time.Minute

// Run writes what Record hands it until ctx is done, then what is still
// queued. It returns nil; a failed write is logged, counted, and said by
// Health until a write succeeds again: the daemon goes on without it.
func (s *Store) Run(ctx context.Context) error {
	if s.db == nil {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(RetentionEvery)
	defer t.Stop()
	s.retain(ctx)
	for {
		select {
		case b := <-s.queue:
			s.apply(b)
		case <-t.C:
			s.retain(ctx)
		case <-ctx.Done():
			for {
				select {
				case b := <-s.queue:
					s.apply(b)
				default:
					return nil
				}
			}
		}
	}
}

// Close writes the open cells and incidents as they are (a restart goes
// on with them) and closes the database. Call it once Record is no longer
// called and Run has returned.
func (s *Store) Close() error {
	if s.db == nil {
		return nil
	}
	s.mu.Lock()
	var b batch
	for id, tc := range s.tables {
		if tc.hasPending {
			s.fold(id, tc, &b)
			tc.hasPending = false
		}
	}
	s.flushDirty(&b)
	s.incidentsSeen(&b)
	s.closed = true
	s.mu.Unlock()
	for {
		select {
		case q := <-s.queue:
			s.apply(q)
			continue
		default:
		}
		break
	}
	s.apply(b)
	if s.rdb != s.db {
		s.rdb.Close()
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close history database: %w", err)
	}
	return nil
}

// apply writes one batch in one transaction.
func (s *Store) apply(b batch) {
	if len(b.rows) == 0 && len(b.incidents) == 0 {
		return
	}
	defer s.written(b)
	err := s.inTx(context.Background(), func(tx *sql.Tx) error {
		if err := putRows(tx, b.rows); err != nil {
			return err
		}
		return putIncidents(tx, b.incidents, b.meta)
	})
	if err != nil {
		s.m.errors.Inc()
		s.m.dropped.WithLabelValues("write_error").Add(float64(len(b.rows)))
		if s.Health() == nil {
			s.log.Error("history not written: the daemon goes on without it until a write succeeds", zap.String("path", s.path), zap.Error(err))
		}
		s.setHealth(fmt.Errorf("write %s: %w", s.path, err))
		return
	}
	s.setHealth(nil)
}

// inTx runs f in a transaction, committed when f returns nil.
func (s *Store) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := f(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

const upsertCell = `INSERT OR REPLACE INTO cells(tbl, idx, step, start, class, seconds, units, events, throttled, distinct_keys, busiest, keys, shards)
VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)`

// putRows writes cells, each replacing its earlier form.
func putRows(tx *sql.Tx, rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	st, err := tx.Prepare(upsertCell)
	if err != nil {
		return fmt.Errorf("prepare cell write: %w", err)
	}
	defer st.Close()
	for _, r := range rows {
		if _, err := st.Exec(r.table, r.index, r.step, r.start, r.class, r.seconds, r.units, int64(r.events), int64(r.throttled),
			int64(r.distinct), r.busiest, r.keys, r.shards); err != nil {
			return fmt.Errorf("write cell of %s at %d: %w", r.table, r.start, err)
		}
	}
	return nil
}

const upsertIncident = `INSERT OR REPLACE INTO incidents(id, tbl, idx, cause, class, ident, keys, severity, start_ms, end_ms, last_seen_ms, peak, summary, fix, fix_kind)
VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`

// putIncidents writes incidents, each replacing its earlier form.
func putIncidents(tx *sql.Tx, incs []Incident, meta []incMeta) error {
	for i, inc := range incs {
		keys, _ := json.Marshal(inc.Keys) // strings: cannot fail
		var end any
		if inc.End != nil {
			end = inc.End.UnixMilli()
		}
		k := meta[i].key
		ident, _ := json.Marshal([3]string{k.Cause, k.Class, k.Key})
		if _, err := tx.Exec(upsertIncident, inc.ID, inc.Table, inc.Index, inc.Cause, inc.Class, string(ident), string(keys), inc.Severity,
			inc.Start.UnixMilli(), end, meta[i].lastSeen.UnixMilli(), inc.Peak, inc.Summary, inc.Fix, inc.FixKind); err != nil {
			return fmt.Errorf("write incident %s: %w", inc.ID, err)
		}
	}
	return nil
}
