package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPrometheusScrapesQueriesAndAlerts(t *testing.T) {
	var scrapes atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		n := scrapes.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP testenv_scrapes_total Scrapes served.\n# TYPE testenv_scrapes_total counter\ntestenv_scrapes_total %d\n", n)
		fmt.Fprintf(w, "# HELP testenv_level A level.\n# TYPE testenv_level gauge\ntestenv_level{table=\"orders\"} 7\n")
	}))
	defer target.Close()

	rules := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(rules, []byte(`groups:
  - name: test
    rules:
      - record: table:testenv_level:max
        expr: max by (table) (testenv_level)
      - alert: LevelHigh
        expr: testenv_level > 5
        labels: {severity: warning}
        annotations: {summary: "level of {{ $labels.table }} is {{ $value }}"}
`), 0o644); err != nil {
		t.Fatal(err)
	}

	var p *Prometheus
	t.Run("start", func(t *testing.T) {
		p = StartPrometheus(t, []string{strings.TrimPrefix(target.URL, "http://")}, WithRuleFiles(rules), WithJobName("testenv"))
		ctx := context.Background()

		// The target is scraped every second: the level shows up, with the
		// job label we asked for.
		var got []Sample
		err := p.WaitFor(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
			var err error
			got, err = p.Query(ctx, `testenv_level`)
			return len(got) == 1, err
		})
		if err != nil {
			t.Fatalf("testenv_level never scraped: %v\n%s", err, p.Output())
		}
		if got[0].Value != 7 || got[0].Metric["job"] != "testenv" || got[0].Metric["table"] != "orders" {
			t.Errorf("testenv_level = %+v, want 7 with job=testenv, table=orders", got[0])
		}

		targets, err := p.Targets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(targets) != 1 || targets[0].Health != "up" {
			t.Errorf("targets = %+v, want one target up", targets)
		}

		// A query that does not parse is an APIError of type bad_data.
		_, err = p.Query(ctx, `sum(testenv_level`)
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.Type != "bad_data" {
			t.Errorf("Query(bad PromQL) error = %v, want an APIError of type bad_data", err)
		}

		// Range queries count series.
		n, err := p.QueryRange(ctx, `testenv_level`, time.Now(), time.Minute, time.Second)
		if err != nil || n != 1 {
			t.Errorf("QueryRange = %d, %v; want 1 series", n, err)
		}

		// Rules are evaluated every second: the recording rule records and
		// the alert, with no for:, fires with its template expanded.
		err = p.WaitFor(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
			alerts, err := p.Alerts(ctx)
			if err != nil {
				return false, err
			}
			for _, a := range alerts {
				if a.Labels["alertname"] == "LevelHigh" && a.State == "firing" {
					if want := "level of orders is 7"; a.Annotations["summary"] != want {
						return false, fmt.Errorf("summary %q, want %q", a.Annotations["summary"], want)
					}
					return true, nil
				}
			}
			return false, fmt.Errorf("alerts: %+v", alerts)
		})
		if err != nil {
			t.Fatalf("LevelHigh never fired: %v", err)
		}
		rec, err := p.Query(ctx, `table:testenv_level:max`)
		if err != nil || len(rec) != 1 || rec[0].Value != 7 {
			t.Errorf("table:testenv_level:max = %+v, %v; want 7", rec, err)
		}
		health, err := p.Rules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(health) != 2 {
			t.Errorf("rules = %+v, want 2", health)
		}
		for _, r := range health {
			if r.Health == "err" {
				t.Errorf("rule %s: %s", r.Name, r.LastError)
			}
		}
	})
	if p == nil {
		return
	}
	// The subtest's cleanup killed the server.
	select {
	case <-p.proc.exited:
	case <-time.After(time.Minute):
		t.Fatal("prometheus still running after cleanup")
	}
}
