package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// secondSnap is a snapshot whose last complete second is sec: orders'
// writes of units, alice's half of them and bob's 1.
func secondSnap(sec int64, units float64, tables ...string) []report.TableSecond {
	if len(tables) == 0 {
		tables = []string{"orders"}
	}
	var snap sketch.Snapshot
	for _, name := range tables {
		ts := sketch.TableSnapshot{Table: name, LastSecond: time.Unix(sec, 0)}
		ts.Classes[traffic.Write].LastSecondUnits = units
		ts.Classes[traffic.Write].Top = []sketch.KeyStat{{Key: "USER#alice", LastSecondUnits: units / 2}, {Key: "USER#bob", LastSecondUnits: 1}}
		ts.Classes[traffic.Read].LastSecondUnits = 3
		snap.Tables = append(snap.Tables, ts)
	}
	return detect.LastSeconds(snap, 20)
}

func historyReport(tables ...string) report.Report {
	rep := report.Report{End: time.Unix(200, 0).UTC()}
	for _, name := range tables {
		rep.Tables = append(rep.Tables, report.TableReport{Table: name, TopKeys: []report.TopKey{
			{Key: "USER#alice", Class: "write"}, {Key: "USER#carol", Class: "write"}, {Key: "USER#bob", Class: "write"}, {Key: "USER#alice", Class: "read"},
		}})
	}
	return rep
}

// points writes NaN as -1, to compare with slices.Equal.
func points(p report.Points) []float64 {
	out := make([]float64, len(p))
	for i, v := range p {
		out[i] = v
		if math.IsNaN(v) {
			out[i] = -1
		}
	}
	return out
}

// TestSeriesClasses: the series' classes are indexed as ingest's, which
// Recent's seconds and analyze's steps count in.
func TestSeriesClasses(t *testing.T) {
	for c := range traffic.Class(traffic.NumClasses) {
		if report.Classes[c] != c.String() {
			t.Errorf("report.Classes[%d] is %q, ingest's class %d is %q", c, report.Classes[c], c, c)
		}
	}
}

func TestRecentSeries(t *testing.T) {
	h := NewRecent(RecentConfig{Window: 5 * time.Second, Top: 10})
	for _, s := range []struct {
		sec   int64
		units float64
	}{
		{100, 10}, {101, 4}, {101, 20}, // a second seen twice: the later wins
		{103, 30}, // 102 unknown
		{99, 500}, // older than the newest: dropped
		{104, 40},
	} {
		h.Record(secondSnap(s.sec, s.units))
	}
	rep := historyReport("orders")
	got := h.Series(rep, 0)
	if !got.End.Equal(rep.End) || len(got.Tables) != 1 {
		t.Fatalf("series %+v", got)
	}
	ts := got.Tables[0]
	if !ts.Start.Equal(time.Unix(100, 0)) || ts.Step != 1 {
		t.Errorf("start %s step %d, want %s and 1", ts.Start, ts.Step, time.Unix(100, 0))
	}
	for _, c := range []struct {
		name string
		got  report.Points
		want []float64
	}{
		{"reads", ts.Classes[traffic.Read].UnitsPerSecond, []float64{3, 3, -1, 3, 3}},
		{"writes", ts.Classes[traffic.Write].UnitsPerSecond, []float64{10, 20, -1, 30, 40}},
		{"alice's writes", ts.Keys[0].UnitsPerSecond, []float64{5, 10, -1, 15, 20}},
		{"carol's writes (never recorded)", ts.Keys[1].UnitsPerSecond, []float64{-1, -1, -1, -1, -1}},
		{"bob's writes", ts.Keys[2].UnitsPerSecond, []float64{1, 1, -1, 1, 1}},
		{"alice's reads (not among the read keys)", ts.Keys[3].UnitsPerSecond, []float64{-1, -1, -1, -1, -1}},
	} {
		if !slices.Equal(points(c.got), c.want) {
			t.Errorf("%s: %v, want %v (-1 for null)", c.name, points(c.got), c.want)
		}
	}

	// The window is 5 s: a second 6 s later leaves the seconds between
	// unknown and the older ones out.
	h.Record(secondSnap(110, 50))
	ts = h.Series(historyReport("orders"), 0).Tables[0]
	if w := points(ts.Classes[traffic.Write].UnitsPerSecond); !ts.Start.Equal(time.Unix(106, 0)) || !slices.Equal(w, []float64{-1, -1, -1, -1, 50}) {
		t.Errorf("after a gap: start %s, writes %v", ts.Start, w)
	}

	// ?top=1 keeps the first key of each class.
	ts = h.Series(historyReport("orders"), 1).Tables[0]
	if len(ts.Keys) != 2 || ts.Keys[0].Key != "USER#alice" || ts.Keys[0].Class != "write" || ts.Keys[1].Class != "read" {
		t.Errorf("top 1: %+v", ts.Keys)
	}

	// A table the snapshot no longer has is forgotten.
	h.Record(secondSnap(111, 5, "users"))
	s := h.Series(historyReport("orders", "users"), 0)
	if n := len(s.Tables[0].Classes[traffic.Write].UnitsPerSecond); n != 0 {
		t.Errorf("orders, gone from the snapshot, has %d points", n)
	}
	if n := len(s.Tables[1].Classes[traffic.Write].UnitsPerSecond); n != 1 {
		t.Errorf("users has %d points, want 1", n)
	}
}

func TestServerHistoryAPI(t *testing.T) {
	live := NewLive(nil)
	hist := NewRecent(RecentConfig{Window: time.Minute, Top: 10})
	m := mustMasker(t, KeysHash, "k")
	ts := startServer(t, ServerConfig{Live: live, Recent: hist, Masker: m}, "")

	if code, _, body := ts.do(t, "GET", "/api/v1/hotkeys/history", "", nil); code != 503 || !strings.Contains(body, "no report yet") {
		t.Errorf("before the first report: %d %s", code, body)
	}
	hist.Record(secondSnap(100, 10, "orders", "users"))
	live.Update(historyReport("orders", "users"))
	for _, q := range []string{"?top=0", "?top=x", "?top=-1"} {
		if code, _, body := ts.do(t, "GET", "/api/v1/hotkeys/history"+q, "", nil); code != 400 || !strings.Contains(body, "top: want a positive number") {
			t.Errorf("%s: %d %s, want 400", q, code, body)
		}
	}
	code, hdr, body := ts.do(t, "GET", "/api/v1/hotkeys/history?table=users&top=2", "", nil)
	if code != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/hotkeys/history: %d %s %s", code, hdr.Get("Content-Type"), body)
	}
	if strings.Contains(body, "alice") || strings.Contains(body, "bob") {
		t.Errorf("the series show a key in the clear: %s", body)
	}
	var s report.Series
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Tables) != 1 || s.Tables[0].Table != "users" || len(s.Tables[0].Keys) != 3 || s.Tables[0].Keys[0].Key != m.Mask("USER#alice") {
		t.Errorf("series %+v, want users' with 3 keys, alice masked first", s)
	}
	if got := points(s.Tables[0].Keys[0].UnitsPerSecond); !slices.Equal(got, []float64{5}) {
		t.Errorf("alice's points %v, want [5]", got)
	}
}

// The HTML report is one page: its data, script and style inline, and no
// key, whatever it holds, can end the element it is written in.
func TestHTMLReportIsSelfContained(t *testing.T) {
	evil := `USER#</script><img src=x onerror=alert(1)>`
	rep := report.Report{Tables: []report.TableReport{{Table: "orders", TopKeys: []report.TopKey{{Key: evil, Class: "write", Share: 0.5}}}}}
	series := report.Series{Tables: []report.TableSeries{{Table: "orders", Step: 1, Start: time.Unix(100, 0).UTC(),
		Classes: []report.ClassSeries{{Class: "read", UnitsPerSecond: report.Points{0}}, {Class: "write", UnitsPerSecond: report.Points{2}}},
		Keys:    []report.KeySeries{{Key: evil, Class: "write", UnitsPerSecond: report.Points{math.NaN()}}}}}}
	var b bytes.Buffer
	if err := WriteHTMLReport(&b, HTMLReport{Report: rep, Series: series}, "hotkeyd analyze: <x>", "v1"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<img") || strings.Contains(page, "<x>") {
		t.Errorf("a key or the title broke out of its element")
	}
	if n := strings.Count(page, "<script"); n != 3 {
		t.Errorf("%d script elements, want 3 (data, uPlot, the page's)", n)
	}
	if regexp.MustCompile(`<(script|img|link)[^>]+(src|href)="(https?:)?//`).MatchString(page) || strings.Contains(page, `rel="stylesheet"`) {
		t.Errorf("the page loads something from elsewhere")
	}
	m := regexp.MustCompile(`(?s)<script id="hotkeyd-data" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data element")
	}
	var back HTMLReport
	if err := json.Unmarshal([]byte(m[1]), &back); err != nil {
		t.Fatal(err)
	}
	if back.Report.Tables[0].TopKeys[0].Key != evil || back.Series.Tables[0].Keys[0].Key != evil || !math.IsNaN(back.Series.Tables[0].Keys[0].UnitsPerSecond[0]) {
		t.Errorf("the data read back: %+v", back)
	}
	if !strings.Contains(page, `data-mode="report"`) {
		t.Errorf("the page is not in report mode")
	}
}

func TestServerLivePage(t *testing.T) {
	ts := startServer(t, ServerConfig{Live: NewLive(nil), Version: "v9.9"}, "")
	code, hdr, body := ts.do(t, "GET", "/", "", nil)
	if code != 200 || hdr.Get("Content-Type") != "text/html; charset=utf-8" || hdr.Get("Cache-Control") != "no-cache" {
		t.Fatalf("GET /: %d %v", code, hdr)
	}
	for _, want := range []string{`data-mode="live"`, "hotkeyd v9.9", "uPlot"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page has no %q", want)
		}
	}
	if code, _, _ := ts.do(t, "GET", "/nothing", "", nil); code != 404 {
		t.Errorf("GET /nothing: %d, want 404", code)
	}
}

// historyOracle is what Recent's series must read, kept the plain way:
// every second a table recorded, whole.
type historyOracle struct {
	window int64
	tables map[string]*oracleTable
}

type oracleTable struct {
	first, last int64
	secs        map[int64]report.TableSecond
}

func (o *historyOracle) record(secs []report.TableSecond, keep int) {
	seen := map[string]bool{}
	for _, ts := range secs {
		seen[ts.Table] = true
		if ts.At.IsZero() {
			continue
		}
		sec := ts.At.Unix()
		t := o.tables[ts.Table]
		if t == nil {
			t = &oracleTable{first: sec, last: sec, secs: map[int64]report.TableSecond{}}
			o.tables[ts.Table] = t
		}
		if sec < t.last {
			continue
		}
		t.last = sec
		t.secs[sec] = ts
	}
	for name := range o.tables {
		if !seen[name] {
			delete(o.tables, name)
		}
	}
}

// series returns the table's series of the classes, then of each (key,
// class) of keys, as bits (NaN all alike).
func (o *historyOracle) series(table string, keys []report.TopKey, keep int) [][]uint64 {
	t := o.tables[table]
	out := make([][]uint64, len(report.Classes)+len(keys))
	if t == nil {
		return out
	}
	nan := math.Float64bits(math.NaN())
	for sec := max(t.first, t.last-o.window+1); sec <= t.last; sec++ {
		ts, ok := t.secs[sec]
		for i := range out {
			out[i] = append(out[i], nan)
		}
		if !ok {
			continue
		}
		at := len(out[0]) - 1
		for _, cs := range ts.Classes {
			c := slices.Index(report.Classes[:], cs.Class)
			if c < 0 {
				continue
			}
			out[c][at] = math.Float64bits(cs.Units)
			for _, k := range cs.Keys[:min(len(cs.Keys), keep)] {
				for j, tk := range keys {
					if tk.Key == k.Key && tk.Class == cs.Class {
						out[len(report.Classes)+j][at] = math.Float64bits(k.Units)
					}
				}
			}
		}
	}
	return out
}

// bits writes a series' points as bits (NaN all alike), to tell 0 from -0
// and from NaN.
func bits(p report.Points) []uint64 {
	out := make([]uint64, len(p))
	for i, v := range p {
		if math.IsNaN(v) {
			v = math.NaN()
		}
		out[i] = math.Float64bits(v)
	}
	return out
}

// TestRecentMatchesOracle: whatever the seconds recorded (keys with and
// without units, -0, rankings that change or not, more keys than kept,
// seconds written twice, older, skipped or far ahead, tables that vanish
// or have no second), the series read what a plain record of every second
// reads.
func TestRecentMatchesOracle(t *testing.T) {
	const window, keysN = 5, 26
	tables := []string{"orders", "users", "carts"}
	names := make([]string, keysN)
	for i := range names {
		names[i] = "USER#" + string(rune('a'+i))
	}
	var top []report.TopKey
	for _, c := range report.Classes {
		for _, k := range names {
			top = append(top, report.TopKey{Key: k, Class: c})
		}
	}
	rep := report.Report{End: time.Unix(1, 0)}
	for _, name := range tables {
		rep.Tables = append(rep.Tables, report.TableReport{Table: name, TopKeys: top})
	}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		h := NewRecent(RecentConfig{Window: window * time.Second, Top: 3})
		o := &historyOracle{window: window, tables: map[string]*oracleTable{}}
		// Each table's ranking, kept from second to second unless it changes.
		ranking := map[string][]string{}
		sec := int64(1000)
		for step := range 200 {
			sec += []int64{0, 1, 1, 1, 1, 2, 3, 9, -1}[rng.IntN(9)]
			var secs []report.TableSecond
			for _, name := range tables {
				if rng.IntN(12) == 0 {
					continue // gone from this snapshot
				}
				ts := report.TableSecond{Table: name, At: time.Unix(sec, 0)}
				if rng.IntN(15) == 0 {
					ts.At = time.Time{}
				}
				if r := ranking[name]; r == nil || rng.IntN(4) == 0 {
					r = slices.Clone(names)
					rng.Shuffle(len(r), func(i, j int) { r[i], r[j] = r[j], r[i] })
					ranking[name] = r[:rng.IntN(keysN+1)]
				}
				busy := rng.Float64()
				for _, c := range append(report.Classes[:], "bogus")[:2+rng.IntN(2)] {
					cs := report.ClassSecond{Class: c, Units: float64(rng.IntN(100))}
					for _, k := range ranking[name] {
						var u float64
						switch x := rng.Float64(); {
						case x < busy/20:
							u = math.Copysign(0, -1)
						case x < busy:
							u = float64(1 + rng.IntN(9))
						}
						cs.Keys = append(cs.Keys, report.KeySecond{Key: k, Units: u})
					}
					ts.Classes = append(ts.Classes, cs)
				}
				secs = append(secs, ts)
			}
			h.Record(secs)
			o.record(secs, h.Keys())
			got := h.Series(rep, 0)
			for i, name := range tables {
				want := o.series(name, top, h.Keys())
				ts := got.Tables[i]
				series := []report.Points{ts.Classes[0].UnitsPerSecond, ts.Classes[1].UnitsPerSecond}
				for _, k := range ts.Keys {
					series = append(series, k.UnitsPerSecond)
				}
				for j := range series {
					if !slices.Equal(bits(series[j]), want[j]) {
						t.Fatalf("seed %d step %d second %d: %s's series %d: %v, want %v", seed, step, sec, name, j, series[j], want[j])
					}
				}
			}
		}
	}
}

// idleSecond is a table's entry for a second with no traffic, as
// detect.LastSeconds gives it for a table the detector did not copy out
// again.
func idleSecond(sec int64, tables ...string) []report.TableSecond {
	var snap sketch.Snapshot
	for _, name := range tables {
		snap.Tables = append(snap.Tables, sketch.TableSnapshot{Table: name, LastSecond: time.Unix(sec, 0), Kept: true, Version: 1})
	}
	return detect.LastSeconds(snap, 20)
}

// TestRecentIdleSeconds: an idle second is a second of no units for the
// keys of the second before it, not an unknown one, however many seconds
// passed since; one seen already changes nothing; and recording it costs
// no allocation, whatever the table's keys.
func TestRecentIdleSeconds(t *testing.T) {
	h := NewRecent(RecentConfig{Window: 5 * time.Second, Top: 10})
	h.Record(secondSnap(100, 10))
	h.Record(idleSecond(100, "orders")) // the second recorded already: kept
	h.Record(idleSecond(101, "orders"))
	h.Record(idleSecond(103, "orders")) // 102 was idle too
	ts := h.Series(historyReport("orders"), 0).Tables[0]
	for _, c := range []struct {
		name string
		got  report.Points
		want []float64
	}{
		{"writes", ts.Classes[traffic.Write].UnitsPerSecond, []float64{10, 0, 0, 0}},
		{"reads", ts.Classes[traffic.Read].UnitsPerSecond, []float64{3, 0, 0, 0}},
		{"alice's writes", ts.Keys[0].UnitsPerSecond, []float64{5, 0, 0, 0}},
		{"carol's writes (never recorded)", ts.Keys[1].UnitsPerSecond, []float64{-1, -1, -1, -1}},
	} {
		if !slices.Equal(points(c.got), c.want) {
			t.Errorf("%s: %v, want %v (-1 for null)", c.name, points(c.got), c.want)
		}
	}
	// A busy second after idle ones, then a long idle stretch past the
	// window.
	h.Record(secondSnap(104, 8))
	h.Record(idleSecond(120, "orders"))
	ts = h.Series(historyReport("orders"), 0).Tables[0]
	if w := points(ts.Classes[traffic.Write].UnitsPerSecond); !ts.Start.Equal(time.Unix(116, 0)) || !slices.Equal(w, []float64{0, 0, 0, 0, 0}) {
		t.Errorf("after 16 idle seconds: start %s, writes %v", ts.Start, w)
	}

	var tables []string
	for i := range 100 {
		tables = append(tables, fmt.Sprintf("t%03d", i))
	}
	busy := NewRecent(RecentConfig{Window: time.Minute, Top: 10})
	busy.Record(secondSnap(100, 10, tables...))
	sec := int64(100)
	idle := idleSecond(sec, tables...)
	if n := testing.AllocsPerRun(50, func() {
		sec++
		for i := range idle {
			idle[i].At = time.Unix(sec, 0)
		}
		busy.Record(idle)
	}); n != 0 {
		t.Errorf("an idle second of 100 tables allocates %v times, want 0", n)
	}
}
