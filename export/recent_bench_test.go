package export

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// historyLoad is how the tables of a Recent test or benchmark behave
// second after second: keys per class, how many of them have units in a
// second, and whether their ranking changes every second.
type historyLoad struct {
	name   string
	keys   int  // per class
	busy   int  // keys per class with units in a second
	churns bool // the ranking rotates by one key every second
}

var historyLoads = []historyLoad{
	{name: "idle", keys: 20},
	{name: "sparse", keys: 20, busy: 1},
	{name: "busy", keys: 20, busy: 20},
	{name: "churn", keys: 20, busy: 20, churns: true},
}

// seconds returns the load's tables' second at (sec), for the variant v of
// its ranking (the ranking rotates by v keys when the load churns). Its
// strings are made once by keyNames, as a snapshot's are the sketch's.
func (l historyLoad) seconds(tables int, sec int64, v int, keyNames []string) []report.TableSecond {
	out := make([]report.TableSecond, tables)
	for t := range out {
		ts := report.TableSecond{Table: fmt.Sprintf("table%04d", t), At: time.Unix(sec, 0), Classes: make([]report.ClassSecond, traffic.NumClasses)}
		for c := range traffic.Class(traffic.NumClasses) {
			cs := report.ClassSecond{Class: c.String(), Keys: make([]report.KeySecond, l.keys)}
			for j := range cs.Keys {
				k := j
				if l.churns {
					k = (j + v) % l.keys
				}
				var units float64
				if j < l.busy {
					units = float64(1 + (j+v+t)%7)
				}
				cs.Units += units
				cs.Keys[j] = report.KeySecond{Key: keyNames[k], Units: units}
			}
			ts.Classes[c] = cs
		}
		out[t] = ts
	}
	return out
}

func keyNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("USER#%06d", i)
	}
	return out
}

// BenchmarkRecentRecord records one second of 100 tables an op, at the
// defaults (a 60 s window, top 10: 20 keys a class), once the window is
// full.
func BenchmarkRecentRecord(b *testing.B) {
	const tables, variants = 100, 64
	names := keyNames(20)
	for _, l := range historyLoads {
		b.Run(l.name, func(b *testing.B) {
			secs := make([][]report.TableSecond, variants)
			for v := range secs {
				secs[v] = l.seconds(tables, 0, v, names)
			}
			h := NewRecent(RecentConfig{Window: time.Minute, Top: 10})
			at := func(i int) []report.TableSecond {
				s := secs[i%variants]
				for t := range s {
					s[t].At = time.Unix(int64(1_000_000+i), 0)
				}
				return s
			}
			for i := range 60 {
				h.Record(at(i))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				h.Record(at(60 + i))
			}
		})
	}
}

// TestRecentMemory: what Recent keeps of a table costs in proportion to
// its traffic: an idle table's seconds a few words each, a busy table's
// 8 bytes a key with units. Measured with the window full (60 s, top 10:
// 20 keys a class) over 200 tables.
func TestRecentMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("heap measurement: not under -short or -race")
	}
	const tables, variants = 200, 64
	names := keyNames(20)
	for _, c := range []struct {
		load  historyLoad
		twice bool // every second recorded twice (two ticks in a second)
		max   int  // bytes a table, the window full
	}{
		{historyLoads[0], false, 4 << 10},  // idle: 40 B a second and the key list
		{historyLoads[1], false, 8 << 10},  // sparse: + 2 × 16 B a second
		{historyLoads[2], false, 32 << 10}, // busy: + 40 × 8 B a second
		{historyLoads[2], true, 32 << 10},  // the same, each second written over
		{historyLoads[3], false, 96 << 10}, // churn: + a new key list a second
	} {
		name := c.load.name
		if c.twice {
			name += " twice"
		}
		t.Run(name, func(t *testing.T) {
			secs := make([][]report.TableSecond, variants)
			for v := range secs {
				secs[v] = c.load.seconds(tables, 0, v, names)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			h := NewRecent(RecentConfig{Window: time.Minute, Top: 10})
			for i := range 200 {
				s := secs[i%variants]
				for j := range s {
					s[j].At = time.Unix(int64(1_000_000+i), 0)
				}
				h.Record(s)
				if c.twice {
					h.Record(s)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			per := int(after.HeapAlloc-before.HeapAlloc) / tables
			t.Logf("%s: %d bytes a table", name, per)
			if per > c.max {
				t.Errorf("%s: %d bytes a table, want at most %d", name, per, c.max)
			}
			runtime.KeepAlive(h)
			runtime.KeepAlive(secs)
		})
	}
}
