package dashboards

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// ruleFile is the alert and recording rule file the integration test loads.
var ruleFile = filepath.Join("..", "deploy", "prometheus", "hotkeyd-rules.yml")

// forRE matches the for: durations of the rule file.
var forRE = regexp.MustCompile(`(?m)^(\s+for:\s+)\S+\s*$`)

// shortRules copies the rule file with every for: duration rewritten to d,
// so that the test sees alerts go pending and fire in seconds instead of
// minutes. Nothing else changes.
func shortRules(t *testing.T, d string) string {
	t.Helper()
	b, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	n := len(forRE.FindAll(b, -1))
	if n == 0 {
		t.Fatalf("%s has no for: durations to shorten", ruleFile)
	}
	out := forRE.ReplaceAll(b, []byte("${1}"+d+"\n"))
	path := filepath.Join(t.TempDir(), "hotkeyd-rules.yml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// substitute replaces the dashboards' template variables the way Grafana
// does before it sends a query: All for job, instance and class, the given
// table, and a rate interval that fits the test's 1 s scrapes.
func substitute(expr, table string) string {
	return strings.NewReplacer(
		"$__rate_interval", "5s",
		"${__rate_interval}", "5s",
		`"$job"`, `".*"`,
		`"$instance"`, `".*"`,
		`"$class"`, `".*"`,
		`"$table"`, fmt.Sprintf("%q", table),
	).Replace(expr)
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// variableQuery turns Grafana's label_values(selector, label) into the
// PromQL Grafana runs for it: the series of selector grouped by label.
func variableQuery(t *testing.T, q string) (expr, label string) {
	t.Helper()
	m := labelValuesRE.FindStringSubmatch(q)
	if m == nil {
		t.Fatalf("variable query %q is not label_values(selector, label)", q)
	}
	return fmt.Sprintf("group by (%s) (%s)", m[2], m[1]), m[2]
}

// alertForCause names the alert that fires for each cause of
// hotkeyd_diagnosis.
var alertForCause = map[string]string{
	"hot_key":          "HotKey",
	"partition_limit":  "HotKeyNearPartitionLimit",
	"low_cardinality":  "LowCardinalityPartitionKey",
	"time_ordered_key": "TimeOrderedPartitionKey",
	"hot_partition":    "HotPartition",
	"capacity":         "TableShortOfCapacity",
}

// corePanels must show data while hotkeyd demo runs: the traffic, the top
// keys, their peaks and the diagnoses.
var corePanels = map[string][]string{
	"hotkeyd-overview.json": {
		"Tables", "Events/s", "Critical", "Warnings",
		"Diagnoses now, with the fix", "Top keys' share now", "Top keys' busiest second against the ceiling",
		"Events per second by table and class", "Units per second by table and class",
		"Top keys' share over time", "Top keys' units per second", "Top keys' busiest second against the ceiling over time",
		"Distinct partition keys", "Throttled calls per second", "Calls refused by throttling",
	},
	"hotkeyd-table.json": {
		"Units/s", "Events/s", "Distinct partition keys", "Hottest key's share", "Busiest key against the ceiling",
		"Diagnoses and fixes", "Evidence", "Top keys' share now", "Top keys' busiest second now",
		"Key share over time", "Key units per second", "Key busiest second against the ceiling", "Units per second by class",
	},
}

// TestDashboardsAndAlertsAgainstPrometheus runs hotkeyd demo, scrapes it
// with a real Prometheus loading the alert rules, and checks every
// dashboard query and rule expression there.
func TestDashboardsAndAlertsAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts hotkeyd and Prometheus")
	}
	promtool := testenv.RequireCommand(t, "promtool")
	testenv.RequireCommand(t, "prometheus")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()

	h, planted := startDemo(t)
	target := strings.TrimPrefix(h.URL, "http://")

	prom := testenv.StartPrometheus(t, []string{target}, testenv.WithRuleFiles(shortRules(t, "2s")))

	// A scrape of the demo is clean for promtool check metrics.
	t.Run("promtool check metrics", func(t *testing.T) {
		code, body := h.Get(t, "/metrics")
		if code != 200 {
			t.Fatalf("GET /metrics: %d", code)
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		out, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) != 0 {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	})

	// Wait until Prometheus has scraped traffic and the detector's top keys.
	err := prom.WaitFor(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		s, err := prom.Query(ctx, `sum(rate(hotkeyd_events_total[5s])) > 0 and on() count(hotkeyd_key_share) > 0`)
		return len(s) > 0, err
	})
	if err != nil {
		targets, _ := prom.Targets(ctx)
		t.Fatalf("no demo traffic in Prometheus: %v; targets %+v\n%s", err, targets, prom.Output())
	}

	table := ""
	for _, p := range planted {
		if p.Cause == "hot_key" && p.Severity != "info" && p.Index == "" {
			table = p.Table
			break
		}
	}
	t.Run("dashboard queries", func(t *testing.T) {
		for name, d := range All() {
			for _, q := range d.Queries() {
				expr := substitute(q.Expr, table)
				if q.Variable {
					var label string
					expr, label = variableQuery(t, expr)
					s, err := prom.Query(ctx, expr)
					if err != nil {
						t.Errorf("%s %s: %v", name, q.Where, err)
						continue
					}
					if label == "table" && !slices.ContainsFunc(s, func(s testenv.Sample) bool { return s.Metric["table"] == table }) {
						t.Errorf("%s %s: %s does not list table %q: %v", name, q.Where, expr, table, s)
					}
					continue
				}
				if strings.Contains(expr, "$") {
					t.Errorf("%s %s: variable left after substitution: %s", name, q.Where, expr)
					continue
				}
				// Every query parses and runs, as an instant query and,
				// for time series panels, as the range query Grafana sends.
				s, err := prom.Query(ctx, expr)
				if err != nil {
					t.Errorf("%s %s: %v", name, q.Where, err)
					continue
				}
				if !q.Instant {
					if _, err := prom.QueryRange(ctx, expr, time.Now(), time.Minute, time.Second); err != nil {
						t.Errorf("%s %s: range: %v", name, q.Where, err)
					}
				}
				if slices.Contains(corePanels[name], q.Panel) && len(s) == 0 {
					// The detector publishes on its own tick: give the core
					// panels a few more seconds before calling them empty.
					err := prom.WaitFor(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
						s, err := prom.Query(ctx, expr)
						return len(s) > 0, err
					})
					if err != nil {
						t.Errorf("%s %s: core panel query returns no data: %s: %v", name, q.Where, expr, err)
					}
				}
			}
		}
		for name, titles := range corePanels {
			for _, title := range titles {
				if !slices.ContainsFunc(All()[name].Queries(), func(q Query) bool { return q.Panel == title }) {
					t.Errorf("%s: core panel %q does not exist", name, title)
				}
			}
		}
	})

	t.Run("rule expressions", func(t *testing.T) {
		b, err := os.ReadFile(ruleFile)
		if err != nil {
			t.Fatal(err)
		}
		var rf struct {
			Groups []struct {
				Rules []struct {
					Alert, Record, Expr string
				}
			}
		}
		if err := yaml.Unmarshal(b, &rf); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				n++
				if _, err := prom.Query(ctx, r.Expr); err != nil {
					t.Errorf("rule %s%s: %v", r.Alert, r.Record, err)
				}
			}
		}
		// The loaded copy evaluates without errors, and the recording rule
		// of per-table units records the demo's tables.
		err = prom.WaitFor(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
			rules, err := prom.Rules(ctx)
			if err != nil {
				return false, err
			}
			if len(rules) != n {
				return false, fmt.Errorf("%d rules loaded, want %d", len(rules), n)
			}
			for _, r := range rules {
				if r.Health != "ok" {
					return false, fmt.Errorf("rule %s health %q: %s", r.Name, r.Health, r.LastError)
				}
			}
			s, err := prom.Query(ctx, fmt.Sprintf(`table_class:hotkeyd_units:rate1m{table=%q}`, table))
			return err == nil && len(s) > 0, err
		})
		if err != nil {
			t.Error(err)
		}
	})

	// The planted causes raise one alert each, of their cause, at warning
	// or critical; the planted info diagnosis is on /metrics and raises
	// none.
	t.Run("alerts for the planted diagnoses", func(t *testing.T) {
		type want struct {
			alerts            []string
			table, class, key string
		}
		var wants []want
		var quiet []string
		for _, p := range planted {
			table := p.Table
			if p.Index != "" {
				table += "/" + p.Index
			}
			if p.Severity == "info" {
				quiet = append(quiet, table)
				continue
			}
			w := want{table: table, class: p.Class.String(), key: p.Key}
			for _, cause := range p.Causes() {
				if alertForCause[cause] == "" {
					t.Fatalf("no alert for cause %q", cause)
				}
				w.alerts = append(w.alerts, alertForCause[cause])
			}
			wants = append(wants, w)
		}
		if !slices.ContainsFunc(wants, func(w want) bool { return slices.Contains(w.alerts, "HotKey") && w.key != "" }) {
			t.Fatalf("no planted hot key among %+v", planted)
		}
		var last []testenv.Alert
		var missing []want
		err := prom.WaitFor(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
			alerts, err := prom.Alerts(ctx)
			if err != nil {
				return false, err
			}
			last, missing = alerts, nil
			for _, w := range wants {
				found := slices.ContainsFunc(alerts, func(a testenv.Alert) bool {
					return slices.Contains(w.alerts, a.Labels["alertname"]) && a.Labels["table"] == w.table && a.Labels["class"] == w.class &&
						(w.key == "" || a.Labels["key"] == w.key) && (a.State == "pending" || a.State == "firing")
				})
				if !found {
					missing = append(missing, w)
				}
			}
			return len(missing) == 0, nil
		})
		if err != nil {
			t.Errorf("alerts never went pending or firing: %+v (%v); active alerts: %+v", missing, err, last)
		}
		for _, a := range last {
			if a.Labels["alertname"] == "HotKey" && !strings.Contains(a.Annotations["description"], a.Labels["key"]) {
				t.Errorf("HotKey alert %+v: description does not name the key", a)
			}
			if a.Annotations["runbook_url"] == "" || a.Labels["severity"] == "" {
				t.Errorf("alert %+v has no runbook_url or severity", a)
			}
			if slices.Contains(quiet, a.Labels["table"]) {
				t.Errorf("alert %+v on table %s, whose diagnosis is info only", a, a.Labels["table"])
			}
			// One alert per diagnosis: never two for one table, class and key.
			for _, b := range last {
				if a.Labels["alertname"] != b.Labels["alertname"] && a.Labels["table"] == b.Labels["table"] &&
					a.Labels["class"] == b.Labels["class"] && a.Labels["key"] == b.Labels["key"] && a.Labels["key"] != "" {
					t.Errorf("two alerts for one diagnosis: %v and %v", a.Labels, b.Labels)
				}
			}
		}
		// The info table passes the traffic floor after a few seconds: its
		// diagnosis reaches Prometheus, and no alert follows.
		for _, table := range quiet {
			err := prom.WaitFor(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
				s, err := prom.Query(ctx, fmt.Sprintf(`hotkeyd_diagnosis{table=%q,severity="info"}`, table))
				return len(s) > 0, err
			})
			if err != nil {
				t.Errorf("no info diagnosis on %s in Prometheus: %v", table, err)
			}
			select { // past the shortened for: of every rule
			case <-ctx.Done():
			case <-time.After(3 * time.Second):
			}
			alerts, err := prom.Alerts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range alerts {
				if a.Labels["table"] == table {
					t.Errorf("alert %+v on table %s, whose diagnosis is info only", a.Labels, table)
				}
			}
		}
	})
	t.Logf("wall time %s", time.Since(start).Round(time.Millisecond))
}
