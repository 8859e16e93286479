package traffic

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestCheckEvent(t *testing.T) {
	ok := func(e Event) Event {
		if e.Table == "" {
			e.Table = "orders"
		}
		return e
	}
	for _, c := range []struct {
		name   string
		e      Event
		reason string // "" for accepted
	}{
		{"plain read", ok(Event{Units: 1}), ""},
		{"names at both bounds", Event{Table: "abc", Index: strings.Repeat("x", 255), Units: 1}, ""},
		{"every allowed character", Event{Table: "Az09_.-", Units: 1}, ""},
		{"the largest read", ok(Event{Units: MaxBatchGetUnits}), ""},
		{"the largest write", ok(Event{Class: Write, Units: MaxBatchWriteUnits}), ""},
		{"throttled units are not checked", ok(Event{Units: math.Inf(1), Throttled: true}), ""},
		{"no table", Event{Units: 1}, ReasonMissingTable},
		{"short table", Event{Table: "ab", Units: 1}, ReasonBadTable},
		{"long table", Event{Table: strings.Repeat("x", 256), Units: 1}, ReasonBadTable},
		{"space", Event{Table: "my table", Units: 1}, ReasonBadTable},
		{"slash", Event{Table: "orders/GSI1", Units: 1}, ReasonBadTable},
		{"non-ASCII", Event{Table: "tablé", Units: 1}, ReasonBadTable},
		{"short index", ok(Event{Index: "ix", Units: 1}), ReasonBadTable},
		{"unknown class", ok(Event{Class: 7, Units: 1}), ReasonBadOp},
		{"NaN", ok(Event{Units: math.NaN()}), ReasonBadUnits},
		{"+Inf", ok(Event{Class: Write, Units: math.Inf(1)}), ReasonBadUnits},
		{"negative", ok(Event{Units: -0.5}), ReasonBadUnits},
		{"near the float limit", ok(Event{Class: Write, Units: 1.7e308}), ReasonBadUnits},
		{"more than any read", ok(Event{Units: MaxBatchGetUnits + 0.5}), ReasonBadUnits},
		{"more than any write", ok(Event{Class: Write, Units: MaxBatchWriteUnits + 1}), ReasonBadUnits},
		{"keys at both bounds", ok(Event{PK: strings.Repeat("k", MaxPKLen), SK: strings.Repeat("s", MaxSKLen), Units: 1}), ""},
		{"2 KiB string key", ok(Event{PK: strings.Repeat("k", 2048), SK: strings.Repeat("s", 1024), Units: 1}), ""},
		{"60 KB partition key", ok(Event{PK: strings.Repeat("k", 60_000), Units: 1}), ReasonKeyTooLong},
		{"partition key one byte over", ok(Event{PK: strings.Repeat("k", MaxPKLen+1), Units: 1}), ReasonKeyTooLong},
		{"sort key one byte over", ok(Event{PK: "k", SK: strings.Repeat("s", MaxSKLen+1), Units: 1}), ReasonKeyTooLong},
		{"throttled long key", ok(Event{PK: strings.Repeat("k", MaxPKLen+1), Throttled: true}), ReasonKeyTooLong},
	} {
		inv := CheckEvent(&c.e)
		switch {
		case c.reason == "" && inv != nil:
			t.Errorf("%s: refused: %v", c.name, inv)
		case c.reason != "" && (inv == nil || inv.Reason != c.reason):
			t.Errorf("%s: %v, want %s", c.name, inv, c.reason)
		}
		// The Sink's fast path agrees with CheckEvent.
		var nc nameCache
		if got := nc.check(&c.e); got != (c.reason == "") {
			t.Errorf("%s: fast check %v, CheckEvent %v", c.name, got, inv)
		}
	}
}

// TestUnitBounds checks the derivation of each call's bound from
// DynamoDB's documented limits.
func TestUnitBounds(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"GetItem: 400 KB at 4 KB a unit", MaxGetItemUnits, 100},
		{"Query: 1 MB page and a 400 KB item", MaxQueryUnits, 356},
		{"BatchGetItem: 16 MB, 100 items rounded up", MaxBatchGetUnits, 4196},
		{"TransactGetItems: (4 MB + 100 items) × 2", MaxTransactGetUnits, 2248},
		{"PutItem: 400 KB, 5 LSIs moved", MaxWriteItemUnits, 4400},
		{"BatchWriteItem: 25 such items", MaxBatchWriteUnits, 110000},
		{"TransactWriteItems: (4 MB + 100 items) × 11 × 2", MaxTransactWriteUnits, 92312},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	for name, op := range operations {
		if op.MaxUnits > MaxUnits(op.Class) {
			t.Errorf("%s: %v units above its class's bound %v", name, op.MaxUnits, MaxUnits(op.Class))
		}
	}
}

type rejections struct{ reasons []string }

func (r *rejections) Reject(source, reason string, err error) {
	r.reasons = append(r.reasons, source+":"+reason)
}
func (r *rejections) Error(string, string, error) {}

func TestChecked(t *testing.T) {
	var got []Event
	next := SinkFunc(func(_ context.Context, b []Event) error { got = append(got, b...); return nil })
	rep := &rejections{}
	s := Checked(next, rep)
	orders := "orders"
	good := Event{Table: orders, Units: 1, Source: "kinesis"}
	batch := []Event{good, good, {Table: "x", Units: 1, Source: "kinesis"}, good, {Table: orders, Units: math.Inf(1), Source: "http"}, good}
	if err := s.Put(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || strings.Join(rep.reasons, ",") != "kinesis:bad_table,http:bad_units" {
		t.Errorf("%d events passed, rejections %v; want 4 and kinesis:bad_table,http:bad_units", len(got), rep.reasons)
	}
	// A stream shard id longer than DynamoDB Streams gives is a broken
	// record; the longest it gives passes.
	got, rep.reasons = nil, nil
	longest := Event{Table: orders, Units: 1, Source: "dynamodb-streams", Shard: "shardId-" + strings.Repeat("0", MaxShardLen-8)}
	tooLong := Event{Table: orders, Units: 1, Source: "dynamodb-streams", Shard: strings.Repeat("s", 100_000)}
	if err := s.Put(context.Background(), []Event{longest, tooLong}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || strings.Join(rep.reasons, ",") != "dynamodb-streams:bad_record" {
		t.Errorf("%d events passed, rejections %v; want 1 and dynamodb-streams:bad_record", len(got), rep.reasons)
	}
	if inv := CheckEvent(&tooLong); inv == nil || !strings.Contains(inv.Detail, "shard id of 100000 bytes") {
		t.Errorf("CheckEvent of a 100 000-byte shard id = %v", inv)
	}
	// A batch of bad events only is not handed on.
	got = nil
	refuse := errors.New("not called")
	s = Checked(SinkFunc(func(context.Context, []Event) error { return refuse }), rep)
	if err := s.Put(context.Background(), []Event{{Table: "x"}}); err != nil {
		t.Errorf("Put of bad events only = %v, want nil without calling next", err)
	}
}

type upper struct{}

func (upper) Mask(s string) string { return "<" + strings.ToUpper(s) + ">" }

func TestQuote(t *testing.T) {
	for _, c := range []struct {
		in   string
		m    Masker
		want string
	}{
		{"USER#1", nil, `"USER#1"`},
		{"USER#1", upper{}, `"<USER#1>"`},
		{strings.Repeat("k", 70), nil, `"` + strings.Repeat("k", 64) + `"...`},
		{"a\xffb\n", nil, `"a` + "\uFFFD" + `b\n"`},
	} {
		if got := Quote(c.m, []byte(c.in)); got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	if MaskerOf(NopReporter{}) != nil {
		t.Error("NopReporter masks")
	}
}

func TestCheckedTimes(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	lim := TimeLimits{
		MaxFuture: 5 * time.Minute,
		MaxAge: func(source string) time.Duration {
			if source == "dynamodb-streams" {
				return 24 * time.Hour
			}
			return time.Hour
		},
		Now: func() time.Time { return now },
	}
	f := func(name string, e Event, want string) {
		t.Helper()
		var got []Event
		rep := &rejections{}
		s := CheckedTimes(SinkFunc(func(_ context.Context, b []Event) error { got = append(got, b...); return nil }), rep, lim)
		ok := Event{Table: "orders", Units: 1, Source: e.Source, Time: now}
		if err := s.Put(context.Background(), []Event{ok, e, ok}); err != nil {
			t.Fatal(err)
		}
		rejected := strings.Join(rep.reasons, ",")
		switch {
		case want == "" && (len(got) != 3 || rejected != ""):
			t.Errorf("%s: %d of 3 passed, rejected %q; want all", name, len(got), rejected)
		case want != "" && (len(got) != 2 || rejected != want):
			t.Errorf("%s: %d of 3 passed, rejected %q; want 2 and %s", name, len(got), rejected, want)
		}
		if inv := lim.Check(&e, now); (inv != nil) != (want != "") {
			t.Errorf("%s: Check = %v, want a refusal %v", name, inv, want != "")
		}
	}
	e := func(source string, d time.Duration) Event {
		return Event{Table: "orders", Units: 1, Source: source, Time: now.Add(d)}
	}
	f("now", e("jsonl", 0), "")
	f("no time (the Store's now)", Event{Table: "orders", Units: 1, Source: "http"}, "")
	f("4 min ahead", e("jsonl", 4*time.Minute), "")
	f("6 min ahead", e("jsonl", 6*time.Minute), "jsonl:bad_time")
	f("year 9999", Event{Table: "orders", Units: 1, Source: "http", Time: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}, "http:bad_time")
	f("year 1", Event{Table: "orders", Units: 1, Source: "http", Time: time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)}, "http:bad_time")
	f("59 min old file line", e("jsonl", -59*time.Minute), "")
	f("2 h old file line", e("jsonl", -2*time.Hour), "jsonl:bad_time")
	f("2 h old stream record", e("dynamodb-streams", -2*time.Hour), "")
	f("25 h old stream record", e("dynamodb-streams", -25*time.Hour), "dynamodb-streams:bad_time")

	// Without limits nothing is checked.
	var got int
	s := Checked(SinkFunc(func(_ context.Context, b []Event) error { got += len(b); return nil }), nil)
	if err := s.Put(context.Background(), []Event{e("jsonl", 100*time.Hour)}); err != nil || got != 1 {
		t.Errorf("Checked without time limits refused a time: %v, %d passed", err, got)
	}
}

// TestTimeRefusalSaysHowFar names how far a refused time is, in units a
// reader takes in, and never an overflowed duration (a Duration holds 292
// years; year 9999 is further than that).
func TestTimeRefusalSaysHowFar(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	lim := TimeLimits{MaxFuture: 5 * time.Minute, MaxAge: func(string) time.Duration { return 24 * time.Hour }, Now: func() time.Time { return now }}
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{now.Add(6 * time.Minute), "is 6m0s in the future"},
		{now.Add(50 * 24 * time.Hour), "is 1200h0m0s in the future"},
		{now.Add(400 * 24 * time.Hour), "is 400 days in the future"},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), "is 7973 years in the future"},
		{now.Add(-25 * time.Hour), "is 25h0m0s old"},
		{time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC), "is 2026 years old"},
	} {
		inv := lim.Check(&Event{Time: c.at}, now)
		if inv == nil || !strings.Contains(inv.Detail, c.want) || strings.Contains(inv.Detail, "2562047h") {
			t.Errorf("Check(%s) = %v, want it to say %q", c.at.Format(time.RFC3339), inv, c.want)
		}
	}
}

// TestCheckedKeepsRefusals tells an Outcome which events of a batch it
// refused and why, in order, up to KeepRefusals, and counts them all.
func TestCheckedKeepsRefusals(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	lim := TimeLimits{MaxFuture: 5 * time.Minute, Now: func() time.Time { return now }}
	s := CheckedTimes(SinkFunc(func(context.Context, []Event) error { return nil }), &rejections{}, lim)
	ok := Event{Table: "orders", Units: 1, Time: now}
	future := Event{Table: "orders", Units: 1, Time: now.Add(time.Hour)}
	long := Event{Table: "orders", Units: 1, Time: now, PK: strings.Repeat("k", MaxPKLen+1)}
	o := &Outcome{KeepRefusals: 2}
	if err := s.Put(WithOutcome(context.Background(), o), []Event{ok, future, ok, long, future}); err != nil {
		t.Fatal(err)
	}
	if got := o.Refused.Load(); got != 3 {
		t.Errorf("Refused = %d, want 3", got)
	}
	got := o.TakeRefusals()
	if len(got) != 2 || got[0].Index != 1 || got[0].Why.Reason != ReasonBadTime || got[1].Index != 3 || got[1].Why.Reason != ReasonKeyTooLong {
		t.Errorf("refusals %+v, want index 1 bad_time and index 3 key_too_long", got)
	}
	if again := o.TakeRefusals(); len(again) != 0 {
		t.Errorf("refusals taken twice: %+v", again)
	}
}
