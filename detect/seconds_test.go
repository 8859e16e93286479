package detect

import (
	"reflect"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// TestLastSecondsInto: written into a buffer, the last seconds are
// LastSeconds', whatever the buffer held before (a longer evaluation's
// seconds are let go past the tables); a snapshot of idle tables (Kept
// entries) reuses the buffer's array and allocates nothing.
func TestLastSecondsInto(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	full := sketch.TableSnapshot{Table: "orders", LastSecond: at}
	full.Classes[0] = sketch.ClassStats{LastSecondUnits: 7, Top: []sketch.KeyStat{{Key: "A", LastSecondUnits: 5}, {Key: "B", LastSecondUnits: 2}}}
	kept := func(table string) sketch.TableSnapshot {
		return sketch.TableSnapshot{Table: table, Index: "by-day", LastSecond: at, Kept: true, Version: 3}
	}
	long := sketch.Snapshot{Tables: []sketch.TableSnapshot{full, kept("a"), kept("b"), kept("c")}}
	short := sketch.Snapshot{Tables: []sketch.TableSnapshot{kept("a"), full}}
	idle := sketch.Snapshot{Tables: []sketch.TableSnapshot{kept("a"), kept("b")}}

	buf := LastSecondsInto(nil, long, 1)
	if want := LastSeconds(long, 1); !reflect.DeepEqual(buf, want) {
		t.Fatalf("into nil: %+v\nwant %+v", buf, want)
	}
	got := LastSecondsInto(buf, short, 1)
	if want := LastSeconds(short, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("into a longer buffer: %+v\nwant %+v", got, want)
	}
	if &got[0] != &buf[0] {
		t.Error("the buffer's array was not reused")
	}
	if rest := got[len(got):cap(got)]; !reflect.DeepEqual(rest, make([]report.TableSecond, len(rest))) {
		t.Errorf("entries past the tables still hold %+v", rest)
	}
	if n := testing.AllocsPerRun(20, func() { buf = LastSecondsInto(buf, idle, 1) }); n != 0 {
		t.Errorf("idle tables' seconds into a buffer: %v allocations, want 0", n)
	}
	if want := LastSeconds(idle, 1); !reflect.DeepEqual(buf, want) {
		t.Errorf("idle tables: %+v\nwant %+v", buf, want)
	}
}
