package sketch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// replicaTraffic feeds live stores second by second: the keys of each
// table live in shards, and each shard is read by one of the stores, as
// replicas sharing a lease table read them. whole reads everything.
func replicaTraffic(t *testing.T, stores []*Store, whole *Store, clock *time.Time) {
	t.Helper()
	tables := []string{"orders", "sessions", "events"}
	for sec := range 40 {
		*clock = t0.Add(time.Duration(sec) * time.Second)
		for ti, tb := range tables {
			var batches = make([][]traffic.Event, len(stores))
			var all []traffic.Event
			for i := range 600 {
				key := fmt.Sprintf("k%d", (i*7919+sec*31)%2500)
				if i%10 == 1 {
					key = fmt.Sprintf("warm%d", (i/10)%3+ti)
				}
				if tb == "orders" && i%4 == 0 {
					key = "HOT" // a quarter of orders' writes
				}
				shard := fmt.Sprintf("shardId-%03d", int(keyHash(key)%6))
				e := traffic.Event{Table: tb, PK: key, Class: traffic.Write, Units: 1 + float64(i%3), Shard: shard, Time: *clock}
				if i%7 == 0 {
					e.Class = traffic.Read
				}
				r := (int(keyHash(key)%6) + ti) % len(stores)
				batches[r] = append(batches[r], e)
				all = append(all, e)
			}
			for r, b := range batches {
				put(t, stores[r], b...)
			}
			put(t, whole, all...)
		}
	}
	*clock = clock.Add(time.Second)
}

// TestCombine checks that the summaries of replicas reading disjoint shards
// add up, through their encoding, to what one store reading everything
// sees: totals, top keys' units and shares, distinct keys within the
// HyperLogLog's error, peaks never below the truth, and that each key is
// held by the replica that read it.
func TestCombine(t *testing.T) {
	clock := t0
	now := func() time.Time { return clock }
	cfg := Config{Window: time.Minute, SubWindows: 12}
	stores := []*Store{newTestStore(t, cfg, now), newTestStore(t, cfg, now), newTestStore(t, cfg, now)}
	whole := newTestStore(t, cfg, now)
	replicaTraffic(t, stores, whole, &clock)

	names := []string{"replica-a", "replica-b", "replica-c"}
	var peers []Replica
	for i, s := range stores[1:] {
		b, keys, _, err := EncodeSummary(s.Summary(true), 64, 350_000)
		if err != nil || keys != 64 {
			t.Fatalf("encode: %v, %d keys", err, keys)
		}
		t.Logf("summary of %s: %d bytes", names[i+1], len(b))
		dec, err := DecodeSummary(b)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		peers = append(peers, Replica{Worker: names[i+1], Summary: dec})
	}
	self := Replica{Worker: names[0], Summary: stores[0].Summary(true)}
	got := Combine(self, peers, 100)
	// A Combiner called again on the same registers reuses its unions and
	// gives the same window.
	var cb Combiner
	cb.Combine(self, peers, 100)
	if again := cb.Combine(self, peers, 100); !reflect.DeepEqual(again.Snapshot, got.Snapshot) {
		t.Errorf("Combiner's second call differs from Combine")
	}
	want := whole.Snapshot()
	if len(got.Tables) != len(want.Tables) {
		t.Fatalf("%d tables combined, want %d", len(got.Tables), len(want.Tables))
	}
	for i := range want.Tables {
		g, w := &got.Tables[i], &want.Tables[i]
		if g.Table != w.Table || g.Events != w.Events {
			t.Errorf("table %d: %s with %d events, want %s with %d", i, g.Table, g.Events, w.Table, w.Events)
		}
		if d := math.Abs(float64(g.DistinctKeys)-float64(w.DistinctKeys)) / float64(w.DistinctKeys); d > 0.03 {
			t.Errorf("%s: %d distinct keys, one store counts %d", w.Table, g.DistinctKeys, w.DistinctKeys)
		}
		if len(g.Shards) != len(w.Shards) {
			t.Errorf("%s: shards %v, want %v", w.Table, g.Shards, w.Shards)
		}
		for c := range w.Classes {
			gc, wc := &g.Classes[c], &w.Classes[c]
			if gc.Units != wc.Units || gc.Events != wc.Events || gc.RecentUnits != wc.RecentUnits {
				t.Errorf("%s %s: units %v events %v recent %v, want %v %v %v", w.Table, traffic.Class(c), gc.Units, gc.Events, gc.RecentUnits, wc.Units, wc.Events, wc.RecentUnits)
			}
			if gc.PeakUnitsPerSecond != wc.PeakUnitsPerSecond {
				t.Errorf("%s %s: busiest sub-window %v/s, want %v/s", w.Table, traffic.Class(c), gc.PeakUnitsPerSecond, wc.PeakUnitsPerSecond)
			}
			if gc.PeakSecondUnits < wc.PeakSecondUnits || gc.PeakSecondUnits > wc.PeakSecondUnits*1.5 {
				t.Errorf("%s %s: busiest second %v, one store %v", w.Table, traffic.Class(c), gc.PeakSecondUnits, wc.PeakSecondUnits)
			}
			if gc.Top[0].Key != wc.Top[0].Key {
				t.Errorf("%s %s: heaviest key %s, want %s", w.Table, traffic.Class(c), gc.Top[0].Key, wc.Top[0].Key)
			}
			heavy := 0
			for _, wk := range wc.Top {
				ws := wk.Units / wc.Units
				if ws < 0.01 {
					break
				}
				heavy++
				found := false
				for _, gk := range gc.Top {
					if gk.Key == wk.Key {
						found = true
						if gs := gk.Units / gc.Units; math.Abs(gs-ws) > 0.001 {
							t.Errorf("%s %s: %s share %.4f, one store %.4f", w.Table, traffic.Class(c), wk.Key, gs, ws)
						}
					}
				}
				if !found {
					t.Errorf("%s %s: %s (share %.4f) not in the combined top", w.Table, traffic.Class(c), wk.Key, ws)
				}
			}
			if heavy < 3 {
				t.Errorf("%s %s: %d keys above 1%%, the workload has at least 3", w.Table, traffic.Class(c), heavy)
			}
		}
	}
	// One replica alone: Combine is its own snapshot, with the seconds
	// before the last that its summary carries (which Snapshot does not).
	if alone := Combine(Replica{Worker: "w", Summary: whole.Summary(true)}, nil, 100); !reflect.DeepEqual(withoutTails(t, alone.Snapshot), whole.Snapshot()) {
		t.Errorf("one replica combined differs from its snapshot:\n%+v\n%+v", alone.Snapshot.Tables[0].Classes, whole.Snapshot().Tables[0].Classes)
	}

	// Who carries what: HOT's shard of orders (table 0 maps shard s to
	// replica s % 3).
	wantHot := names[int(keyHash("HOT")%6)%3]
	if got := got.KeyReplica("orders", "", traffic.Write, "HOT"); got != wantHot {
		t.Errorf("HOT is held by %q, want %q", got, wantHot)
	}
	if got := got.TableReplica("orders", ""); got != names[0] {
		t.Errorf("orders' table-wide causes raised by %q, want %q (it reads shardId-000)", got, names[0])
	}
	if got := got.TableReplica("sessions", ""); got != names[1] {
		t.Errorf("sessions' table-wide causes raised by %q, want %q (it reads shardId-000)", got, names[1])
	}
	if got := got.ShardReplica("orders", "", "shardId-004"); got != names[1] {
		t.Errorf("orders' shardId-004 held by %q, want %q", got, names[1])
	}
}

// TestEncodeSummaryBounded shrinks a summary to the size asked for: fewer
// registers first, then keys, then an error.
func TestEncodeSummaryBounded(t *testing.T) {
	clock := t0
	now := func() time.Time { return clock }
	cfg := Config{Window: time.Minute, SubWindows: 12}
	s := newTestStore(t, cfg, now)
	replicaTraffic(t, []*Store{s}, newTestStore(t, cfg, now), &clock)
	sum := s.Summary(true)
	full, keys, regs, err := EncodeSummary(sum, 100, 1<<20)
	if err != nil || keys != 100 || !regs {
		t.Fatalf("unbounded: %v, %d keys, registers %v", err, keys, regs)
	}
	noRegs, keys, regs, err := EncodeSummary(sum, 100, len(full)-1)
	if err != nil || keys != 100 || regs {
		t.Fatalf("a byte less: %v, %d keys, registers %v; want every key and no registers", err, keys, regs)
	}
	small, keys, regs, err := EncodeSummary(sum, 100, len(noRegs)/3)
	if err != nil || keys >= 100 || regs || len(small) > len(noRegs)/3 {
		t.Fatalf("a third of that: %v, %d keys, registers %v, %d bytes of %d", err, keys, regs, len(small), len(noRegs))
	}
	dec, err := DecodeSummary(small)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(dec.Tables[0].Classes[traffic.Write].Top); n != keys {
		t.Errorf("%d keys decoded, %d encoded", n, keys)
	}
	if dec.Parts[0].Registers != nil {
		t.Errorf("registers decoded from a summary encoded without")
	}
	if _, _, _, err := EncodeSummary(sum, 100, 100); !errors.Is(err, ErrSummaryTooLarge) {
		t.Errorf("100 bytes: %v, want ErrSummaryTooLarge", err)
	}
}

// TestDecodeSummaryRejects: what is not a summary of this version is an
// error that says why, never a panic.
func TestDecodeSummaryRejects(t *testing.T) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		_ = w.Close()
		return b.Bytes()
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "not gzip"},
		{"plain JSON", []byte(`{"v":4}`), "not gzip"},
		{"truncated", gz(`{"v":4,"tables":[]}`)[:12], "decompress"},
		{"not JSON", gz(`hello`), "not its JSON form"},
		{"other version", gz(`{"v":1,"tables":[]}`), "format 1"},
		{"the version before the seconds' tails", gz(`{"v":3,"tables":[]}`), "format 3"},
		{"a tail longer than a key's ring", gz(`{"v":4,"tables":[{"t":"x","ls":100,"tl":9}]}`), "seconds before the last"},
		{"a tail without a last second", gz(`{"v":4,"tables":[{"t":"x","tl":2}]}`), "seconds before the last"},
		{"a class's tail over the table's", gz(`{"v":4,"tables":[{"t":"x","ls":100,"tl":1,"c":[{"tl":[1,2]},{}]}]}`), "seconds before the last"},
		{"a key's tail not counts", gz(`{"v":4,"tables":[{"t":"x","ls":100,"tl":2,"c":[{"k":[{"k":"a","tl":[1,-2]}]},{}]}]}`), "not counts"},
		{"no table name", gz(`{"v":4,"tables":[{"t":""}]}`), "no table name"},
		{"negative units", gz(`{"v":4,"tables":[{"t":"x","c":[{"u":-1},{}]}]}`), "not counts"},
		{"slots of two lengths", gz(`{"v":4,"tables":[{"t":"x","su":[[1,2],[]],"sp":[[1],[]]}]}`), "slot series"},
		{"key without a name", gz(`{"v":4,"tables":[{"t":"x","c":[{"k":[{"u":1}]},{}]}]}`), "no key"},
		{"wrong types", gz(`{"v":4,"tables":[{"t":7}]}`), "not its JSON form"},
		{"throttled calls by cause that do not add up", gz(`{"v":4,"tables":[{"t":"x","c":[{"th":{"e":5,"c":[1,1,0,0,0,0,0,0,0,0]}},{}]}]}`), "by cause"},
		{"a throttled key's bounds upside down", gz(`{"v":4,"tables":[{"t":"x","c":[{"th":{"e":5,"c":[5,0,0,0,0,0,0,0,0,0],"k":[{"k":"a","n":3,"m":2}]}},{}]}]}`), "bounds"},
		{"a throttled key over the calls", gz(`{"v":4,"tables":[{"t":"x","c":[{"th":{"e":5,"c":[5,0,0,0,0,0,0,0,0,0],"k":[{"k":"a","n":3,"m":6}]}},{}]}]}`), "bounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSummary(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	if _, err := DecodeSummary(gz(`{"v":4,"tables":[]}`)); err != nil {
		t.Errorf("an empty summary: %v", err)
	}
}

// FuzzDecodeSummary: no input makes DecodeSummary panic, and what it
// accepts combines without panicking.
func FuzzDecodeSummary(f *testing.F) {
	clock := t0
	s, _ := NewStore(Config{Window: time.Minute}, func() time.Time { return clock })
	_ = s.Put(context.Background(), []traffic.Event{{Table: "t", PK: "a", Class: traffic.Write, Units: 1, Shard: "s"}})
	clock = clock.Add(2 * time.Second)
	b, _, _, _ := EncodeSummary(s.Summary(true), 10, 1<<20)
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		dec, err := DecodeSummary(in)
		if err != nil {
			return
		}
		Combine(Replica{Worker: "me", Summary: s.Summary(true)}, []Replica{{Worker: "peer", Summary: dec}}, 10)
	})
}

// BenchmarkSummary measures a Summary against a Snapshot of the same
// store: 50 tables of 5000 keys each (past the exact distinct sets, so the
// registers are dense).
func BenchmarkSummary(b *testing.B) {
	clock := t0
	s, err := NewStore(Config{Window: time.Minute}, func() time.Time { return clock })
	if err != nil {
		b.Fatal(err)
	}
	for sec := range 12 {
		clock = t0.Add(time.Duration(sec) * time.Second)
		for tb := range 50 {
			evs := make([]traffic.Event, 0, 5000)
			for i := range 5000 {
				evs = append(evs, traffic.Event{Table: fmt.Sprintf("t%d", tb), PK: fmt.Sprintf("k%d", (i*31+sec)%5000), Class: traffic.Write, Units: 1})
			}
			if err := s.Put(context.Background(), evs); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("Snapshot", func(b *testing.B) {
		for b.Loop() {
			s.Snapshot()
		}
	})
	b.Run("Summary", func(b *testing.B) {
		for b.Loop() {
			s.Summary(false)
		}
	})
	b.Run("SummaryRegisters", func(b *testing.B) {
		for b.Loop() {
			s.Summary(true)
		}
	})
	sum := s.Summary(true)
	enc, _, _, err := EncodeSummary(sum, 64, 1<<30)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("encoded: %d bytes for %d tables", len(enc), len(sum.Tables))
	b.Run("Encode", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, err := EncodeSummary(sum, 64, 1<<30); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeSummary(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	peer, _ := DecodeSummary(enc)
	peers := []Replica{{Worker: "b", Summary: peer}, {Worker: "c", Summary: peer}}
	b.Run("Combine3", func(b *testing.B) {
		for b.Loop() {
			Combine(Replica{Worker: "a", Summary: sum}, peers, 100)
		}
	})
	// Every tick but the first of a round: the same registers.
	b.Run("Combine3Again", func(b *testing.B) {
		var cb Combiner
		cb.Combine(Replica{Worker: "a", Summary: sum}, peers, 100)
		for b.Loop() {
			cb.Combine(Replica{Worker: "a", Summary: sum}, peers, 100)
		}
	})
}

// withoutTails returns snap with the seconds before the last taken out,
// checking there are at most keyLateSeconds of them.
func withoutTails(t *testing.T, snap Snapshot) Snapshot {
	t.Helper()
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		if ts.Tail > keyLateSeconds {
			t.Errorf("%s: %d seconds before the last, at most %d", ts.Table, ts.Tail, keyLateSeconds)
		}
		ts.Tail = 0
		for c := range ts.Classes {
			ts.Classes[c].TailUnits = nil
			for j := range ts.Classes[c].Top {
				ts.Classes[c].Top[j].TailUnits = nil
			}
		}
	}
	return snap
}
