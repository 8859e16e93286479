package dashboards

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The committed JSON is what the code generates.
func TestGeneratedFilesInSync(t *testing.T) {
	for name, d := range All() {
		want, err := d.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date: run go generate ./dashboards", name)
		}
	}
}

// jsonDashboard is the committed file read back without this package's
// types, the way Grafana reads it.
type jsonDashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	ID            any    `json:"id"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []jsonPanel `json:"panels"`
}

type jsonPanel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	GridPos     struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Instant    bool   `json:"instant"`
		Format     string `json:"format"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
	FieldConfig *struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Panels []jsonPanel `json:"panels"`
}

func readDashboard(t *testing.T, name string) jsonDashboard {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var d jsonDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

var (
	rateRE     = regexp.MustCompile(`\b(rate|irate|increase)\([^\[]*\[([^\]]*)\]`)
	varRE      = regexp.MustCompile(`\$\{?(\w+)`)
	builtinVar = map[string]bool{"__rate_interval": true, "__interval": true, "__range": true}
)

// A lint in the spirit of grafana's dashboard-linter: datasource variable,
// job and instance variables honoured by every query, $__rate_interval in
// every rate, a description and a unit on every panel, no overlapping or
// off-grid panels, and every variable used defined.
func TestDashboardLint(t *testing.T) {
	uids := map[string]bool{}
	for name := range All() {
		t.Run(name, func(t *testing.T) {
			d := readDashboard(t, name)
			if d.UID == "" || uids[d.UID] {
				t.Errorf("uid %q empty or not unique", d.UID)
			}
			uids[d.UID] = true
			if d.ID != nil {
				t.Errorf("id %v, want null so that import creates the dashboard", d.ID)
			}
			if d.SchemaVersion < 36 {
				t.Errorf("schemaVersion %d predates datasource references by uid", d.SchemaVersion)
			}
			vars := map[string]bool{}
			for _, v := range d.Templating.List {
				vars[v.Name] = true
			}
			if len(d.Templating.List) == 0 || d.Templating.List[0].Name != "datasource" || d.Templating.List[0].Type != "datasource" || d.Templating.List[0].Query != "prometheus" {
				t.Errorf("first variable is not a prometheus datasource variable named datasource")
			}
			for _, v := range []string{"job", "instance"} {
				if !vars[v] {
					t.Errorf("no %s variable", v)
				}
			}

			ids := map[int]bool{}
			type cell struct{ x, y int }
			used := map[cell]string{}
			types := map[string]bool{}
			for _, p := range d.Panels {
				if ids[p.ID] {
					t.Errorf("panel %q: duplicate id %d", p.Title, p.ID)
				}
				ids[p.ID] = true
				g := p.GridPos
				if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
					t.Errorf("panel %q: gridPos %+v off the 24-column grid", p.Title, g)
				}
				for x := g.X; x < g.X+g.W; x++ {
					for y := g.Y; y < g.Y+g.H; y++ {
						if other, ok := used[cell{x, y}]; ok {
							t.Errorf("panel %q overlaps %q at %d,%d", p.Title, other, x, y)
						}
						used[cell{x, y}] = p.Title
					}
				}
				if p.Type == "row" {
					continue
				}
				types[p.Type] = true
				if p.Description == "" {
					t.Errorf("panel %q has no description", p.Title)
				}
				if p.Datasource == nil || p.Datasource.UID != "${datasource}" || p.Datasource.Type != "prometheus" {
					t.Errorf("panel %q does not use the datasource variable", p.Title)
				}
				if p.FieldConfig == nil || (p.FieldConfig.Defaults.Unit == "" && p.Type != "table") {
					t.Errorf("panel %q has no unit", p.Title)
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
				for _, tg := range p.Targets {
					where := p.Title + " " + tg.RefID
					if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
						t.Errorf("%s: target does not use the datasource variable", where)
					}
					if !strings.Contains(tg.Expr, `job=~"$job"`) || !strings.Contains(tg.Expr, `instance=~"$instance"`) {
						t.Errorf("%s: %s ignores the job or instance variable", where, tg.Expr)
					}
					for _, m := range rateRE.FindAllStringSubmatch(tg.Expr, -1) {
						if m[2] != "$__rate_interval" {
							t.Errorf("%s: %s uses [%s], want [$__rate_interval]", where, m[1], m[2])
						}
					}
					for _, m := range varRE.FindAllStringSubmatch(tg.Expr, -1) {
						if !vars[m[1]] && !builtinVar[m[1]] {
							t.Errorf("%s: variable $%s is not defined", where, m[1])
						}
					}
					if (p.Type == "table" || p.Type == "bargauge" || p.Type == "stat") && !tg.Instant {
						t.Errorf("%s: a %s panel should run an instant query", where, p.Type)
					}
					if p.Type == "table" && tg.Format != "table" {
						t.Errorf("%s: table panel query format %q, want table", where, tg.Format)
					}
				}
			}
			for _, typ := range []string{"timeseries", "bargauge", "table", "stat"} {
				if !types[typ] {
					t.Errorf("no %s panel", typ)
				}
			}
		})
	}
}

func TestTableDashboardVariables(t *testing.T) {
	d := readDashboard(t, "hotkeyd-table.json")
	var names []string
	for _, v := range d.Templating.List {
		names = append(names, v.Name)
	}
	for _, want := range []string{"datasource", "table", "class"} {
		if !slices.Contains(names, want) {
			t.Errorf("variables %v lack %s", names, want)
		}
	}
	// Variables are defined before the variables whose queries use them.
	for i, v := range d.Templating.List {
		q, _ := json.Marshal(v.Query)
		for _, m := range varRE.FindAllStringSubmatch(string(q), -1) {
			if j := slices.Index(names, m[1]); j < 0 || j >= i {
				t.Errorf("variable %s uses $%s, defined after it or not at all", v.Name, m[1])
			}
		}
	}
}

func TestOverviewCorePanels(t *testing.T) {
	d := readDashboard(t, "hotkeyd-overview.json")
	byType := map[string][]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			byType[p.Type] = append(byType[p.Type], tg.Expr)
		}
	}
	has := func(typ, metric string) bool {
		return slices.ContainsFunc(byType[typ], func(e string) bool { return strings.Contains(e, metric) })
	}
	for _, c := range []struct{ typ, metric string }{
		{"table", "hotkeyd_diagnosis"},
		{"stat", "hotkeyd_diagnosis"},
		{"bargauge", "hotkeyd_key_share"},
		{"bargauge", "hotkeyd_key_peak_units_per_second"},
		{"timeseries", "hotkeyd_events_total"},
		{"timeseries", "hotkeyd_units_total"},
		{"timeseries", "hotkeyd_key_share"},
		{"timeseries", "hotkeyd_partition_keys_distinct"},
		{"timeseries", "hotkeyd_stream_iterator_age_seconds"},
		{"timeseries", "hotkeyd_source_errors_total"},
	} {
		if !has(c.typ, c.metric) {
			t.Errorf("overview has no %s panel on %s", c.typ, c.metric)
		}
	}
}

// TestCeilingFromConfig checks that every query drawing a busiest second
// against one partition's ceiling divides by the ceiling each instance is
// configured with (hotkeyd_partition_limit_units_per_second), never by the
// default 1000 or 3000, which read_limit and write_limit can change.
func TestCeilingFromConfig(t *testing.T) {
	n := 0
	for name, d := range All() {
		for _, q := range d.Queries() {
			if !strings.Contains(q.Expr, "hotkeyd_key_peak_units_per_second") || !strings.Contains(q.Expr, "/") {
				continue
			}
			n++
			if strings.Contains(q.Expr, "/ 1000") || strings.Contains(q.Expr, "/ 3000") || !strings.Contains(q.Expr, "hotkeyd_partition_limit_units_per_second") {
				t.Errorf("%s: %q divides by a fixed ceiling, not the configured one", name, q.Expr)
			}
		}
	}
	if n == 0 {
		t.Fatal("no query draws a busiest second against the ceiling")
	}
}

// metricRE finds the metric names of a query.
var metricRE = regexp.MustCompile(`\bhotkeyd_[a-z_]+\b`)

// TestQueriesNameServedMetrics: every metric a dashboard query names is
// one the daemon serves, as the metrics references list them
// (export/METRICS.md, which a test of the daemon holds to the metrics it
// registers, docs/metrics.md and the readers' pages): a renamed or
// proposed metric fails here, not as an empty panel.
func TestQueriesNameServedMetrics(t *testing.T) {
	served := map[string]bool{}
	for _, path := range []string{"../export/METRICS.md", "../docs/metrics.md", "../docs/streams.md", "../docs/kinesis.md", "../docs/cloudtrail.md"} {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// A row's first cell names one metric or several: `a`, `b`.
		for _, row := range regexp.MustCompile("(?m)^\\| (`hotkeyd_[^|]*)\\|").FindAllStringSubmatch(string(doc), -1) {
			for _, m := range metricRE.FindAllString(row[1], -1) {
				served[m] = true
			}
		}
	}
	if len(served) < 20 {
		t.Fatalf("export/METRICS.md lists %d metrics", len(served))
	}
	named := 0
	for name, d := range All() {
		for _, q := range d.Queries() {
			for _, m := range metricRE.FindAllString(q.Expr, -1) {
				named++
				if !served[m] {
					t.Errorf("%s %s: %s is not a metric the daemon serves (export/METRICS.md)", name, q.Where, m)
				}
			}
		}
	}
	if named == 0 {
		t.Fatal("no query names a hotkeyd metric")
	}
}
