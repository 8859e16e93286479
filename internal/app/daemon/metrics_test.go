package daemon

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/internal/app/config"
)

// TestMetricsDocumented: every hotkeyd_ metric the daemon registers, with
// every reader configured (each with its lease table, file and S3
// variants) and HTTP ingest on, is listed in export/METRICS.md and in the
// README's metrics reference, and neither lists a metric nothing
// registers. The daemon is built as --config.check builds it: nothing is
// read and no AWS endpoint is called.
func TestMetricsDocumented(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	yaml := strings.ReplaceAll(`listen: 127.0.0.1:0
sources:
  - type: dynamodb-streams
    tables: [orders]
    region: us-east-1
    endpoint: http://127.0.0.1:1
    lease_table: hotkeyd-leases
  - type: kinesis
    streams: [orders-changes]
    region: us-east-1
    endpoint: http://127.0.0.1:1
    checkpoint_dir: DIR/kinesis
  - type: cloudtrail
    paths: ["DIR/trail/*.json"]
    checkpoint_dir: DIR/cloudtrail
  - type: cloudtrail
    s3: {bucket: trail, region: us-east-1, endpoint: "http://127.0.0.1:1"}
    checkpoint_dir: DIR/cloudtrail-s3
  - type: jsonl
    paths: [DIR/access.log]
`, "DIR", dir)
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, Options{Log: zap.NewNop(), Web: Web{Ingest: true}})
	if err != nil {
		t.Fatal(err)
	}
	var registered []string
	// The daemon's registry, the running sources' and the report's
	// collector are what /metrics serves (gatherers, export.Exposition).
	for _, name := range append(d.reg.Names(d.newCollector(d.running), d.counting), d.running.reg.Names()...) {
		if strings.HasPrefix(name, "hotkeyd_") && !slices.Contains(registered, name) {
			registered = append(registered, name)
		}
	}
	// Each reader's own metrics are there: the daemon registered them all.
	for _, reader := range []string{"hotkeyd_stream_", "hotkeyd_lease_", "hotkeyd_kinesis_", "hotkeyd_cloudtrail_files", "hotkeyd_cloudtrail_s3_", "hotkeyd_tables_tracked", "hotkeyd_config_last_reload"} {
		if !slices.ContainsFunc(registered, func(n string) bool { return strings.HasPrefix(n, reader) }) {
			t.Errorf("no %s* metric registered: %v", reader, registered)
		}
	}
	reference, err := os.ReadFile("../../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	metricsDoc, err := os.ReadFile("../../../export/METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	for doc, text := range map[string]string{"docs/metrics.md": string(reference), "export/METRICS.md": string(metricsDoc)} {
		documented := tableMetrics(text)
		for _, name := range registered {
			if !documented[name] {
				t.Errorf("%s is registered but not listed in %s", name, doc)
			}
		}
		for name := range documented {
			if !slices.Contains(registered, name) {
				t.Errorf("%s lists %s, which nothing registers", doc, name)
			}
		}
	}
}

// metricName is a metric name in a table's first cell.
var metricName = regexp.MustCompile("`(hotkeyd_[a-z0-9_]+)`")

// tableMetrics returns the metric names in the first cell of the
// Markdown table rows of text: the metrics a list documents.
func tableMetrics(text string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 3 {
			continue
		}
		for _, m := range metricName.FindAllStringSubmatch(cells[1], -1) {
			names[m[1]] = true
		}
	}
	return names
}
