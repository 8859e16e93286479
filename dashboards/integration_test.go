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

// corePanels must show data while hotkeyd demo runs: the traffic, the top
// keys and the findings.
var corePanels = map[string][]string{
	"hotkeyd-overview.json": {
		"Tables", "Events/s", "Hot findings",
		"Hot keys now, with advice", "Top keys' share now",
		"Events per second by table and class", "Units per second by table and class",
		"Top keys' share over time", "Top keys' units per second", "Distinct partition keys",
	},
	"hotkeyd-table.json": {
		"Units/s", "Events/s", "Distinct partition keys", "Hottest key's share",
		"Findings and advice", "Top keys' share now",
		"Key share over time", "Key units per second", "Units per second by class",
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
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
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
	err := prom.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		s, err := prom.Query(ctx, `sum(rate(hotkeyd_events_total[5s])) > 0 and on() count(hotkeyd_key_share) > 0`)
		return len(s) > 0, err
	})
	if err != nil {
		targets, _ := prom.Targets(ctx)
		t.Fatalf("no demo traffic in Prometheus: %v; targets %+v\n%s", err, targets, prom.Output())
	}

	table := planted[0].table
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
					err := prom.WaitFor(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
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
		err = prom.WaitFor(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
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

	t.Run("HotKey alert for the planted key", func(t *testing.T) {
		var last []testenv.Alert
		err := prom.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			alerts, err := prom.Alerts(ctx)
			if err == nil {
				last = alerts
			}
			for _, a := range alerts {
				for _, p := range planted {
					if a.Labels["alertname"] == "HotKey" && a.Labels["table"] == p.table && a.Labels["key"] == p.key &&
						(a.State == "pending" || a.State == "firing") {
						if !strings.Contains(a.Annotations["description"], p.key) || a.Labels["severity"] != "warning" {
							return false, fmt.Errorf("HotKey alert %+v lacks the key or severity", a)
						}
						return true, nil
					}
				}
			}
			return false, err
		})
		if err != nil {
			t.Errorf("no HotKey alert for planted keys %v: %v; active alerts: %+v", planted, err, last)
		}
	})
	t.Logf("wall time %s", time.Since(start).Round(time.Millisecond))
}
