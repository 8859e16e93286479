package history

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestRetentionBySize: over --history.retention.size, the finest cells
// go first, the coarsest stay, and what is dropped is logged and counted.
func TestRetentionBySize(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	c := newClock(t0)
	const bound = 256 << 10
	s, err := Open(context.Background(), Options{Dir: t.TempDir(), Now: c.now, RetentionSize: bound, Log: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var rows []row
	for m := range 120 { // two hours of 20 tables' minutes, and their hours
		for tb := range 20 {
			a := newAcc(t0.Unix() + int64(m*60))
			a.fold(&second{at: a.start, units: 10, keys: []keyUnits{{key: fmt.Sprintf("TENANT#%04d-with-a-longish-id", tb), units: 10}}})
			rows = append(rows, a.toRow(fmt.Sprintf("table-%02d", tb), "", "write", 60))
			if m%60 == 0 {
				rows = append(rows, a.toRow(fmt.Sprintf("table-%02d", tb), "", "write", 3600))
			}
		}
	}
	s.apply(batch{rows: rows})
	c.set(t0.Add(2 * time.Hour))
	s.retain(context.Background())
	size, err := s.size(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if size > bound {
		t.Errorf("size %d after retention, over %d", size, bound)
	}
	if got := testutil.ToFloat64(s.m.dropped.WithLabelValues("size")); got == 0 {
		t.Error("nothing counted as dropped")
	}
	if logs.FilterMessage("history over its size: oldest cells dropped").Len() == 0 {
		t.Error("nothing logged")
	}
	var hours int
	if err := s.db.QueryRow(`SELECT count(*) FROM cells WHERE step=3600`).Scan(&hours); err != nil || hours != 40 {
		t.Errorf("hour cells left: %d (%v), want all 40", hours, err)
	}
}

// TestBadQueries: each mistake is named.
func TestBadQueries(t *testing.T) {
	s, _ := openStore(t, t.TempDir(), newClock(t0), nil)
	for _, tc := range []struct {
		q    Query
		want string
	}{
		{Query{From: t0, To: t0.Add(time.Hour)}, "bad query: table is required"},
		{Query{Table: "t", From: t0, To: t0}, "bad query: from (2026-12-01T10:00:00Z) must be before to (2026-12-01T10:00:00Z)"},
		{Query{Table: "t", Class: "scan", From: t0, To: t0.Add(time.Hour)}, `bad query: class "scan" is neither read nor write`},
	} {
		if _, err := s.Cells(context.Background(), tc.q); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: error %v, want %q", tc.q, err, tc.want)
		}
	}
}

// TestRetentionByTime: cells past their resolution's keep go, however
// many (expire deletes them a chunk at a time), and the others stay.
func TestRetentionByTime(t *testing.T) {
	c := newClock(t0)
	s, err := Open(context.Background(), Options{Dir: t.TempDir(), Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const tables, minutes = 50, 7*60 + 3 // 7 h of minutes: past the 6 h kept, 3 chunks and some
	var rows []row
	for m := range minutes {
		for tb := range tables {
			a := newAcc(t0.Unix() + int64(m*60))
			a.fold(&second{at: a.start, units: 10, keys: []keyUnits{{key: "K", units: 10}}})
			rows = append(rows, a.toRow(fmt.Sprintf("table-%02d", tb), "", "write", 60))
			if m%60 == 0 {
				rows = append(rows, a.toRow(fmt.Sprintf("table-%02d", tb), "", "write", 3600))
			}
		}
	}
	s.apply(batch{rows: rows})
	end := t0.Add(minutes * time.Minute)
	c.set(end)
	s.retain(context.Background())
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := s.db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM cells WHERE step=60 AND start<?`, end.Add(-6*time.Hour).Unix()); n != 0 {
		t.Errorf("%d minute cells older than 6 h left", n)
	}
	if n, want := count(`SELECT count(*) FROM cells WHERE step=60`), 6*60*tables; n != want {
		t.Errorf("%d minute cells left, want the last 6 h's %d", n, want)
	}
	if n := count(`SELECT count(*) FROM cells WHERE step=3600`); n != 8*tables {
		t.Errorf("%d hour cells left, want all %d", n, 8*tables)
	}
}

// TestReadsDoNotWaitForTheWriter: the API reads while the writer holds
// a transaction open (a long retention pass, a minute's commit).
func TestReadsDoNotWaitForTheWriter(t *testing.T) {
	c := newClock(t0)
	s, err := Open(context.Background(), Options{Dir: t.TempDir(), Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := newAcc(t0.Unix())
	a.fold(&second{at: a.start, units: 10, keys: []keyUnits{{key: "K", units: 10}}})
	s.apply(batch{rows: []row{a.toRow("orders", "", "write", 60)}})
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`DELETE FROM cells WHERE step=3600`); err != nil { // takes the write lock
		t.Fatal(err)
	}
	defer tx.Rollback()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ans, err := s.Cells(ctx, Query{Table: "orders", From: t0, To: t0.Add(time.Hour)})
	if err != nil {
		t.Fatalf("read while the writer holds a transaction: %v", err)
	}
	if len(ans.Series) != 2 || len(ans.Series[1].Cells) != 1 {
		t.Errorf("read %+v, want the one write cell", ans.Series)
	}
	if _, err := s.Incidents(ctx, t0, t0.Add(time.Hour), ""); err != nil {
		t.Errorf("incidents while the writer holds a transaction: %v", err)
	}
}
