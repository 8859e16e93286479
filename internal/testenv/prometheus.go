package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// RequireCommand returns the path of the named program on PATH. When it is
// missing the test fails if the CI environment variable is set (CI must
// install it: make test-deps) and is skipped with a loud message otherwise.
func RequireCommand(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s is not on PATH (Debian package prometheus; run make test-deps): %v", name, err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	fmt.Fprintf(os.Stderr, "SKIPPING %s: %s\n", t.Name(), msg)
	t.Skip("SKIPPING, " + msg)
	return ""
}

// PromOption changes how Prometheus is started.
type PromOption func(*promConfig)

type promConfig struct {
	ruleFiles []string
	jobName   string
	timeout   time.Duration
}

// WithRuleFiles loads the given rule files (absolute or relative to the
// test's working directory), evaluated every second.
func WithRuleFiles(paths ...string) PromOption {
	return func(c *promConfig) { c.ruleFiles = append(c.ruleFiles, paths...) }
}

// WithJobName sets the scrape job's name, the job label of the targets
// ("hotkeyd" unless set).
func WithJobName(name string) PromOption {
	return func(c *promConfig) { c.jobName = name }
}

// WithStartTimeout bounds how long Prometheus may take to become ready
// (two minutes unless set; a start that fails is seen at once).
func WithStartTimeout(d time.Duration) PromOption {
	return func(c *promConfig) { c.timeout = d }
}

// Prometheus is a real Prometheus server started for one test: it listens
// on a free loopback port, scrapes its targets every second, evaluates its
// rule files every second, keeps its TSDB in a temporary directory and is
// killed when the test ends.
type Prometheus struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:41234.
	URL string

	t      testing.TB
	proc   *child
	client *http.Client
}

// StartPrometheus starts the prometheus binary scraping targets
// ("host:port", over HTTP at /metrics) and waits until it is ready. When the
// binary is missing the test fails in CI and is skipped elsewhere.
func StartPrometheus(t testing.TB, targets []string, opts ...PromOption) *Prometheus {
	t.Helper()
	bin := RequireCommand(t, "prometheus")
	cfg := promConfig{jobName: "hotkeyd", timeout: 2 * time.Minute}
	for _, o := range opts {
		o(&cfg)
	}

	dir := t.TempDir()
	configPath := filepath.Join(dir, "prometheus.yml")
	conf, err := promConfigYAML(cfg, targets)
	if err != nil {
		t.Fatalf("prometheus config: %v", err)
	}
	if err := os.WriteFile(configPath, conf, 0o644); err != nil {
		t.Fatalf("write prometheus config: %v", err)
	}
	p := &Prometheus{
		t:      t,
		client: &http.Client{Timeout: 10 * time.Second},
	}
	start := func(port int) (*child, error) {
		return startChild("prometheus", exec.Command(bin,
			"--config.file="+configPath,
			"--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			"--web.enable-lifecycle",
			"--log.level=warn",
		), 1<<20)
	}
	ready := func(ctx context.Context, port int) error {
		return p.ready(ctx, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	proc, port, err := startOnPort("prometheus", 0, freePort, cfg.timeout, start, ready)
	if err != nil {
		t.Fatal(err)
	}
	p.proc = proc
	p.URL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	t.Cleanup(proc.stop)
	return p
}

func promConfigYAML(cfg promConfig, targets []string) ([]byte, error) {
	rules := make([]string, 0, len(cfg.ruleFiles))
	for _, r := range cfg.ruleFiles {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("rule file %q: %w", r, err)
		}
		rules = append(rules, abs)
	}
	type staticConfig struct {
		Targets []string `yaml:"targets"`
	}
	type scrapeConfig struct {
		JobName        string         `yaml:"job_name"`
		ScrapeInterval string         `yaml:"scrape_interval"`
		ScrapeTimeout  string         `yaml:"scrape_timeout"`
		StaticConfigs  []staticConfig `yaml:"static_configs"`
	}
	doc := struct {
		Global struct {
			ScrapeInterval     string `yaml:"scrape_interval"`
			EvaluationInterval string `yaml:"evaluation_interval"`
		} `yaml:"global"`
		RuleFiles     []string       `yaml:"rule_files,omitempty"`
		ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
	}{RuleFiles: rules}
	doc.Global.ScrapeInterval = "1s"
	doc.Global.EvaluationInterval = "1s"
	doc.ScrapeConfigs = []scrapeConfig{{
		JobName:        cfg.jobName,
		ScrapeInterval: "1s",
		ScrapeTimeout:  "1s",
		StaticConfigs:  []staticConfig{{Targets: targets}},
	}}
	return yaml.Marshal(doc)
}

// ready answers nil when the Prometheus at url says it is ready.
func (p *Prometheus) ready(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/-/ready", nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /-/ready: %s", resp.Status)
	}
	return nil
}

// Output returns what Prometheus logged so far, for failure messages.
func (p *Prometheus) Output() string { return p.proc.out.String() }

// Sample is one series of an instant query result.
type Sample struct {
	// Metric holds the series' labels, __name__ included when kept.
	Metric map[string]string
	// Value is the sample value.
	Value float64
}

// APIError is an error answer of the Prometheus HTTP API, e.g. a PromQL
// parse error (Type "bad_data").
type APIError struct {
	// Type is the API's errorType, e.g. bad_data or execution.
	Type string
	// Message is the API's error text.
	Message string
}

func (e *APIError) Error() string { return e.Type + ": " + e.Message }

type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

func (p *Prometheus) api(ctx context.Context, method, path string, form url.Values) (json.RawMessage, error) {
	var body io.Reader
	u := p.URL + path
	if method == http.MethodPost {
		body = strings.NewReader(form.Encode())
	} else if len(form) > 0 {
		u += "?" + form.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", path, err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var r apiResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("decode %s (%s): %w: %.200s", path, resp.Status, err, raw)
	}
	if r.Status != "success" {
		return nil, &APIError{Type: r.ErrorType, Message: r.Error}
	}
	return r.Data, nil
}

// Query runs an instant PromQL query at the current time. A query that does
// not parse or fails returns an *APIError. Matrix and scalar results are
// not supported: dashboards and rules use instant vectors.
func (p *Prometheus) Query(ctx context.Context, query string) ([]Sample, error) {
	data, err := p.api(ctx, http.MethodPost, "/api/v1/query", url.Values{"query": {query}})
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", query, err)
	}
	var d struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("query %q: decode: %w", query, err)
	}
	switch d.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(d.Result, &vec); err != nil {
			return nil, fmt.Errorf("query %q: decode vector: %w", query, err)
		}
		out := make([]Sample, 0, len(vec))
		for _, s := range vec {
			v, err := parseValue(s.Value[1])
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", query, err)
			}
			out = append(out, Sample{Metric: s.Metric, Value: v})
		}
		return out, nil
	case "scalar":
		var sc [2]any
		if err := json.Unmarshal(d.Result, &sc); err != nil {
			return nil, fmt.Errorf("query %q: decode scalar: %w", query, err)
		}
		v, err := parseValue(sc[1])
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", query, err)
		}
		return []Sample{{Metric: map[string]string{}, Value: v}}, nil
	default:
		return nil, fmt.Errorf("query %q: result type %q not supported", query, d.ResultType)
	}
}

func parseValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("sample value %q: %w", s, err)
	}
	return f, nil
}

// QueryRange runs a range query over [end-span, end] with the given step
// and returns the number of series in the result.
func (p *Prometheus) QueryRange(ctx context.Context, query string, end time.Time, span, step time.Duration) (int, error) {
	form := url.Values{
		"query": {query},
		"start": {strconv.FormatFloat(float64(end.Add(-span).UnixMilli())/1000, 'f', 3, 64)},
		"end":   {strconv.FormatFloat(float64(end.UnixMilli())/1000, 'f', 3, 64)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', 3, 64)},
	}
	data, err := p.api(ctx, http.MethodPost, "/api/v1/query_range", form)
	if err != nil {
		return 0, fmt.Errorf("query_range %q: %w", query, err)
	}
	var d struct {
		Result []json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return 0, fmt.Errorf("query_range %q: decode: %w", query, err)
	}
	return len(d.Result), nil
}

// Alert is one active alert as the /api/v1/alerts endpoint lists it.
type Alert struct {
	// Labels are the alert's labels, alertname included.
	Labels map[string]string `json:"labels"`
	// Annotations are the alert's expanded annotations.
	Annotations map[string]string `json:"annotations"`
	// State is "pending" or "firing".
	State string `json:"state"`
	// Value is the alert expression's value, as text.
	Value string `json:"value"`
}

// Alerts returns the active (pending or firing) alerts.
func (p *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	data, err := p.api(ctx, http.MethodGet, "/api/v1/alerts", nil)
	if err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	var d struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("alerts: decode: %w", err)
	}
	return d.Alerts, nil
}

// Target is one scrape target as /api/v1/targets lists it.
type Target struct {
	// ScrapeURL is the URL scraped.
	ScrapeURL string `json:"scrapeUrl"`
	// Health is "up", "down" or "unknown".
	Health string `json:"health"`
	// LastError is the last scrape's error, empty when it succeeded.
	LastError string `json:"lastError"`
}

// Targets returns the active scrape targets.
func (p *Prometheus) Targets(ctx context.Context) ([]Target, error) {
	data, err := p.api(ctx, http.MethodGet, "/api/v1/targets", url.Values{"state": {"active"}})
	if err != nil {
		return nil, fmt.Errorf("targets: %w", err)
	}
	var d struct {
		ActiveTargets []Target `json:"activeTargets"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("targets: decode: %w", err)
	}
	return d.ActiveTargets, nil
}

// RuleHealth is the evaluation state of one loaded rule.
type RuleHealth struct {
	// Name is the alert name or the recorded series name.
	Name string `json:"name"`
	// Query is the rule's expression.
	Query string `json:"query"`
	// Health is "ok", "err" or "unknown" (not evaluated yet).
	Health string `json:"health"`
	// LastError is the last evaluation's error.
	LastError string `json:"lastError"`
	// Type is "alerting" or "recording".
	Type string `json:"type"`
}

// Rules returns every loaded rule with its evaluation health.
func (p *Prometheus) Rules(ctx context.Context) ([]RuleHealth, error) {
	data, err := p.api(ctx, http.MethodGet, "/api/v1/rules", nil)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	var d struct {
		Groups []struct {
			Rules []RuleHealth `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("rules: decode: %w", err)
	}
	var out []RuleHealth
	for _, g := range d.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// WaitFor calls cond every 250 ms until it returns true or the timeout
// passes; on timeout it returns the last error cond returned.
func (p *Prometheus) WaitFor(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w; last error: %v", ctx.Err(), last)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}
