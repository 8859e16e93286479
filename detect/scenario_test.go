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
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
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
	// Expect is the hand-written spec of a window scenario: its diagnoses
	// at warning or above, exactly (none when empty). The golden holds
	// the rest; -update never rewrites this.
	Expect []expectation `yaml:"expect"`
}

// expectation is one diagnosis at warning or above a scenario must give.
type expectation struct {
	Table       string            `yaml:"table"`
	Index       string            `yaml:"index"`
	Cause       report.Kind       `yaml:"cause"`
	Class       string            `yaml:"class"`
	Key         string            `yaml:"key"`
	Severity    report.Severity   `yaml:"severity"`
	Fix         report.AdviceKind `yaml:"fix"`
	SuffixCount int               `yaml:"suffix_count"`
	// Limit is a capacity diagnosis's limit.
	Limit report.CapacityLimit `yaml:"limit"`
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
	// ThrottleReason is the throttled calls' reason, one of DynamoDB's
	// sixteen; it marks them throttled.
	ThrottleReason string `yaml:"throttle_reason"`
	// Duration, when set, spreads this group over its own span from the
	// scenario's start instead of the scenario's duration.
	Duration time.Duration `yaml:"duration"`
	// Order is "interleaved" (default: every key's accesses spread over the
	// whole span) or "sequential": key i's accesses fill the i-th slice of
	// the span, as keys that are dates or timestamps do.
	Order string `yaml:"order"`
	// Every and Active make the group bursty: its accesses fall only in
	// the first Active of each Every of the span.
	Every  time.Duration `yaml:"every"`
	Active time.Duration `yaml:"active"`
}

func (g group) events(start time.Time, d time.Duration) ([]traffic.Event, error) {
	class, ok := traffic.ParseClass(cmp.Or(g.Class, "write"))
	if !ok {
		return nil, fmt.Errorf("class %q", g.Class)
	}
	if g.Table == "" || g.PK == "" && g.ThrottleReason == "" || g.Keys < 1 || g.Events < 1 {
		return nil, fmt.Errorf("group %+v: table, pk (but for throttled calls with a reason), keys and events are required", g)
	}
	units := cmp.Or(g.Units, 1)
	var reason traffic.ThrottleReason
	if g.ThrottleReason != "" {
		if reason, ok = traffic.ParseThrottleReason(g.ThrottleReason); !ok || reason.Class() != class {
			return nil, fmt.Errorf("group %+v: throttle_reason %q of another class or unknown", g, g.ThrottleReason)
		}
	}
	d = cmp.Or(g.Duration, d)
	if g.Order != "" && g.Order != "interleaved" && g.Order != "sequential" {
		return nil, fmt.Errorf("order %q", g.Order)
	}
	if (g.Every > 0) != (g.Active > 0) || g.Active > g.Every {
		return nil, fmt.Errorf("group %+v: every and active go together, active within every", g)
	}
	n := g.Keys * g.Events
	out := make([]traffic.Event, 0, n)
	for j := range n {
		// Key-major interleaving: every key's accesses spread over the
		// whole window, the first at start and the last at start+d.
		// Sequential: key i's accesses are the i-th run of them.
		i, nth := j%g.Keys, j/g.Keys // the key, and which of its accesses
		if g.Order == "sequential" {
			i, nth = j/g.Events, j%g.Events
		}
		e := traffic.Event{
			Table: g.Table, Index: g.Index, Class: class, Units: units,
			PK:             strings.ReplaceAll(g.PK, "{i}", strconv.Itoa(g.From+i)),
			Source:         "scenario",
			Throttled:      g.Throttled || reason.Known(),
			ThrottleReason: reason,
		}
		e.Time = start.Add(g.at(d, j, n))
		if g.SortKeys > 0 {
			e.SK = "SK#" + strconv.Itoa(nth%g.SortKeys)
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

// at is the time offset of access j of n in a group spread over d: evenly
// from 0 to d, or, for a bursty group, evenly over its active stretches.
func (g group) at(d time.Duration, j, n int) time.Duration {
	switch {
	case n < 2:
		return 0
	case g.Every == 0:
		return time.Duration(float64(d) * float64(j) / float64(n-1))
	}
	periods := math.Ceil(float64(d) / float64(g.Every))
	off := time.Duration(float64(j) / float64(n) * periods * float64(g.Active))
	return off/g.Active*g.Every + off%g.Active
}

func generate(sc *scenario, groups []group) ([]traffic.Event, error) {
	start := sc.Start
	if start.IsZero() {
		start = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	}
	d := cmp.Or(sc.Duration, 60*time.Second)
	var all []traffic.Event
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
func readJSONL(path string) ([]traffic.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []traffic.Event
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
		e := traffic.Event{Table: rec.Table, Index: rec.Index, PK: rec.PK, SK: rec.SK, Units: 1, Source: "jsonl"}
		if rec.Units != nil {
			e.Units = *rec.Units
		}
		switch rec.Op {
		case "GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems", "read":
			e.Class = traffic.Read
		case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "write":
			e.Class = traffic.Write
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
// (per-key sort key counts, shards), so the detector's
// rules are exercised whichever store implementation is in place.
func snapshot(t *testing.T, events []traffic.Event) sketch.Snapshot {
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
		class traffic.Class
		pk    string
	}
	sortKeys := map[id]map[classKey]map[string]bool{}
	shards := map[id]map[string]uint64{}
	for _, e := range events {
		k := id{e.Table, e.Index}
		if e.Throttled {
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
					ks.SortKeys = uint64(len(sortKeys[k][classKey{traffic.Class(c), ks.Key}]))
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
	}
	return snap
}

// golden is an expected.json: the diagnoses and findings of every table
// (Evaluate scenarios) or the flagged diagnoses after every step (Tracker
// scenarios). Texts and evidence are left out on purpose: they carry
// estimates; the causes, keys, severities, fixes and suffix counts are the
// spec.
type golden struct {
	Tables []goldenTable `json:"tables,omitempty"`
	Steps  []goldenStep  `json:"steps,omitempty"`
}

type goldenTable struct {
	Table         string                `json:"table"`
	Index         string                `json:"index,omitempty"`
	Events        uint64                `json:"events"`
	Diagnoses     []goldenDiagnosis     `json:"diagnoses"`
	Findings      []goldenFinding       `json:"findings"`
	ThrottledKeys []report.ThrottledKey `json:"throttled_keys,omitempty"`
	Quiet         *goldenQuiet          `json:"quiet,omitempty"`
}

type goldenStep struct {
	Flagged []goldenFlag `json:"flagged"`
}

type goldenFlag struct {
	Table string `json:"table"`
	Index string `json:"index,omitempty"`
	goldenDiagnosis
}

type goldenDiagnosis struct {
	Cause              report.Kind        `json:"cause"`
	Class              string             `json:"class"`
	Keys               []string           `json:"keys"`
	Severity           report.Severity    `json:"severity"`
	Share              float64            `json:"share"`
	PeakUnitsPerSecond float64            `json:"peak_units_per_second"`
	Fix                report.AdviceKind  `json:"fix"`
	SuffixCount        int                `json:"suffix_count,omitempty"`
	Example            string             `json:"example,omitempty"`
	Capacity           *goldenCapacity    `json:"capacity,omitempty"`
	After              *goldenAfter       `json:"after,omitempty"`
	Explains           []report.Explained `json:"explains"`
}

type goldenCapacity struct {
	Limit          report.CapacityLimit `json:"limit"`
	Resource       string               `json:"resource"`
	Inferred       bool                 `json:"inferred,omitempty"`
	Throttled      uint64               `json:"throttled"`
	ThrottledShare float64              `json:"throttled_share"`
}

// capacityLimitOf is a capacity diagnosis's limit, "" for other causes.
func capacityLimitOf(d report.Diagnosis) report.CapacityLimit {
	if d.Capacity == nil {
		return ""
	}
	return d.Capacity.Limit
}

type goldenAfter struct {
	Keys               int             `json:"keys,omitempty"`
	MaxShare           float64         `json:"max_share"`
	PeakUnitsPerSecond float64         `json:"peak_units_per_second"`
	UnderThreshold     bool            `json:"under_threshold"`
	UnderCeiling       bool            `json:"under_ceiling"`
	Severity           report.Severity `json:"severity"`
}

type goldenQuiet struct {
	Reason report.QuietReason `json:"reason"`
	Key    string             `json:"key"`
	Class  string             `json:"class"`
}

type goldenFinding struct {
	Kind               report.Kind       `json:"kind"`
	Key                string            `json:"key,omitempty"`
	Class              string            `json:"class,omitempty"`
	Severity           report.Severity   `json:"severity"`
	Share              float64           `json:"share"`
	UnitsPerSecond     float64           `json:"units_per_second"`
	PeakUnitsPerSecond float64           `json:"peak_units_per_second,omitempty"`
	Recommendation     report.AdviceKind `json:"recommendation"`
}

func toGolden(f report.Finding) goldenFinding {
	g := goldenFinding{
		Kind: f.Kind, Key: f.Key, Class: f.Class, Severity: f.Severity,
		Share: round(f.Share, 1e-4), UnitsPerSecond: round(f.UnitsPerSecond, 1e-3), PeakUnitsPerSecond: round(f.PeakUnitsPerSecond, 1e-3),
	}
	if r := f.Recommendation; r != nil {
		g.Recommendation = r.Kind
	}
	return g
}

func toGoldenDiagnosis(d report.Diagnosis) goldenDiagnosis {
	g := goldenDiagnosis{
		Cause: d.Cause, Class: d.Class, Keys: d.Keys, Severity: d.Severity,
		Share: round(d.Share, 1e-4), PeakUnitsPerSecond: round(d.PeakUnitsPerSecond, 1e-3),
		Fix: d.Fix.Kind, SuffixCount: d.Fix.SuffixCount, Example: d.Fix.Example, Explains: d.Explains,
	}
	if cp := d.Capacity; cp != nil {
		g.Capacity = &goldenCapacity{Limit: cp.Limit, Resource: cp.Resource, Inferred: cp.Inferred, Throttled: cp.Throttled,
			ThrottledShare: round(cp.ThrottledShare, 1e-4)}
	}
	if a := d.After; a != nil {
		g.After = &goldenAfter{Keys: a.Keys, MaxShare: round(a.MaxShare, 1e-4), PeakUnitsPerSecond: round(a.PeakUnitsPerSecond, 1e-3),
			UnderThreshold: a.UnderThreshold, UnderCeiling: a.UnderCeiling, Severity: a.Severity}
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

// near compares a golden share within 1 percentage point and a rate within
// 2 %, the slack a sketch's estimates need.
func nearShare(a, b float64) bool { return math.Abs(a-b) <= 0.01 }

func nearRate(a, b float64) bool { return math.Abs(a-b) <= 0.02*math.Max(math.Abs(b), 1) }

// sameFinding compares strings exactly and floats within the slack.
func sameFinding(a, b goldenFinding) bool {
	fa, fb := a, b
	fa.Share, fb.Share, fa.UnitsPerSecond, fb.UnitsPerSecond, fa.PeakUnitsPerSecond, fb.PeakUnitsPerSecond = 0, 0, 0, 0, 0, 0
	return fa == fb && nearShare(a.Share, b.Share) && nearRate(a.UnitsPerSecond, b.UnitsPerSecond) && nearRate(a.PeakUnitsPerSecond, b.PeakUnitsPerSecond)
}

// sameDiagnosis compares strings, severities, fixes and what it explains
// exactly, and floats within the slack.
func sameDiagnosis(a, b goldenDiagnosis) bool {
	if a.Cause != b.Cause || a.Class != b.Class || !slices.Equal(a.Keys, b.Keys) || a.Severity != b.Severity ||
		a.Fix != b.Fix || a.SuffixCount != b.SuffixCount || a.Example != b.Example ||
		!nearShare(a.Share, b.Share) || !nearRate(a.PeakUnitsPerSecond, b.PeakUnitsPerSecond) ||
		(a.After == nil) != (b.After == nil) || (a.Capacity == nil) != (b.Capacity == nil) {
		return false
	}
	if a.Capacity != nil {
		x, y := *a.Capacity, *b.Capacity
		if x.Limit != y.Limit || x.Resource != y.Resource || x.Inferred != y.Inferred || !nearShare(x.ThrottledShare, y.ThrottledShare) {
			return false
		}
	}
	if a.After != nil {
		x, y := *a.After, *b.After
		if x.Keys != y.Keys || x.UnderThreshold != y.UnderThreshold || x.UnderCeiling != y.UnderCeiling || x.Severity != y.Severity ||
			!nearShare(x.MaxShare, y.MaxShare) || !nearRate(x.PeakUnitsPerSecond, y.PeakUnitsPerSecond) {
			return false
		}
	}
	ea, eb := slices.Clone(a.Explains), slices.Clone(b.Explains)
	byExplained := func(x, y report.Explained) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Class, y.Class), cmp.Compare(x.Key, y.Key))
	}
	slices.SortFunc(ea, byExplained)
	slices.SortFunc(eb, byExplained)
	return slices.Equal(ea, eb)
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
			// Steps are evaluations one second apart in event time.
			rep, _ := tr.Evaluate(stepped(snapshot(t, evs), i))
			gs := goldenStep{Flagged: []goldenFlag{}}
			for _, f := range tr.Flagged() {
				gs.Flagged = append(gs.Flagged, goldenFlag{Table: f.Table, Index: f.Index, goldenDiagnosis: toGoldenDiagnosis(f.Diagnosis)})
			}
			checkTrackerReport(t, i+1, rep, tr.Flagged())
			g.Steps = append(g.Steps, gs)
		}
		return g
	}
	var events []traffic.Event
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
	checkReport(t, rep, s)
	checkExpectations(t, rep, sc.Expect)
	var g golden
	for _, tr := range rep.Tables {
		gt := goldenTable{Table: tr.Table, Index: tr.Index, Events: tr.Events, Diagnoses: []goldenDiagnosis{}, Findings: []goldenFinding{}, ThrottledKeys: tr.ThrottledKeys}
		for _, d := range tr.Diagnoses {
			gt.Diagnoses = append(gt.Diagnoses, toGoldenDiagnosis(d))
		}
		for _, f := range tr.Findings {
			gt.Findings = append(gt.Findings, toGolden(f))
		}
		if q := tr.Quiet; q != nil {
			gt.Quiet = &goldenQuiet{Reason: q.Reason, Key: q.Key, Class: q.Class}
		}
		g.Tables = append(g.Tables, gt)
	}
	return g
}

// checkExpectations asserts the scenario's hand-written spec: exactly the
// expected diagnoses at warning or above, with their severity, fix and
// shard count.
func checkExpectations(t *testing.T, r report.Report, want []expectation) {
	t.Helper()
	var got []expectation
	for _, tr := range r.Tables {
		for _, d := range tr.Diagnoses {
			if d.Severity.Pages() {
				got = append(got, expectation{Table: tr.Table, Index: tr.Index, Cause: d.Cause, Class: d.Class, Key: d.Key(),
					Severity: d.Severity, Fix: d.Fix.Kind, SuffixCount: d.Fix.SuffixCount, Limit: capacityLimitOf(d)})
			}
		}
	}
	order := func(a, b expectation) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Index, b.Index), cmp.Compare(a.Cause, b.Cause),
			cmp.Compare(a.Class, b.Class), cmp.Compare(a.Key, b.Key))
	}
	want = slices.Clone(want)
	slices.SortFunc(got, order)
	slices.SortFunc(want, order)
	if !slices.Equal(got, want) {
		t.Errorf("diagnoses at warning or above differ from the scenario's expect:\n got %+v\nwant %+v", got, want)
	}
}

// checkReport asserts what holds for every report, whatever the traffic:
//
//   - every finding is explained by exactly one diagnosis, and carries that
//     diagnosis's fix; every diagnosis explains at least one finding and has
//     one fix with a text that names its key;
//   - a diagnosis's severity is its findings' most severe, and each key
//     finding's severity follows from its peak against the ceiling;
//   - a shard count is max(2, ceil(peak / (limit × headroom))) of the key
//     it was sized on;
//   - diagnoses and findings are in the documented order; nothing is nil
//     that would marshal as null;
//   - quiet is there exactly when the heaviest key is at or above the
//     threshold and no diagnosis is at warning or above.
func checkReport(t *testing.T, r report.Report, s Settings) {
	t.Helper()
	for _, tr := range r.Tables {
		name := tr.Table + "/" + tr.Index
		if tr.TopKeys == nil || tr.Findings == nil || tr.Diagnoses == nil || tr.Classes == nil {
			t.Errorf("%s: nil top_keys, classes, findings or diagnoses would marshal as null", name)
		}
		if !slices.IsSortedFunc(tr.Findings, compareFindings) {
			t.Errorf("%s: findings out of order", name)
		}
		if !slices.IsSortedFunc(tr.Diagnoses, compareDiagnoses) {
			t.Errorf("%s: diagnoses out of order", name)
		}
		explainedBy := map[report.Explained]int{}
		paging := false
		for di, d := range tr.Diagnoses {
			paging = paging || d.Severity.Pages()
			if len(d.Explains) == 0 || len(d.Keys) == 0 && d.Cause != report.KindCapacity || d.Summary == "" ||
				(d.Cause == report.KindCapacity) != (d.Capacity != nil) {
				t.Errorf("%s %s: no findings explained, no keys or no summary: %+v", name, d.Cause, d)
			}
			if d.Fix.Kind == "" || d.Fix.Text == "" {
				t.Errorf("%s %s: no fix: %+v", name, d.Cause, d.Fix)
			}
			if d.KeyType() == report.PartitionKey && d.Fix.Kind != report.AdviceRekey && !strings.Contains(d.Fix.Text, d.Key()) {
				t.Errorf("%s %s: fix %q does not name key %q", name, d.Cause, d.Fix.Text, d.Key())
			}
			if n := d.Fix.SuffixCount; n != 0 && n < 2 {
				t.Errorf("%s %s %q: suffix count %d", name, d.Cause, d.Key(), n)
			}
			if key := d.Cause == report.KindHotKey || d.Cause == report.KindPartitionLimit; key && d.Fix.SuffixCount > 0 {
				if want := max(2, ceilInt(d.PeakUnitsPerSecond/(d.Limit*s.Headroom))); d.Fix.SuffixCount != want {
					t.Errorf("%s %q: suffix count %d for a peak of %v, want %d", name, d.Key(), d.Fix.SuffixCount, d.PeakUnitsPerSecond, want)
				}
			}
			if d.Cause == report.KindPartitionLimit && d.PeakUnitsPerSecond < s.LimitFraction*d.Limit {
				t.Errorf("%s %q: cause partition_limit at a peak of %v", name, d.Key(), d.PeakUnitsPerSecond)
			}
			sev := report.SeverityInfo
			for _, e := range d.Explains {
				if prev, dup := explainedBy[e]; dup {
					t.Errorf("%s: %+v explained by diagnoses %d and %d", name, e, prev, di)
				}
				explainedBy[e] = di
				for _, f := range tr.Findings {
					if f.Kind == e.Kind && f.Key == e.Key && f.Class == e.Class {
						sev = sev.Max(f.Severity)
					}
				}
			}
			if d.Severity != sev {
				t.Errorf("%s %s %q: severity %s, its findings' most severe is %s", name, d.Cause, d.Key(), d.Severity, sev)
			}
		}
		for _, f := range tr.Findings {
			di, ok := explainedBy[report.Explained{Kind: f.Kind, Key: f.Key, Class: f.Class}]
			if !ok {
				t.Errorf("%s: finding %s %q (%s) explained by no diagnosis", name, f.Kind, f.Key, f.Class)
				continue
			}
			if f.Recommendation == nil || *f.Recommendation != tr.Diagnoses[di].Fix {
				t.Errorf("%s: finding %s %q carries %+v, its diagnosis's fix is %+v", name, f.Kind, f.Key, f.Recommendation, tr.Diagnoses[di].Fix)
			}
			if f.Evidence == nil || f.Evidence.Summary == "" {
				t.Errorf("%s %s %q: no evidence", name, f.Kind, f.Key)
			}
			if f.Kind == report.KindHotKey || f.Kind == report.KindPartitionLimit {
				limit := s.WriteLimit
				if f.Class == "read" {
					limit = s.ReadLimit
				}
				want := report.SeverityInfo
				switch {
				case f.PeakUnitsPerSecond >= s.LimitFraction*limit || f.Evidence != nil && f.Evidence.KeyRangeThrottled > 0:
					want = report.SeverityCritical
				case f.PeakUnitsPerSecond >= s.WarnFraction*limit:
					want = report.SeverityWarning
				}
				if f.Severity != want {
					t.Errorf("%s %s %q: severity %s at a peak of %v, want %s", name, f.Kind, f.Key, f.Severity, f.PeakUnitsPerSecond, want)
				}
			}
		}
		var top report.TopKey
		for _, k := range tr.TopKeys {
			if k.Share > top.Share {
				top = k
			}
			if k.PeakUnitsPerSecond < k.UnitsPerSecond*(1-1e-9) {
				t.Errorf("%s %q: peak %v below the mean rate %v", name, k.Key, k.PeakUnitsPerSecond, k.UnitsPerSecond)
			}
		}
		if want := !paging && top.Share >= s.Threshold; want != (tr.Quiet != nil) {
			t.Errorf("%s: quiet %+v, heaviest key %q at %v with paging diagnoses %v", name, tr.Quiet, top.Key, top.Share, paging)
		}
	}
}

// checkTrackerReport asserts the Tracker's report shows exactly its flags.
func checkTrackerReport(t *testing.T, step int, r report.Report, flags []report.Flag) {
	t.Helper()
	n := 0
	for _, tr := range r.Tables {
		n += len(tr.Diagnoses)
	}
	if n != len(flags) {
		t.Errorf("step %d: report has %d diagnoses, %d flagged", step, n, len(flags))
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
		compareGoldenDiagnoses(t, name, g.Diagnoses, w.Diagnoses)
		compareGoldenFindings(t, name, g.Findings, w.Findings)
		if !slices.Equal(g.ThrottledKeys, w.ThrottledKeys) {
			t.Errorf("%s: throttled keys %v, want %v", name, g.ThrottledKeys, w.ThrottledKeys)
		}
		if (g.Quiet == nil) != (w.Quiet == nil) || g.Quiet != nil && *g.Quiet != *w.Quiet {
			t.Errorf("%s: quiet %+v, want %+v", name, g.Quiet, w.Quiet)
		}
	}
	for i, w := range want.Steps {
		name := fmt.Sprintf("step %d", i+1)
		byID := func(a, b goldenFlag) int {
			return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Index, b.Index),
				cmp.Compare(a.Cause, b.Cause), cmp.Compare(a.Class, b.Class), slices.Compare(a.Keys, b.Keys))
		}
		g, wf := slices.Clone(got.Steps[i].Flagged), slices.Clone(w.Flagged)
		slices.SortFunc(g, byID)
		slices.SortFunc(wf, byID)
		if len(g) != len(wf) {
			t.Errorf("%s: flagged %+v, want %+v", name, g, wf)
			continue
		}
		for j := range wf {
			if g[j].Table != wf[j].Table || g[j].Index != wf[j].Index || !sameDiagnosis(g[j].goldenDiagnosis, wf[j].goldenDiagnosis) {
				t.Errorf("%s: flag %d = %+v, want %+v", name, j, g[j], wf[j])
			}
		}
	}
}

// compareGoldenDiagnoses matches diagnoses by cause, class and first key:
// their order depends on estimates (checkReport checks the order itself).
func compareGoldenDiagnoses(t *testing.T, name string, got, want []goldenDiagnosis) {
	t.Helper()
	first := func(d goldenDiagnosis) string {
		if len(d.Keys) == 0 {
			return ""
		}
		return d.Keys[0]
	}
	byID := func(a, b goldenDiagnosis) int {
		return cmp.Or(cmp.Compare(a.Cause, b.Cause), cmp.Compare(a.Class, b.Class), cmp.Compare(first(a), first(b)))
	}
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	if len(got) != len(want) {
		t.Errorf("%s: %d diagnoses, want %d:\n got %+v\nwant %+v", name, len(got), len(want), got, want)
		return
	}
	for j := range want {
		if !sameDiagnosis(got[j], want[j]) {
			t.Errorf("%s: diagnosis %d\n got %+v\nwant %+v", name, j, got[j], want[j])
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
