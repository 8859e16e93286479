package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// retain drops the cells past their resolution's time and the incidents
// past the coarsest's, then, while the database is over
// --history.retention.size, the oldest cells of the finest resolution
// that has any (the coarsest is kept longest: a finer cell's traffic is
// in the coarser cells too). What the size drops is logged and counted.
func (s *Store) retain(ctx context.Context) {
	now := s.opts.Now()
	if err := s.expire(ctx, now); err != nil {
		s.log.Warn("history retention", zap.Error(err))
	}
	for range 64 { // each round drops a quarter of a resolution's span
		size, err := s.size(ctx)
		if err != nil {
			s.log.Warn("history size", zap.Error(err))
			return
		}
		s.m.bytes.Set(float64(size))
		if size <= s.RetentionSize() {
			return
		}
		if err := s.shrink(ctx, size); err != nil {
			s.log.Warn("history retention by size", zap.Error(err))
			return
		}
	}
}

// measure sets the size metric.
func (s *Store) measure(ctx context.Context) {
	if size, err := s.size(ctx); err == nil {
		s.m.bytes.Set(float64(size))
	}
}

// expireChunk is how many cells one transaction of expire deletes: after
// a day down the first pass has a quarter of a million to drop, which in
// one transaction would grow the WAL by as many pages before a checkpoint
// can shrink it.
const expireChunk = 5000

// expire deletes what is past its time.
func (s *Store) expire(ctx context.Context, now time.Time) error {
	var errs []error
	for _, r := range s.opts.Resolutions {
		if err := s.expireCells(ctx, int64(r.Step/time.Second), now.Add(-r.Keep).Unix()); err != nil {
			errs = append(errs, fmt.Errorf("expire %s cells: %w", r.Step, err))
		}
	}
	keep := s.opts.Resolutions[len(s.opts.Resolutions)-1].Keep
	if _, err := s.db.ExecContext(ctx, `DELETE FROM incidents WHERE end_ms IS NOT NULL AND end_ms<?`, now.Add(-keep).UnixMilli()); err != nil {
		errs = append(errs, fmt.Errorf("expire incidents: %w", err))
	}
	return errors.Join(errs...)
}

// expireCells deletes the cells of step that start before until,
// expireChunk at a time.
func (s *Store) expireCells(ctx context.Context, step, until int64) error {
	for {
		res, err := s.db.ExecContext(ctx, `DELETE FROM cells WHERE (tbl, idx, step, start, class) IN
			(SELECT tbl, idx, step, start, class FROM cells WHERE step=? AND start<? LIMIT ?)`, step, until, expireChunk)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n < expireChunk {
			return err
		}
	}
}

// size returns the bytes of the database's pages in use: the file can be
// larger, its free pages are used again before it grows.
func (s *Store) size(ctx context.Context) (int64, error) {
	var pages, free, pageSize int64
	err := errors.Join(
		s.db.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages),
		s.db.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free),
		s.db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize))
	if err != nil {
		return 0, fmt.Errorf("measure %s: %w", s.path, err)
	}
	return (pages - free) * pageSize, nil
}

// shrink drops the oldest quarter of the finest resolution that has
// cells.
func (s *Store) shrink(ctx context.Context, size int64) error {
	for _, r := range s.opts.Resolutions {
		step := int64(r.Step / time.Second)
		var oldest, newest, n int64
		err := s.db.QueryRowContext(ctx, `SELECT coalesce(min(start),0), coalesce(max(start),0), count(*) FROM cells WHERE step=?`, step).
			Scan(&oldest, &newest, &n)
		if err != nil {
			return fmt.Errorf("measure %s cells: %w", r.Step, err)
		}
		if n == 0 {
			continue
		}
		until := oldest + max((newest-oldest)/4, step)
		res, err := s.db.ExecContext(ctx, `DELETE FROM cells WHERE step=? AND start<?`, step, until)
		if err != nil {
			return fmt.Errorf("drop %s cells: %w", r.Step, err)
		}
		dropped, _ := res.RowsAffected()
		s.m.dropped.WithLabelValues("size").Add(float64(dropped))
		s.log.Warn("history over its size: oldest cells dropped", zap.Int64("bytes", size), zap.Int64("retention_size", s.RetentionSize()),
			zap.Duration("step", r.Step), zap.Int64("cells", dropped), zap.Time("until", time.Unix(until, 0).UTC()))
		return nil
	}
	return errors.New("over its size with no cells left to drop")
}
