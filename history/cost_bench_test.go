package history

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// busyTables is the cost budget's load: 300 tables with traffic in both
// classes every second.
const busyTables = 300

// busyEvaluation is one evaluation of n busy tables at second at: each
// class with 20 keys (the tick's ChartKeys at the default top), a third
// of them changing every minute, and 4 stream shards.
func busyEvaluation(n int, at time.Time) Evaluation {
	ev := Evaluation{Snapshot: sketch.Snapshot{Tables: make([]sketch.TableSnapshot, n)}, Seconds: make([]report.TableSecond, n)}
	minute := at.Unix() / 60
	for i := range n {
		name := fmt.Sprintf("table-%03d", i)
		ts := sketch.TableSnapshot{Table: name, Start: at.Add(-59 * time.Second), End: at.Add(time.Second), LastSecond: at, DistinctKeys: 5000}
		sec := report.TableSecond{Table: name, At: at, Classes: make([]report.ClassSecond, traffic.NumClasses)}
		for c := range traffic.Class(traffic.NumClasses) {
			ts.Classes[c] = sketch.ClassStats{Events: 60000, Units: 90000}
			keys := make([]report.KeySecond, 20)
			for k := range keys {
				id := k
				if k%3 == 0 {
					id = int(minute%1000)*100 + k // churn
				}
				keys[k] = report.KeySecond{Key: fmt.Sprintf("TENANT#%08d#%s", id, c), Units: float64(100 - k)}
			}
			sec.Classes[c] = report.ClassSecond{Class: c.String(), Units: 1500, Keys: keys}
		}
		for s := range 4 {
			ts.Shards = append(ts.Shards, sketch.ShardStat{Shard: fmt.Sprintf("shardId-00000001700000000000-%08d", s), Records: uint64(1000 * (s + 1))})
		}
		ev.Snapshot.Tables[i], ev.Seconds[i] = ts, sec
	}
	return ev
}

// BenchmarkRecord measures the cost of recording 300 busy tables, one
// evaluation a second, as shares of a core by the process's CPU time
// (getrusage, not the wall clock a loaded machine stretches): the tick's
// (Record), then the writer's (every batch it was handed: each minute's
// cells of every resolution, in one transaction).
func BenchmarkRecord(b *testing.B) {
	dir := b.TempDir()
	c := newClock(t0)
	s, err := Open(context.Background(), Options{Dir: dir, Now: c.now})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	evs := make([]Evaluation, 120)
	for i := range evs {
		evs[i] = busyEvaluation(busyTables, t0.Add(time.Duration(i)*time.Second))
	}
	var batches []batch
	b.ResetTimer()
	tick := cpuTime(b)
	for i := 0; i < b.N; i++ {
		ev := evs[i%len(evs)]
		at := t0.Add(time.Duration(i) * time.Second)
		for j := range ev.Seconds {
			ev.Seconds[j].At, ev.Snapshot.Tables[j].LastSecond = at, at
		}
		c.set(at.Add(time.Second))
		s.Record(ev)
		for len(s.queue) > 0 {
			batches = append(batches, <-s.queue)
		}
	}
	tick = cpuTime(b) - tick
	writer := cpuTime(b)
	for _, q := range batches {
		s.apply(q)
	}
	writer = cpuTime(b) - writer
	b.StopTimer()
	if err := s.Health(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(tick)/float64(b.N)/1e9*100, "%core_tick")
	b.ReportMetric(float64(writer)/float64(b.N)/1e9*100, "%core_writer")
}

// cpuTime returns the CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkMemory measures the heap the open cells of 300 busy tables
// hold after an hour and a minute of recording.
func BenchmarkMemory(b *testing.B) {
	for range b.N {
		c := newClock(t0)
		s, err := Open(context.Background(), Options{Dir: b.TempDir(), Now: c.now})
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range 3660 {
			at := t0.Add(time.Duration(i) * time.Second)
			c.set(at.Add(time.Second))
			if i%10 == 0 || i > 3590 { // every tenth second: the keys' churn is per minute
				s.Record(busyEvaluation(busyTables, at))
			}
			for len(s.queue) > 0 {
				<-s.queue // the writer's work is not this benchmark's
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB_heap")
		s.Close()
	}
}

// disk28DaysDir keeps BenchmarkDisk28Days's database in a directory of
// its own, for a daemon's restart to be measured on it
// (docs/benchmarks.md#history); empty: a temporary directory.
// Its 28 days then end at the last hour of the wall clock, so that a
// daemon started on it reads them as recent.
var disk28DaysDir = flag.String("disk28days.dir", "", "keep BenchmarkDisk28Days's database in this directory (emptied first), its 28 days ending now")

// BenchmarkDisk28Days simulates 28 days of 300 busy tables at the
// defaults in accelerated event time: every cell the resolutions keep
// after 28 days (6 h of minutes, 4 days of 10 minutes, 28 days of hours,
// both classes) with churning keys, written as the writer writes them,
// then retention at day 28. It reports the bytes on disk, the time a
// restart takes to open the file ready to record, and a 24-hour heatmap
// of one table; and the first evaluation after the restart, which reads
// back the cells the last run left open.
func BenchmarkDisk28Days(b *testing.B) {
	for range b.N {
		dir := benchDir(b)
		end := t0.Add(28 * 24 * time.Hour)
		if *disk28DaysDir != "" {
			end = time.Now().UTC().Truncate(time.Hour)
		}
		c := newClock(end)
		s, err := Open(context.Background(), Options{Dir: dir, Now: c.now})
		if err != nil {
			b.Fatal(err)
		}
		for l, r := range DefaultResolutions {
			simulateResolution(b, s, l, r, end)
		}
		s.retain(context.Background())
		size, _ := s.size(context.Background())
		s.Close()
		st, err := os.Stat(filepath.Join(dir, FileName))
		if err != nil {
			b.Fatal(err)
		}
		t := time.Now()
		s, err = Open(context.Background(), Options{Dir: dir, Now: c.now})
		if err != nil || s.Health() != nil {
			b.Fatal(err, s.Health())
		}
		ready := time.Since(t)
		// The first evaluation after the restart looks up, for each table,
		// class and resolution, the open cell the last run left.
		t = time.Now()
		c.set(end.Add(time.Second))
		s.Record(busyEvaluation(busyTables, end))
		first := time.Since(t)
		t = time.Now()
		a, err := s.Cells(context.Background(), Query{Table: "table-150", From: end.Add(-24 * time.Hour), To: end})
		if err != nil || len(a.Series) != 2 || len(a.Series[1].Cells) < 140 {
			b.Fatalf("24-hour heatmap: %v, %d series", err, len(a.Series))
		}
		query := time.Since(t)
		s.Close()
		b.ReportMetric(float64(st.Size())/(1<<20), "MiB_file")
		b.ReportMetric(float64(size)/(1<<20), "MiB_in_use")
		b.ReportMetric(float64(ready.Milliseconds()), "ms_restart")
		b.ReportMetric(float64(first.Milliseconds()), "ms_first_record")
		b.ReportMetric(float64(query.Microseconds())/1000, "ms_24h_heatmap")
	}
}

// benchDir is the directory of BenchmarkDisk28Days's database: a
// temporary one, or -disk28days.dir emptied of an earlier database.
func benchDir(b *testing.B) string {
	dir := *disk28DaysDir
	if dir == "" {
		return b.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, ext := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, FileName+ext)); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
	}
	return dir
}

// simulateResolution writes the cells of one resolution kept at end:
// each table's and class's cell as folded from its seconds (20 keys, a
// third changing each minute, 4 shards), written in large transactions.
func simulateResolution(b *testing.B, s *Store, l int, r Resolution, end time.Time) {
	b.Helper()
	step := int64(r.Step / time.Second)
	first := floorTo(end.Add(-r.Keep).Unix(), r.Step) + step
	ev := busyEvaluation(busyTables, end)
	secs := make([][traffic.NumClasses]second, busyTables)
	for i := range ev.Seconds {
		secs[i] = secondsOf(&ev.Snapshot.Tables[i], &ev.Seconds[i])
	}
	var rows []row
	for start := first; start < end.Unix(); start += step {
		for i := range secs {
			for c := range secs[i] {
				sec := secs[i][c]
				sec.keys = append([]keyUnits(nil), sec.keys...)
				for k := 0; k < len(sec.keys); k += 3 { // the churning third
					sec.keys[k].key = fmt.Sprintf("TENANT#%08d#%d", (start/60)%100000*100+int64(k), c)
				}
				a := newAcc(start)
				sec.at = start
				a.fold(&sec)
				a.seconds = int(step)
				rows = append(rows, a.toRow(ev.Seconds[i].Table, "", traffic.Class(c).String(), step))
			}
		}
		if len(rows) >= 50000 {
			s.apply(batch{rows: rows})
			rows = rows[:0]
		}
	}
	s.apply(batch{rows: rows})
	if err := s.Health(); err != nil {
		b.Fatalf("resolution %d: %v", l, err)
	}
}

// BenchmarkRestartAfterDowntime restarts on a copy of the database
// BenchmarkDisk28Days kept (-disk28days.dir; skipped without it) after
// the daemon was down for a while, as Store.Run does: the writer's first
// retention pass drops what expired meanwhile while, at the same time,
// the first evaluation of 300 busy tables looks up the cells the last
// run left open and the API answers a heatmap of one table's last 24
// recorded hours. It reports how long each took.
func BenchmarkRestartAfterDowntime(b *testing.B) {
	if *disk28DaysDir == "" {
		b.Skip("needs -disk28days.dir, a database BenchmarkDisk28Days kept")
	}
	end := lastCell(b, filepath.Join(*disk28DaysDir, FileName))
	for _, down := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour} {
		b.Run(down.String(), func(b *testing.B) {
			for range b.N {
				dir := b.TempDir()
				copyFile(b, filepath.Join(*disk28DaysDir, FileName), filepath.Join(dir, FileName))
				at := end.Add(down)
				c := newClock(at)
				t := time.Now()
				s, err := Open(context.Background(), Options{Dir: dir, Now: c.now})
				if err != nil || s.Health() != nil {
					b.Fatal(err, s.Health())
				}
				open := time.Since(t)
				retained := make(chan time.Duration, 1)
				go func() {
					t := time.Now()
					s.retain(context.Background())
					retained <- time.Since(t)
				}()
				t = time.Now()
				c.set(at.Add(time.Second))
				s.Record(busyEvaluation(busyTables, at))
				first := time.Since(t)
				t = time.Now()
				a, err := s.Cells(context.Background(), Query{Table: "table-150", From: end.Add(-24 * time.Hour), To: end})
				if err != nil || len(a.Series) != 2 || len(a.Series[1].Cells) < 140 {
					b.Fatalf("the last recorded 24 hours' heatmap: %v, %d series", err, len(a.Series))
				}
				query := time.Since(t)
				retain := <-retained
				for len(s.queue) > 0 {
					<-s.queue
				}
				s.Close()
				b.ReportMetric(float64(open.Milliseconds()), "ms_open")
				b.ReportMetric(float64(retain.Milliseconds()), "ms_retention")
				b.ReportMetric(float64(first.Milliseconds()), "ms_first_record")
				b.ReportMetric(float64(query.Milliseconds()), "ms_24h_heatmap")
			}
		})
	}
}

// lastCell returns the end of the newest finest cell of the database at
// path: when its daemon stopped.
func lastCell(b *testing.B, path string) time.Time {
	db, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var last int64
	if err := db.QueryRow(`SELECT max(start+step) FROM cells WHERE step=(SELECT min(step) FROM cells)`).Scan(&last); err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	return time.Unix(last, 0).UTC()
}

// copyFile copies the file at from to to.
func copyFile(b *testing.B, from, to string) {
	b.Helper()
	in, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}
