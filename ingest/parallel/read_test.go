package parallel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"go.uber.org/goleak"

	"github.com/hotkeyd/hotkeyd/ingest/formats"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// logSpec describes a generated JSON-lines log: lines over seconds
// [from, from+seconds), busier in some seconds than others, so that the
// busiest second and its keys are what a peak is made of.
type logSpec struct {
	seed          uint64
	from, seconds int
	perSecond     int
	// jitter moves each line's time by up to this much either way: lines
	// a little out of order, as several writers make them.
	jitter time.Duration
	// bad puts a line that is rejected every bad lines (0: none).
	bad int
	// burstAt is the one second with burstTimes the traffic; when
	// burstTimes is 0, every seventh second has four times the traffic.
	burstAt, burstTimes int
}

// busy returns the lines of second sec and whether it is a burst.
func (s logSpec) busy(sec int) (int, bool) {
	switch {
	case s.burstTimes > 0 && sec == s.burstAt:
		return s.perSecond * s.burstTimes, true
	case s.burstTimes == 0 && sec%7 == 3:
		return s.perSecond * 4, true
	}
	return s.perSecond, false
}

// lines generates the log: two tables and an index, a few hundred keys per
// class (counted exactly by the sketches), hot keys that burst in some
// seconds.
func (s logSpec) lines() []string {
	rng := rand.New(rand.NewPCG(s.seed, 7))
	var out []string
	for sec := s.from; sec < s.from+s.seconds; sec++ {
		n, burst := s.busy(sec)
		for i := range n {
			ts := t0.Add(time.Duration(sec)*time.Second + time.Duration(i)*time.Second/time.Duration(n))
			if s.jitter > 0 {
				ts = ts.Add(time.Duration(rng.Int64N(int64(2*s.jitter))) - s.jitter)
			}
			table, index, op := "orders", "", "PutItem"
			switch rng.IntN(5) {
			case 0:
				table, op = "users", "GetItem"
			case 1:
				index, op = "status-index", "Query"
			case 2:
				op = "GetItem"
			}
			key := fmt.Sprintf("K%d", rng.IntN(250))
			if burst && rng.IntN(3) == 0 {
				key = fmt.Sprintf("HOT%d", sec%3)
			}
			ix := ""
			if index != "" {
				ix = `,"index":"` + index + `"`
			}
			out = append(out, fmt.Sprintf(`{"ts":%q,"table":%q%s,"pk":%q,"sk":"S%d","op":%q,"units":%g}`,
				ts.Format(time.RFC3339Nano), table, ix, key, i%10, op, 0.5*float64(1+rng.IntN(4))))
			if s.bad > 0 && len(out)%s.bad == 0 {
				out = append(out, `{"ts":"2026-11-22T10:00:00Z","table":"orders","op":"PutItem"}`, `not json`)
			}
		}
	}
	return out
}

// write writes content to dir/name, compressed with codec ("", "gzip",
// "zstd"), and returns its path.
func write(t *testing.T, dir, name, codec, content string) string {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case "":
		buf.WriteString(content)
	case "gzip":
		w := gzip.NewWriter(&buf)
		io.WriteString(w, content)
		w.Close()
	case "zstd":
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, content)
		w.Close()
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeLog writes a spec's lines, one per line.
func writeLog(t *testing.T, dir, name, codec string, s logSpec) string {
	t.Helper()
	return write(t, dir, name, codec, strings.Join(s.lines(), "\n")+"\n")
}

// cloudTrail is a CloudTrail file of calls to a table of two key
// attributes, after the CreateTable that says which is the partition key.
func cloudTrail(from, calls int) string {
	recs := []string{`{"eventSource":"dynamodb.amazonaws.com","eventName":"CreateTable","eventTime":"2026-11-22T10:00:00Z","requestParameters":{"tableName":"Music","keySchema":[{"attributeName":"Artist","keyType":"HASH"},{"attributeName":"SongTitle","keyType":"RANGE"}]}}`}
	for i := range calls {
		ts := t0.Add(time.Duration(from)*time.Second + time.Duration(i)*100*time.Millisecond)
		recs = append(recs, fmt.Sprintf(`{"eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","eventTime":%q,"requestParameters":{"tableName":"Music","key":{"SongTitle":"Song %d","Artist":"Artist %d"}}}`,
			ts.Format(time.RFC3339), i, i%5))
	}
	return `{"Records":[` + strings.Join(recs, ",") + `]}`
}

// recorder keeps every rejection and error reported.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Reject(source, reason string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, "reject "+reason+": "+err.Error())
}

func (r *recorder) Error(source, reason string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, "error "+reason+": "+err.Error())
}

func (r *recorder) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.msgs))
}

func newStore(t testing.TB) *sketch.Store {
	cfg := sketch.DefaultConfig()
	cfg.Window = 0
	s, err := sketch.NewStore(cfg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// outcome is what reading some inputs gave.
type outcome struct {
	snap   sketch.Snapshot
	notes  []string
	failed []string // "name: error", in the order told
	msgs   []string // rejections, sorted
	// inOrder is Outcome.InOrder (parallelRead).
	inOrder bool
}

// withoutKeySeconds returns snap without its keys' per-second counts,
// which only inputs read in order merge exactly (Outcome.InOrder).
func withoutKeySeconds(snap sketch.Snapshot) sketch.Snapshot {
	out := snap
	out.Tables = slices.Clone(snap.Tables)
	for i := range out.Tables {
		for c := range out.Tables[i].Classes {
			top := slices.Clone(out.Tables[i].Classes[c].Top)
			for k := range top {
				top[k].PeakUnitsPerSecond, top[k].RecentUnits, top[k].LastSecondUnits = 0, 0, 0
			}
			out.Tables[i].Classes[c].Top = top
		}
	}
	return out
}

// sequential reads the inputs one after the other into one store, as
// hotkeyd analyze did before it read on every core.
func sequential(t *testing.T, stdin string, names ...string) outcome {
	t.Helper()
	rec := &recorder{}
	set := formats.New(formats.Config{Reporter: rec})
	store := newStore(t)
	var out outcome
	for _, name := range names {
		if err := set.ReadFile(context.Background(), name, strings.NewReader(stdin), store, nil); err != nil {
			out.failed = append(out.failed, name+": "+err.Error())
		}
	}
	out.snap, out.notes, out.msgs = store.Snapshot(), set.Notes(), rec.sorted()
	return out
}

// parallelRead reads the inputs with Read, parts of at least minPart bytes.
func parallelRead(t *testing.T, workers int, minPart int64, stdin string, names ...string) outcome {
	t.Helper()
	rec := &recorder{}
	set := formats.New(formats.Config{Reporter: rec, Recycle: true})
	var out outcome
	store, o, err := Read(context.Background(), Config[*sketch.Store]{
		Formats: set,
		New:     func() (*sketch.Store, error) { return newStore(t), nil },
		Merge:   (*sketch.Store).Merge,
		Reorder: sketch.DefaultRecentSeconds,
		Workers: workers,
		MinPart: minPart,
		Stdin:   strings.NewReader(stdin),
		Failed:  func(name string, err error) { out.failed = append(out.failed, name+": "+err.Error()) },
	}, names...)
	if err != nil {
		t.Fatal(err)
	}
	out.snap, out.notes, out.msgs, out.inOrder = store.Snapshot(), set.Notes(), rec.sorted(), o.InOrder
	return out
}

// same fails the test where two outcomes differ.
func same(t *testing.T, got, want outcome) {
	t.Helper()
	if !got.inOrder {
		got.snap, want.snap = withoutKeySeconds(got.snap), withoutKeySeconds(want.snap)
	}
	if !reflect.DeepEqual(got.snap, want.snap) {
		for i := range max(len(got.snap.Tables), len(want.snap.Tables)) {
			if i >= len(got.snap.Tables) || i >= len(want.snap.Tables) {
				t.Errorf("%d table entries, want %d", len(got.snap.Tables), len(want.snap.Tables))
				break
			}
			g, w := got.snap.Tables[i], want.snap.Tables[i]
			for c := range g.Classes {
				gc, wc := g.Classes[c], w.Classes[c]
				for k := range max(len(gc.Top), len(wc.Top)) {
					if k >= len(gc.Top) || k >= len(wc.Top) {
						t.Errorf("%s/%s class %d: %d top keys, want %d", g.Table, g.Index, c, len(gc.Top), len(wc.Top))
						break
					}
					if !reflect.DeepEqual(gc.Top[k], wc.Top[k]) {
						t.Errorf("%s/%s class %d top %d:\n got %+v\nwant %+v", g.Table, g.Index, c, k+1, gc.Top[k], wc.Top[k])
						break
					}
				}
				gc.Top, wc.Top = nil, nil
				if !reflect.DeepEqual(gc, wc) {
					t.Errorf("%s/%s class %d:\n got %+v\nwant %+v", g.Table, g.Index, c, gc, wc)
				}
			}
			g.Classes, w.Classes = [2]sketch.ClassStats{}, [2]sketch.ClassStats{}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("table entry:\n got %+v\nwant %+v", g, w)
			}
		}
		if !got.snap.Start.Equal(want.snap.Start) || !got.snap.End.Equal(want.snap.End) {
			t.Errorf("span %v..%v, want %v..%v", got.snap.Start, got.snap.End, want.snap.Start, want.snap.End)
		}
	}
	if !slices.Equal(got.notes, want.notes) {
		t.Errorf("notes %q, want %q", got.notes, want.notes)
	}
	if !slices.Equal(got.failed, want.failed) {
		t.Errorf("failed inputs %q, want %q", got.failed, want.failed)
	}
	if !slices.Equal(got.msgs, want.msgs) {
		t.Errorf("%d rejections reported, want %d; first differences:\n%s", len(got.msgs), len(want.msgs), firstDiff(got.msgs, want.msgs))
	}
}

func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf(" got %q\nwant %q", g, w)
		}
	}
	return ""
}

// TestReadEqualsSequential reads inputs that are cut into parts, on one to
// eight workers, and checks that the snapshot, notes, failed inputs and
// rejected lines (with their line numbers) are those of one reader.
func TestReadEqualsSequential(t *testing.T) {
	dir := t.TempDir()
	plain := writeLog(t, dir, "access.log", "", logSpec{seed: 1, seconds: 60, perSecond: 150, bad: 997})
	jitter := writeLog(t, dir, "jitter.log", "", logSpec{seed: 2, seconds: 60, perSecond: 150, jitter: 1500 * time.Millisecond})
	before := writeLog(t, dir, "before.log", "", logSpec{seed: 3, from: -90, seconds: 60, perSecond: 100})
	after := writeLog(t, dir, "after.log", "", logSpec{seed: 4, from: 59, seconds: 30, perSecond: 100, bad: 101})
	gz := writeLog(t, dir, "after2.log.gz", "gzip", logSpec{seed: 5, from: 89, seconds: 20, perSecond: 100})
	zst := writeLog(t, dir, "after3.log.zst", "zstd", logSpec{seed: 6, from: 110, seconds: 20, perSecond: 100, bad: 53})
	sameGz := writeLog(t, dir, "same.log.gz", "gzip", logSpec{seed: 13, from: 59, seconds: 30, perSecond: 100, bad: 77})
	trail := write(t, dir, "trail.json", "", cloudTrail(200, 300))
	trailGz := write(t, dir, "trail2.json.gz", "gzip", cloudTrail(240, 300))
	// A file that starts in the last second of the one before, moves on
	// and comes back to that second.
	back := logSpec{seed: 10, from: 59, seconds: 10, perSecond: 100}.lines()
	back = append(back, logSpec{seed: 11, from: 59, seconds: 1, perSecond: 30}.lines()...)
	back = append(back, logSpec{seed: 12, from: 69, seconds: 5, perSecond: 100}.lines()...)
	returns := write(t, dir, "returns.log", "", strings.Join(back, "\n")+"\n")
	stdin := strings.Join(logSpec{seed: 8, from: 300, seconds: 10, perSecond: 50, bad: 40}.lines(), "\n")
	// A file whose last line has no newline, and a line longer than a
	// part: a cut lands inside it.
	long := `{"ts":"2026-11-22T10:05:00Z","table":"orders","pk":"LONG","op":"PutItem","pad":"` + strings.Repeat("x", 3000) + `"}`
	ragged := write(t, dir, "ragged.log", "", strings.Join(logSpec{seed: 9, from: 299, seconds: 5, perSecond: 40}.lines(), "\n")+"\n"+long+"\n"+`{"ts":"2026-11-22T10:05:01Z","table":"orders","pk":"LAST","op":"PutItem"}`)
	// order is whether the inputs run in time (Outcome.InOrder): "yes",
	// "no", or "" when it depends on where the parts are cut.
	cases := []struct {
		name  string
		stdin string
		names []string
		order string
	}{
		{"one file cut inside seconds", "", []string{plain}, "yes"},
		{"lines out of order at the cuts", "", []string{jitter}, ""},
		{"files in time order, plain and compressed", "", []string{plain, after, gz, zst}, "yes"},
		{"a file older than the one before", "", []string{plain, before, after}, "no"},
		{"a compressed file of the seconds of the one before", "", []string{after, sameGz, zst}, "no"},
		{"two files of the same seconds", "", []string{plain, jitter}, "no"},
		{"a file back in its first second", "", []string{plain, returns}, "no"},
		{"CloudTrail between logs", "", []string{trail, plain, trailGz, after}, "no"},
		{"stdin among files", stdin, []string{plain, "-", ragged}, "no"},
		{"stdin after files", stdin, []string{plain, after, "-"}, "yes"},
		{"a ragged file", "", []string{ragged}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := sequential(t, c.stdin, c.names...)
			if want.snap.Tables == nil {
				t.Fatal("nothing read")
			}
			for _, workers := range []int{1, 2, 3, 8} {
				t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
					got := parallelRead(t, workers, 4<<10, c.stdin, c.names...)
					if c.order != "" && got.inOrder != (c.order == "yes") {
						t.Errorf("in order: %v, want %s", got.inOrder, c.order)
					}
					same(t, got, want)
				})
			}
		})
	}
}

// TestReadPeaksAcrossCuts checks that the per-second peaks the test above
// compares are made across parts: the busiest second of a log is cut
// between two parts, so that neither part's own peak is the second's, and
// only adding the second's halves gives it.
func TestReadPeaksAcrossCuts(t *testing.T) {
	dir := t.TempDir()
	// 20 seconds of 100 lines, and 1000 in 10:00:10: the middle byte of
	// the file is in that second.
	path := writeLog(t, dir, "access.log", "", logSpec{seed: 1, seconds: 21, perSecond: 100, burstAt: 10, burstTimes: 10})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cuts, err := cutLines(bytes.NewReader(data), int64(len(data)), 2)
	if err != nil {
		t.Fatal(err)
	}
	cut := cuts[1]
	before := data[bytes.LastIndexByte(data[:cut-1], '\n')+1 : cut]
	after := data[cut : cut+int64(bytes.IndexByte(data[cut:], '\n'))]
	for _, l := range [][]byte{before, after} {
		if !bytes.Contains(l, []byte(`"ts":"2026-11-22T10:00:10.`)) {
			t.Fatalf("the cut is not inside 10:00:10: %s | %s", before, after)
		}
	}
	want := sequential(t, "", path)
	same(t, parallelRead(t, 2, 1, "", path), want)

	peak := func(o outcome) (float64, float64) {
		orders := o.snap.Tables[0]
		return orders.Classes[traffic.Write].PeakSecondUnits, orders.Classes[traffic.Write].Top[0].PeakUnitsPerSecond
	}
	whole, wholeKey := peak(want)
	a, aKey := peak(sequential(t, "", write(t, dir, "first", "", string(data[:cut]))))
	b, bKey := peak(sequential(t, "", write(t, dir, "second", "", string(data[cut:]))))
	if whole <= max(a, b) || wholeKey <= max(aKey, bKey) {
		t.Errorf("peak second %g (top key %g) of the whole, %g (%g) and %g (%g) of the halves: the cut does not split the busiest second",
			whole, wholeKey, a, aKey, b, bKey)
	}
}

// TestReadFailedInputs checks that unreadable inputs are told in input
// order, that a corrupt compressed file counts what could be read of it,
// and that the other inputs are read as one reader reads them.
func TestReadFailedInputs(t *testing.T) {
	dir := t.TempDir()
	plain := writeLog(t, dir, "access.log", "", logSpec{seed: 1, seconds: 20, perSecond: 100})
	gz := writeLog(t, dir, "later.log.gz", "gzip", logSpec{seed: 2, from: 20, seconds: 20, perSecond: 100})
	data, err := os.ReadFile(gz)
	if err != nil {
		t.Fatal(err)
	}
	cut := write(t, dir, "cut.log.gz", "", string(data[:len(data)*2/3]))
	later := writeLog(t, dir, "latest.log", "", logSpec{seed: 3, from: 40, seconds: 20, perSecond: 100})
	names := []string{filepath.Join(dir, "missing.log"), plain, cut, dir, later}
	want := sequential(t, "", names...)
	if len(want.failed) != 3 {
		t.Fatalf("one reader failed on %q, want the missing file, the cut one and the directory", want.failed)
	}
	for _, workers := range []int{1, 2, 4} {
		same(t, parallelRead(t, workers, 4<<10, "", names...), want)
	}
}

// TestReadStops checks that Read returns ctx's error once it is cancelled
// and leaves no worker behind (goleak).
func TestReadStops(t *testing.T) {
	dir := t.TempDir()
	path := writeLog(t, dir, "access.log", "", logSpec{seed: 1, seconds: 30, perSecond: 200})
	ctx, cancel := context.WithCancel(context.Background())
	puts := 0
	var mu sync.Mutex
	_, _, err := Read(ctx, Config[traffic.Sink]{
		Formats: formats.New(formats.Config{}),
		New: func() (traffic.Sink, error) {
			return traffic.SinkFunc(func(ctx context.Context, _ []traffic.Event) error {
				mu.Lock()
				defer mu.Unlock()
				if puts++; puts == 3 {
					cancel()
				}
				return ctx.Err()
			}), nil
		},
		Merge:   func(dst, src traffic.Sink) error { return nil },
		Workers: 3,
		MinPart: 1 << 10,
	}, path, path, path)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Read after cancel: %v, want context.Canceled", err)
	}
}

func TestCutLines(t *testing.T) {
	text := "a\nbb\n\nccc\n" + strings.Repeat("d", 20) + "\ne"
	for n := 1; n <= len(text)+2; n++ {
		cuts, err := cutLines(strings.NewReader(text), int64(len(text)), n)
		if err != nil {
			t.Fatal(err)
		}
		if cuts[0] != 0 || cuts[len(cuts)-1] != int64(len(text)) || len(cuts) > n+1 {
			t.Fatalf("%d parts: cuts %v", n, cuts)
		}
		for _, c := range cuts[1 : len(cuts)-1] {
			if text[c-1] != '\n' {
				t.Errorf("%d parts: cut %d is not at a line's start", n, c)
			}
		}
		if !slices.IsSorted(cuts) || slices.Compact(slices.Clone(cuts)) == nil {
			t.Errorf("%d parts: cuts %v", n, cuts)
		}
	}
}

// TestReadProgress reads inputs slowly on three workers and checks the
// progress line: one line for every input, counts that only grow and
// never pass the inputs' events and bytes.
func TestReadProgress(t *testing.T) {
	dir := t.TempDir()
	a := writeLog(t, dir, "a.log", "", logSpec{seed: 1, seconds: 20, perSecond: 100})
	b := writeLog(t, dir, "b.log.gz", "gzip", logSpec{seed: 2, from: 20, seconds: 20, perSecond: 100})
	var size int64
	for _, p := range []string{a, b} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	want := sequential(t, "", a, b)
	var total uint64
	for _, tb := range want.snap.Tables {
		total += tb.Classes[0].Events + tb.Classes[1].Events
	}
	var out syncBuffer
	_, _, err := Read(context.Background(), Config[traffic.Sink]{
		Formats: formats.New(formats.Config{}),
		New: func() (traffic.Sink, error) {
			return traffic.SinkFunc(func(context.Context, []traffic.Event) error {
				time.Sleep(2 * time.Millisecond)
				return nil
			}), nil
		},
		Merge:         func(dst, src traffic.Sink) error { return nil },
		Workers:       3,
		MinPart:       4 << 10,
		Progress:      &out,
		ProgressEvery: 5 * time.Millisecond,
	}, a, b)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 {
		t.Fatalf("progress lines %q, want several", lines)
	}
	var lastEvents, lastBytes float64
	for _, l := range lines {
		var events, bytes float64
		var evUnit, byteUnit, name string
		if _, err := fmt.Sscanf(l, "read %g%s events (%g %s from %s", &events, &evUnit, &bytes, &byteUnit, &name); err != nil {
			// Counts under 1000 have no unit: "read 512 events (45 kB)".
			if _, err := fmt.Sscanf(l, "read %g events (%g %s from %s", &events, &bytes, &byteUnit, &name); err != nil {
				t.Fatalf("progress line %q: %v", l, err)
			}
		}
		// The line rounds: "6k" is 5500 to 6499 events.
		evStep := map[string]float64{"": 1, "k": 1e3, "M": 1e5}[evUnit]
		byteStep := map[string]float64{"B)": 1, "kB)": 1e3, "MB)": 1e6}[byteUnit]
		events *= map[string]float64{"": 1, "k": 1e3, "M": 1e6}[evUnit]
		bytes *= byteStep
		if name != "2" || !strings.Contains(l, "from 2 inputs, ") {
			t.Errorf("progress line %q does not name the 2 inputs", l)
		}
		if events < lastEvents || bytes < lastBytes || events-evStep/2 > float64(total) || bytes-byteStep/2 > float64(size) {
			t.Errorf("progress line %q after %g events, %g bytes; inputs hold %d events, %d bytes", l, lastEvents, lastBytes, total, size)
		}
		lastEvents, lastBytes = events, bytes
	}
}

// syncBuffer is a strings.Builder for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
