package detect

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/sketch"
)

var update = flag.Bool("update", false, "rewrite the scenarios' expected.json from the current output")

// scenario is an input.yaml: a compact description of the events of one
// window (groups) or of successive windows (steps, for the Tracker).
type scenario struct {
	Start    time.Time      `yaml:"start"`
	Duration time.Duration  `yaml:"duration"`
	Settings map[string]any `yaml:"settings"`
	Groups   []group        `yaml:"groups"`
	Steps    []struct {
		Groups []group `yaml:"groups"`
	} `yaml:"steps"`
}

// group generates events: Keys partition keys made from PK ("{i}" replaced
// by From .. From+Keys-1), each accessed Events times with Units each,
// cycling through SortKeys distinct sort keys.
type group struct {
	Table     string  `yaml:"table"`
	Index     string  `yaml:"index"`
	Class     string  `yaml:"class"`
	PK        string  `yaml:"pk"`
	From      int     `yaml:"from"`
	Keys      int     `yaml:"keys"`
	Events    int     `yaml:"events"`
	Units     float64 `yaml:"units"`
	SortKeys  int     `yaml:"sort_keys"`
	Shard     string  `yaml:"shard"`
	Shards    int     `yaml:"shards"`
	Throttled bool    `yaml:"throttled"`
	// Duration, when set, spreads this group over its own span from the
	// scenario's start instead of the scenario's duration.
	Duration time.Duration `yaml:"duration"`
}

func (g group) events(start time.Time, d time.Duration) ([]ingest.Event, error) {
	class, ok := ingest.ParseClass(cmp.Or(g.Class, "write"))
	if !ok {
		return nil, fmt.Errorf("class %q", g.Class)
	}
	if g.Table == "" || g.PK == "" || g.Keys < 1 || g.Events < 1 {
		return nil, fmt.Errorf("group %+v: table, pk, keys and events are required", g)
	}
	units := cmp.Or(g.Units, 1)
	d = cmp.Or(g.Duration, d)
	n := g.Keys * g.Events
	out := make([]ingest.Event, 0, n)
	for j := range n {
		// Key-major interleaving: every key's accesses spread over the
		// whole window, the first at start and the last at start+d.
		i := j % g.Keys
		e := ingest.Event{
			Table: g.Table, Index: g.Index, Class: class, Units: units,
			PK:        strings.ReplaceAll(g.PK, "{i}", strconv.Itoa(g.From+i)),
			Source:    "scenario",
			Throttled: g.Throttled,
		}
		if n > 1 {
			e.Time = start.Add(time.Duration(float64(d) * float64(j) / float64(n-1)))
		} else {
			e.Time = start
		}
		if g.SortKeys > 0 {
			e.SK = "SK#" + strconv.Itoa((j/g.Keys)%g.SortKeys)
		}
		switch {
		case g.Shards > 0:
			e.Shard = fmt.Sprintf("shardId-%04d", i%g.Shards)
		case g.Shard != "":
			e.Shard = g.Shard
		}
		out = append(out, e)
	}
	return out, nil
}

func generate(sc *scenario, groups []group) ([]ingest.Event, error) {
	start := sc.Start
	if start.IsZero() {
		start = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	}
	d := cmp.Or(sc.Duration, 60*time.Second)
	var all []ingest.Event
	for _, g := range groups {
		evs, err := g.events(start, d)
		if err != nil {
			return nil, err
		}
		all = append(all, evs...)
	}
	return all, nil
}

// readJSONL parses the JSON-lines access-log contract with encoding/json.
func readJSONL(path string) ([]ingest.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ingest.Event
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var rec struct {
			TS    json.RawMessage `json:"ts"`
			Table string          `json:"table"`
			Index string          `json:"index"`
			PK    string          `json:"pk"`
			SK    string          `json:"sk"`
			Op    string          `json:"op"`
			Units *float64        `json:"units"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		e := ingest.Event{Table: rec.Table, Index: rec.Index, PK: rec.PK, SK: rec.SK, Units: 1, Source: "jsonl"}
		if rec.Units != nil {
			e.Units = *rec.Units
		}
		switch rec.Op {
		case "GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems", "read":
			e.Class = ingest.Read
		case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "write":
			e.Class = ingest.Write
		default:
			return nil, fmt.Errorf("line %d: op %q", line, rec.Op)
		}
		var ms int64
		var s string
		switch {
		case json.Unmarshal(rec.TS, &ms) == nil:
			e.Time = time.UnixMilli(ms).UTC()
		case json.Unmarshal(rec.TS, &s) == nil:
			if e.Time, err = time.Parse(time.RFC3339Nano, s); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
		default:
			return nil, fmt.Errorf("line %d: ts %s", line, rec.TS)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// snapshot feeds events through a whole-input store, as hotkeyd analyze
// does, and fills in from the events what the store does not report
// (per-key sort key counts, shards, throttled keys), so the detector's
// rules are exercised whichever store implementation is in place.
func snapshot(t *testing.T, events []ingest.Event) sketch.Snapshot {
	t.Helper()
	st, err := sketch.NewStore(sketch.Config{Window: 0, SubWindows: 1, Tracked: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	batch := slices.Clone(events)
	if err := st.Put(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	snap := st.Snapshot()
	type id struct{ table, index string }
	type classKey struct {
		class ingest.Class
		pk    string
	}
	sortKeys := map[id]map[classKey]map[string]bool{}
	shards := map[id]map[string]uint64{}
	throttled := map[id]map[string]uint64{}
	for _, e := range events {
		k := id{e.Table, e.Index}
		if e.Throttled {
			if throttled[k] == nil {
				throttled[k] = map[string]uint64{}
			}
			throttled[k][e.PK]++
			continue
		}
		if e.SK != "" {
			ck := classKey{e.Class, e.PK}
			if sortKeys[k] == nil {
				sortKeys[k] = map[classKey]map[string]bool{}
			}
			if sortKeys[k][ck] == nil {
				sortKeys[k][ck] = map[string]bool{}
			}
			sortKeys[k][ck][e.SK] = true
		}
		if e.Shard != "" {
			if shards[k] == nil {
				shards[k] = map[string]uint64{}
			}
			shards[k][e.Shard]++
		}
	}
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		k := id{ts.Table, ts.Index}
		known := false
		for c := range ts.Classes {
			for _, ks := range ts.Classes[c].Top {
				known = known || ks.SortKeys > 0
			}
		}
		if !known {
			for c := range ts.Classes {
				for j := range ts.Classes[c].Top {
					ks := &ts.Classes[c].Top[j]
					ks.SortKeys = uint64(len(sortKeys[k][classKey{ingest.Class(c), ks.Key}]))
				}
			}
		}
		if len(ts.Shards) == 0 {
			for s, n := range shards[k] {
				ts.Shards = append(ts.Shards, sketch.ShardStat{Shard: s, Records: n})
			}
			slices.SortFunc(ts.Shards, func(a, b sketch.ShardStat) int {
				return cmp.Or(cmp.Compare(b.Records, a.Records), cmp.Compare(a.Shard, b.Shard))
			})
		}
		if len(ts.Throttled) == 0 {
			for key, n := range throttled[k] {
				ts.Throttled = append(ts.Throttled, sketch.KeyCount{Key: key, Count: n})
				ts.ThrottledEvents += n
			}
			slices.SortFunc(ts.Throttled, func(a, b sketch.KeyCount) int {
				return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Key, b.Key))
			})
		}
	}
	return snap
}

// golden is an expected.json: the findings of every table (Evaluate
// scenarios) or the flags after every step (Tracker scenarios). Texts and
// evidence are left out on purpose: they carry estimates; the kinds, keys,
// recommendations and suffix counts are the spec.
type golden struct {
	Tables []goldenTable `json:"tables,omitempty"`
	Steps  []goldenStep  `json:"steps,omitempty"`
}

type goldenTable struct {
	Table         string                `json:"table"`
	Index         string                `json:"index,omitempty"`
	Events        uint64                `json:"events"`
	Findings      []goldenFinding       `json:"findings"`
	ThrottledKeys []report.ThrottledKey `json:"throttled_keys,omitempty"`
}

type goldenStep struct {
	Flagged []goldenFlag `json:"flagged"`
}

type goldenFlag struct {
	Table string `json:"table"`
	Index string `json:"index,omitempty"`
	goldenFinding
}

type goldenFinding struct {
	Kind           report.Kind       `json:"kind"`
	Key            string            `json:"key,omitempty"`
	Class          string            `json:"class,omitempty"`
	Severity       report.Severity   `json:"severity"`
	Share          float64           `json:"share"`
	UnitsPerSecond float64           `json:"units_per_second"`
	Recommendation report.AdviceKind `json:"recommendation"`
	SuffixCount    int               `json:"suffix_count,omitempty"`
	Example        string            `json:"example,omitempty"`
}

func toGolden(f report.Finding) goldenFinding {
	g := goldenFinding{
		Kind: f.Kind, Key: f.Key, Class: f.Class, Severity: f.Severity,
		Share: round(f.Share, 1e-4), UnitsPerSecond: round(f.UnitsPerSecond, 1e-3),
	}
	if r := f.Recommendation; r != nil {
		g.Recommendation, g.SuffixCount, g.Example = r.Kind, r.SuffixCount, r.Example
	}
	return g
}

// round rounds to a multiple of q through its decimal form, so the golden
// files hold 0.3 rather than 0.30000000000000004.
func round(f, q float64) float64 {
	prec := max(0, int(math.Round(-math.Log10(q))))
	r, _ := strconv.ParseFloat(strconv.FormatFloat(math.Round(f/q)*q, 'f', prec, 64), 64)
	return r
}

// sameFinding compares strings exactly and floats within 1 percentage point for shares and 2 % for
// rates, the slack a sketch's estimates need.
func sameFinding(a, b goldenFinding) bool {
	fa, fb := a, b
	fa.Share, fb.Share, fa.UnitsPerSecond, fb.UnitsPerSecond = 0, 0, 0, 0
	return fa == fb && math.Abs(a.Share-b.Share) <= 0.01 &&
		math.Abs(a.UnitsPerSecond-b.UnitsPerSecond) <= 0.02*math.Max(math.Abs(b.UnitsPerSecond), 1)
}

// applySettings overrides DefaultSettings with the scenario's YAML keys,
// through the same YAML names a config file would use.
func applySettings(t *testing.T, over map[string]any) Settings {
	t.Helper()
	s := DefaultSettings()
	if len(over) > 0 {
		b, err := yaml.Marshal(over)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("settings: %v", err)
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestScenarios(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := runScenario(t, dir)
			path := filepath.Join(dir, "expected.json")
			if *update {
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				if err := enc.Encode(got); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want golden
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&want); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			compareGolden(t, got, want)
		})
	}
}

func runScenario(t *testing.T, dir string) golden {
	var sc scenario
	if b, err := os.ReadFile(filepath.Join(dir, "input.yaml")); err == nil {
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&sc); err != nil && err != io.EOF {
			t.Fatalf("input.yaml: %v", err)
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	s := applySettings(t, sc.Settings)
	if len(sc.Steps) > 0 {
		tr := NewTracker(s)
		var g golden
		for i, step := range sc.Steps {
			evs, err := generate(&sc, step.Groups)
			if err != nil {
				t.Fatalf("step %d: %v", i+1, err)
			}
			rep, _ := tr.Evaluate(snapshot(t, evs))
			gs := goldenStep{Flagged: []goldenFlag{}}
			for _, f := range tr.Flagged() {
				gs.Flagged = append(gs.Flagged, goldenFlag{Table: f.Table, Index: f.Index, goldenFinding: toGolden(f.Finding)})
			}
			checkTrackerReport(t, i+1, rep, tr.Flagged())
			g.Steps = append(g.Steps, gs)
		}
		return g
	}
	var events []ingest.Event
	if _, err := os.Stat(filepath.Join(dir, "input.jsonl")); err == nil {
		if events, err = readJSONL(filepath.Join(dir, "input.jsonl")); err != nil {
			t.Fatalf("input.jsonl: %v", err)
		}
	}
	gen, err := generate(&sc, sc.Groups)
	if err != nil {
		t.Fatal(err)
	}
	events = append(events, gen...)
	if len(events) == 0 {
		t.Fatal("scenario has no events")
	}
	rep := Evaluate(snapshot(t, events), s)
	checkReport(t, rep)
	var g golden
	for _, tr := range rep.Tables {
		gt := goldenTable{Table: tr.Table, Index: tr.Index, Events: tr.Events, Findings: []goldenFinding{}, ThrottledKeys: tr.ThrottledKeys}
		for _, f := range tr.Findings {
			gt.Findings = append(gt.Findings, toGolden(f))
		}
		g.Tables = append(g.Tables, gt)
	}
	return g
}

// checkReport asserts what holds for every report: texts present and naming
// their key, evidence on every finding, findings in the documented order.
func checkReport(t *testing.T, r report.Report) {
	t.Helper()
	for _, tr := range r.Tables {
		if tr.TopKeys == nil || tr.Findings == nil {
			t.Errorf("%s: nil top_keys or findings would marshal as null", tr.Table)
		}
		if !slices.IsSortedFunc(tr.Findings, compareFindings) {
			t.Errorf("%s: findings out of order", tr.Table)
		}
		for _, f := range tr.Findings {
			if f.Evidence == nil || f.Evidence.Summary == "" {
				t.Errorf("%s %s %q: no evidence", tr.Table, f.Kind, f.Key)
			}
			if f.Recommendation == nil || f.Recommendation.Text == "" {
				t.Errorf("%s %s %q: no recommendation text", tr.Table, f.Kind, f.Key)
				continue
			}
			if f.Key != "" && f.Kind != report.KindHotPartition && !strings.Contains(f.Recommendation.Text, f.Key) {
				t.Errorf("%s %s: text %q does not name key %q", tr.Table, f.Kind, f.Recommendation.Text, f.Key)
			}
			if n := f.Recommendation.SuffixCount; n != 0 && n < 2 {
				t.Errorf("%s %s %q: suffix count %d", tr.Table, f.Kind, f.Key, n)
			}
		}
	}
}

// checkTrackerReport asserts the Tracker's report shows exactly its flags.
func checkTrackerReport(t *testing.T, step int, r report.Report, flags []report.Flag) {
	t.Helper()
	n := 0
	for _, tr := range r.Tables {
		n += len(tr.Findings)
	}
	if n != len(flags) {
		t.Errorf("step %d: report has %d findings, %d flagged", step, n, len(flags))
	}
}

func compareGolden(t *testing.T, got, want golden) {
	t.Helper()
	if len(got.Tables) != len(want.Tables) || len(got.Steps) != len(want.Steps) {
		t.Fatalf("got %d tables / %d steps, want %d / %d", len(got.Tables), len(got.Steps), len(want.Tables), len(want.Steps))
	}
	for i, w := range want.Tables {
		g := got.Tables[i]
		name := w.Table + "/" + w.Index
		if g.Table != w.Table || g.Index != w.Index || g.Events != w.Events {
			t.Errorf("table %d: got %s/%s with %d events, want %s with %d", i, g.Table, g.Index, g.Events, name, w.Events)
		}
		compareGoldenFindings(t, name, g.Findings, w.Findings)
		if !slices.Equal(g.ThrottledKeys, w.ThrottledKeys) {
			t.Errorf("%s: throttled keys %v, want %v", name, g.ThrottledKeys, w.ThrottledKeys)
		}
	}
	for i, w := range want.Steps {
		name := fmt.Sprintf("step %d", i+1)
		byID := func(a, b goldenFlag) int {
			return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Index, b.Index),
				cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Key, b.Key))
		}
		g, wf := slices.Clone(got.Steps[i].Flagged), slices.Clone(w.Flagged)
		slices.SortFunc(g, byID)
		slices.SortFunc(wf, byID)
		if len(g) != len(wf) {
			t.Errorf("%s: flagged %+v, want %+v", name, g, wf)
			continue
		}
		for j := range wf {
			if g[j].Table != wf[j].Table || g[j].Index != wf[j].Index || !sameFinding(g[j].goldenFinding, wf[j].goldenFinding) {
				t.Errorf("%s: flag %d = %+v, want %+v", name, j, g[j], wf[j])
			}
		}
	}
}

// compareGoldenFindings matches findings by kind, class and key: their
// order depends on shares, which a sketch estimates (checkReport checks the
// order itself).
func compareGoldenFindings(t *testing.T, name string, got, want []goldenFinding) {
	t.Helper()
	byID := func(a, b goldenFinding) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Key, b.Key))
	}
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	if len(got) != len(want) {
		t.Errorf("%s: %d findings, want %d:\n got %+v\nwant %+v", name, len(got), len(want), got, want)
		return
	}
	for j := range want {
		if !sameFinding(got[j], want[j]) {
			t.Errorf("%s: finding %d\n got %+v\nwant %+v", name, j, got[j], want[j])
		}
	}
}
