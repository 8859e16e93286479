package analyze

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOutliers finds the hours left out of a histogram of events by hour.
func TestOutliers(t *testing.T) {
	const day = 24
	base := burstStart.Unix() / 3600
	for _, c := range []struct {
		name  string
		hours map[int64]uint64
		left  uint64
		keep  [2]int64 // hours kept, from base
	}{
		{"one hour", map[int64]uint64{base: 1000}, 0, [2]int64{}},
		{"one line years later", map[int64]uint64{base: 1000, base + 5*365*day: 1}, 1, [2]int64{0, 1}},
		{"one line years before", map[int64]uint64{base - 3*365*day: 1, base: 600, base + 1: 400}, 1, [2]int64{0, 2}},
		{"both ends", map[int64]uint64{base - 400*day: 2, base: 1000, base + 2*day: 3}, 5, [2]int64{0, 1}},
		{"a second session, as busy", map[int64]uint64{base: 500, base + 3*day: 500}, 0, [2]int64{}},
		{"more than a handful", map[int64]uint64{base: 1000, base + 30*day: 11}, 0, [2]int64{}},
		{"0.1 % of a big input", map[int64]uint64{base: 100000, base + 30*day: 100}, 100, [2]int64{0, 1}},
		{"a gap shorter than the rest spans", map[int64]uint64{base: 100, base + 2*day: 1000, base + 10*day: 1000}, 0, [2]int64{}},
		{"a gap of a day or less", map[int64]uint64{base: 1000, base + day: 1}, 0, [2]int64{}},
		{"a small sample of far periods", map[int64]uint64{base - 700*day: 2, base - 200*day: 3, base: 3}, 0, [2]int64{}},
		{"one line of twenty, years later", map[int64]uint64{base: 19, base + 5*365*day: 1}, 1, [2]int64{0, 1}},
	} {
		keep, left, _, _, ok := outliers(c.hours)
		if ok != (c.left > 0) || left != c.left {
			t.Errorf("%s: left out %d (%v), want %d", c.name, left, ok, c.left)
			continue
		}
		if ok && (keep.from != (base+c.keep[0])*3600 || keep.to != (base+c.keep[1])*3600) {
			t.Errorf("%s: kept %d..%d, want hours %v from %d", c.name, keep.from/3600-base, keep.to/3600-base, c.keep, base)
		}
	}
}

// TestAnalyzeBadTimes: times that make no sense are refused as bad_time,
// counted, named in the report, and stretch nothing: 1000 lines of one
// minute with a year-9999 line, a year-0001 one, one of 2015 and one five
// days later give the minute's rates.
func TestAnalyzeBadTimes(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 1000 {
		at := burstStart.Add(time.Duration(i) * 60 * time.Millisecond)
		fmt.Fprintf(&b, `{"ts":%q,"table":"orders","pk":"K%d","op":"PutItem","units":1}`+"\n", at.Format(time.RFC3339Nano), i%10)
		switch i {
		case 100:
			b.WriteString(`{"ts":"9999-12-31T23:59:59Z","table":"orders","pk":"LATE","op":"PutItem","units":1}` + "\n")
		case 200:
			b.WriteString(`{"ts":"0001-01-01T00:00:00Z","table":"orders","pk":"EARLY","op":"PutItem","units":1}` + "\n")
		case 300:
			b.WriteString(`{"ts":"2015-06-01T12:00:00Z","table":"orders","pk":"OLD","op":"PutItem","units":1}` + "\n")
		case 400:
			fmt.Fprintf(&b, `{"ts":%q,"table":"orders","pk":"AFTER","op":"PutItem","units":1}`+"\n", burstStart.Add(5*24*time.Hour).Format(time.RFC3339))
		}
	}
	path := filepath.Join(dir, "access.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		rep, _ := analyzeJSON(t, workers, "", path)
		bt := rep.BadTime
		if bt == nil || bt.Events != 4 || bt.Refused != 2 || bt.Outliers != 2 || rep.Rejected != 4 {
			t.Fatalf("%d workers: bad_time %+v, rejected %d; want 4: 2 refused (before 2012, in the future), 2 outliers", workers, bt, rep.Rejected)
		}
		if !bt.OutliersFrom.Equal(time.Date(2015, 6, 1, 12, 0, 0, 0, time.UTC)) || !bt.OutliersTo.Equal(time.Date(2026, 11, 25, 9, 59, 59, 0, time.UTC)) {
			t.Errorf("outliers from %v to %v, want their hours", bt.OutliersFrom, bt.OutliersTo)
		}
		if !rep.Start.Equal(burstStart) || rep.End.Sub(rep.Start) > time.Minute || rep.Events != 1000 {
			t.Errorf("window %v .. %v of %d events, want the minute from %v and 1000 events", rep.Start, rep.End, rep.Events, burstStart)
		}
		for _, k := range rep.Tables[0].TopKeys {
			if !strings.HasPrefix(k.Key, "K") {
				t.Errorf("key %s of a refused time counted", k.Key)
			}
		}
		if w := rep.Tables[0].Classes[1]; w.UnitsPerSecond < 16 {
			t.Errorf("write rate %v, want about 1000 units over 60 s", w.UnitsPerSecond)
		}
	}
	// The text report says it in a line.
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), Config{Files: []string{path}, Pipeline: defaultPipeline(), Stdout: &out, Stderr: &errOut}); err != nil {
		t.Fatal(err)
	}
	want := "bad_time: 4 events refused for their time: 2 unreadable, before 2012 or over a day after the clock; 2 far from the rest of the input (2015-06-01T12:00:00Z to 2026-11-25T09:59:59Z), left out of the window"
	if !strings.Contains(out.String(), want+"\n") || !strings.Contains(out.String(), "(1m0s);") {
		t.Errorf("text report lacks %q or the minute's span:\n%s", want, out.String())
	}
	if !strings.Contains(errOut.String(), "skipped (bad_time): time 9999-12-31T23:59:59Z is more than 24h0m0s after the clock") {
		t.Errorf("stderr does not name the refused line:\n%s", errOut.String())
	}

	// An input whose every event is refused has nothing usable.
	only := filepath.Join(dir, "only.jsonl")
	if err := os.WriteFile(only, []byte(`{"ts":"9999-12-31T23:59:59Z","table":"orders","pk":"LATE","op":"PutItem"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	err := Run(context.Background(), Config{Files: []string{only}, Pipeline: defaultPipeline(), Stdout: &out, Stderr: &errOut})
	if !errors.Is(err, ErrNothingUsable) || !strings.Contains(errOut.String(), "skipped: bad_time 1") {
		t.Errorf("every event refused: %v, stderr:\n%s", err, errOut.String())
	}
}
