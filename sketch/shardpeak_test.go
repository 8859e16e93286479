package sketch

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// shardRecords puts n records of shard, one write each, in second sec
// (seconds before now), in batches of at most 100 as a reader hands them.
func shardRecords(t *testing.T, s *Store, now time.Time, shard string, sec, n int) {
	t.Helper()
	at := now.Add(-time.Duration(sec) * time.Second)
	for n > 0 {
		k := min(n, 100)
		batch := make([]traffic.Event, k)
		for i := range batch {
			batch[i] = traffic.Event{Table: "t", PK: shard + "-key", Class: traffic.Write, Units: 1, Shard: shard, Time: at, Source: "s"}
		}
		put(t, s, batch...)
		n -= k
	}
}

// shardOf returns the shard's stat in ts, failing when it is missing.
func shardOf(t *testing.T, ts TableSnapshot, shard string) ShardStat {
	t.Helper()
	for _, sh := range ts.Shards {
		if sh.Shard == shard {
			return sh
		}
	}
	t.Fatalf("shard %s not in %+v", shard, ts.Shards)
	return ShardStat{}
}

// TestShardBusiestSecond checks that a shard's busiest second is its
// records in the busiest second of the window, whatever its mean, the
// newest second included, and that it leaves with its slot.
func TestShardBusiestSecond(t *testing.T) {
	now := t0.Add(time.Hour)
	s := newTestStore(t, Config{Window: time.Minute, SubWindows: 12}, func() time.Time { return now })
	s.SetWatermarks(fixedMarks{"s": now})
	// A: 5 records a second for 50 s with 300 in second 30 (handed over
	// in batches); B: 5 a second; C: 5 a second and 40 in its newest.
	for sec := 50; sec > 0; sec-- {
		n := 5
		if sec == 30 {
			n = 300
		}
		shardRecords(t, s, now, "A", sec, n)
		shardRecords(t, s, now, "B", sec, 5)
		n = 5
		if sec == 1 {
			n = 40
		}
		shardRecords(t, s, now, "C", sec, n)
	}
	ts := findTable(t, s.Snapshot(), "t", "")
	for _, want := range []ShardStat{
		// 300 is held within 1/32 below (peakCode): 296.
		{Shard: "A", Records: 49*5 + 300, PeakRecords: 296},
		{Shard: "B", Records: 50 * 5, PeakRecords: 5},
		// The newest second is counted exactly.
		{Shard: "C", Records: 49*5 + 40, PeakRecords: 40},
	} {
		if got := shardOf(t, ts, want.Shard); got != want {
			t.Errorf("shard %s: %+v, want %+v", want.Shard, got, want)
		}
	}

	// 40 s later, second 30 has left the window: A's busiest second is
	// one of its 5s again.
	now = now.Add(40 * time.Second)
	s.SetWatermarks(fixedMarks{"s": now})
	for sec := 40; sec > 0; sec-- {
		shardRecords(t, s, now, "A", sec, 5)
	}
	if got := shardOf(t, findTable(t, s.Snapshot(), "t", ""), "A"); got.PeakRecords != 5 {
		t.Errorf("shard A after its burst left the window: %+v, want a busiest second of 5", got)
	}
}

// TestPeakCode checks the byte a slot's busiest second is held in: exact
// up to 63, never above the count and within 1/32 below it up to
// maxPeakCount, saturating there, and ordered as the counts are.
func TestPeakCode(t *testing.T) {
	var prev uint32
	for v := uint32(0); v <= 1<<20; v++ {
		c := encodePeak(v)
		got := c.count()
		switch {
		case v < 64 && got != v:
			t.Fatalf("%d held as %d, want exact", v, got)
		case v <= maxPeakCount && (got > v || float64(v-got) > float64(v)/32):
			t.Fatalf("%d held as %d, want within 1/32 below", v, got)
		case v > maxPeakCount && got != maxPeakCount:
			t.Fatalf("%d held as %d, want %d (saturated)", v, got, maxPeakCount)
		case got < prev:
			t.Fatalf("%d held as %d, below %d's", v, got, v-1)
		}
		prev = got
	}
	if encodePeak(maxPeakCount) != 255 || encodePeak(math.MaxUint32).count() != maxPeakCount {
		t.Errorf("the largest code is not the largest count")
	}
}

// TestShardBusiestSecondReplicas checks how shards' busiest seconds add up
// when a shard changed hands: replicas' summaries and merged stores keep
// the busier second of the two; a summary without busiest seconds (an
// older replica's) is encoded as that replica encodes it and adds none.
func TestShardBusiestSecondReplicas(t *testing.T) {
	now := t0.Add(time.Hour)
	cfg := Config{Window: time.Minute, SubWindows: 12}
	clock := func() time.Time { return now }
	a, b := newTestStore(t, cfg, clock), newTestStore(t, cfg, clock)
	a.SetWatermarks(fixedMarks{"s": now})
	b.SetWatermarks(fixedMarks{"s": now})
	// a read shard A until second 26 (300 records in second 40), then b
	// took it over (80 in second 10); a reads B throughout, b reads C.
	for sec := 50; sec > 0; sec-- {
		n := 5
		switch sec {
		case 40:
			n = 300
		case 10:
			n = 80
		}
		if sec > 25 {
			shardRecords(t, a, now, "A", sec, n)
		} else {
			shardRecords(t, b, now, "A", sec, n)
		}
		shardRecords(t, a, now, "B", sec, 5)
		shardRecords(t, b, now, "C", sec, 7)
	}
	wire := func(s *Summary) *Summary {
		enc, _, _, err := EncodeSummary(s, 10, 64<<10)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := DecodeSummary(enc)
		if err != nil {
			t.Fatal(err)
		}
		return dec
	}
	wantA := ShardStat{Shard: "A", Records: 48*5 + 300 + 80, PeakRecords: 296} // 300 within 1/32

	c := Combine(Replica{"b", wire(b.Summary(true))}, []Replica{{"a", wire(a.Summary(true))}}, 10)
	ts := findTable(t, c.Snapshot, "t", "")
	for _, want := range []ShardStat{wantA, {Shard: "B", Records: 250, PeakRecords: 5}, {Shard: "C", Records: 350, PeakRecords: 7}} {
		if got := shardOf(t, ts, want.Shard); got != want {
			t.Errorf("combined shard %s: %+v, want %+v", want.Shard, got, want)
		}
	}

	m := newTestStore(t, cfg, clock)
	for _, s := range []*Store{a, b} {
		if err := m.Merge(s); err != nil {
			t.Fatal(err)
		}
	}
	if got := shardOf(t, findTable(t, m.Snapshot(), "t", ""), "A"); got != wantA {
		t.Errorf("merged shard A: %+v, want %+v", got, wantA)
	}

	// a as an older replica sends it: no busiest seconds, and not a byte
	// of them on the wire.
	old := a.Summary(true)
	for i := range old.Tables {
		for j := range old.Tables[i].Shards {
			old.Tables[i].Shards[j].PeakRecords = 0
		}
	}
	enc, _, _, err := EncodeSummary(old, 10, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(enc))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("PeakRecords")) {
		t.Errorf("a summary without busiest seconds carries the field: %s", raw)
	}
	dec, err := DecodeSummary(enc)
	if err != nil {
		t.Fatal(err)
	}
	c = Combine(Replica{"b", wire(b.Summary(true))}, []Replica{{"a", dec}}, 10)
	ts = findTable(t, c.Snapshot, "t", "")
	if got := shardOf(t, ts, "A"); got.PeakRecords != 80 || got.Records != wantA.Records {
		t.Errorf("shard A with an older replica: %+v, want %d records and b's busiest second, 80", got, wantA.Records)
	}
	if got := shardOf(t, ts, "B"); got.PeakRecords != 0 || got.Records != 250 {
		t.Errorf("shard B, read by an older replica: %+v, want 250 records and no busiest second", got)
	}
}
