package export

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// goldenEvents is a fixed workload: a table with a hot write key, one of its
// indexes with a status-like key, a uniform table, a throttled call, and two
// sources. Its 100 s span and few keys make every sketch estimate exact.
func goldenEvents() []traffic.Event {
	var evs []traffic.Event
	add := func(n int, e traffic.Event) {
		for range n {
			evs = append(evs, e)
		}
	}
	w := func(pk string) traffic.Event {
		return traffic.Event{Table: "orders", PK: pk, Class: traffic.Write, Units: 1, Source: "jsonl"}
	}
	add(120, w("USER#1"))
	add(40, w("USER#2"))
	for i := 3; i <= 12; i++ {
		add(4, w(fmt.Sprintf("USER#%d", i)))
	}
	add(2, traffic.Event{Table: "orders", PK: "USER#1", Class: traffic.Write, Units: 1, Source: "jsonl", Throttled: true})
	add(30, traffic.Event{Table: "orders", PK: "USER#7", Class: traffic.Read, Units: 0.5, Source: "jsonl"})
	add(150, traffic.Event{Table: "orders", Index: "status-index", PK: "OPEN", Class: traffic.Read, Units: 0.5, Source: "jsonl"})
	add(50, traffic.Event{Table: "orders", Index: "status-index", PK: "CLOSED", Class: traffic.Read, Units: 0.5, Source: "jsonl"})
	for i := range 300 {
		evs = append(evs, traffic.Event{Table: "sessions", PK: fmt.Sprintf("S%02d", i%30), Class: traffic.Read, Units: 1, Source: "demo"})
	}
	// Each table's and index's events spread evenly over t0 .. t0+99s, so
	// that every entry's events lie in 100 whole seconds and the rates are
	// round.
	groups := map[string][]int{}
	for i, e := range evs {
		groups[e.Table+"/"+e.Index] = append(groups[e.Table+"/"+e.Index], i)
	}
	for _, idx := range groups {
		for j, i := range idx {
			evs[i].Time = t0.Add(time.Duration(j) * 99 * time.Second / time.Duration(len(idx)-1))
		}
	}
	return evs
}

// scrapeGolden runs the golden workload through the real pipeline pieces
// (CountingSink → Store → detect.Evaluate → Live → Server) and returns the
// text of /metrics.
func scrapeGolden(t *testing.T) string {
	t.Helper()
	reg, err := NewRegistry(BuildInfo{Version: "0.0.0-test", Revision: "golden", GoVersion: "go-test"})
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return t0.Add(101 * time.Second) }
	store, err := sketch.NewStore(sketch.Config{Window: 0, SubWindows: 1, Tracked: 100}, clock)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := NewCountingSink(store, reg, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := NewReporter(nopLogger(), reg, ReporterConfig{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(clock)
	// As the daemon serves it: the Collector's cached families and the
	// sink's beside the registry's.
	gatherer := NewExposition(reg, NewCollector(live, CollectorConfig{}), sink)

	evs := goldenEvents()
	for len(evs) > 0 {
		n := min(len(evs), 64)
		batch := append([]traffic.Event(nil), evs[:n]...)
		if err := sink.Put(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		evs = evs[n:]
	}
	rep.Reject("jsonl", traffic.ReasonBadJSON, errors.New("truncated"))
	rep.Reject("jsonl", traffic.ReasonMissingPK, errors.New("no pk"))
	rep.Error("dynamodb-streams", "api", errors.New("GetRecords: 500"))

	snap := store.Snapshot()
	evaluated := detect.Foresee(snap, detect.Evaluate(snap, detect.DefaultSettings()), nil, detect.DefaultSettings())
	evaluated.Rejected = rep.Rejected()
	live.Update(evaluated)

	ts := startServer(t, ServerConfig{Gatherer: gatherer, Registerer: reg, Live: live}, "")
	code, _, body := ts.do(t, "GET", "/metrics", "", nil)
	if code != 200 {
		t.Fatalf("GET /metrics = %d", code)
	}
	return body
}

// withoutRuntime drops the go_, process_ and promhttp_ families, whose
// values change from run to run.
func withoutRuntime(text string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		name := line
		if strings.HasPrefix(line, "# ") {
			if f := strings.Fields(line); len(f) >= 3 {
				name = f[2]
			}
		}
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// platformLabels are the labels of hotkeyd_build_info that depend on where
// and how the test binary was built.
var platformLabels = regexp.MustCompile(`\b(goarch|goos|tags)="[^"]*"`)

func TestMetricsGolden(t *testing.T) {
	full := scrapeGolden(t)
	got := platformLabels.ReplaceAllString(withoutRuntime(full), `$1="-"`)
	path := filepath.Join("testdata", "metrics.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("/metrics differs from %s (run go test ./export -run TestMetricsGolden -update to accept):\n%s", path, lineDiff(string(want), got))
	}

	// The whole scrape, runtime families included, lints clean.
	problems, err := promlint.New(strings.NewReader(full)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "hotkeyd_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}

	// And so does promtool, where it is installed (make test installs it).
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not on PATH; skipping promtool check metrics")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(full)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}
