package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
)

// burstStart is the scenarios' first second: in the past, as logs are.
var burstStart = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// hostLine is one line of a host's log, with its time for sorting.
type hostLine struct {
	at   time.Time
	text string
}

// burstHosts generates the logs of four hosts behind one table, each in
// time order, together covering the same 300 seconds: a tenant that
// bursts to 1100 WCU/s (275 from each host) for 5 s of every 30 s and
// writes 4 WCU/s otherwise, 300 other keys at 20 writes a second a host,
// and a read key. The keys are fewer than the sketch counts exactly, so
// every figure of the report is exact, whatever the order.
func burstHosts() [4][]hostLine {
	var hosts [4][]hostLine
	for h := range hosts {
		rng := rand.New(rand.NewPCG(uint64(h), 21))
		for sec := range 300 {
			var lines []string
			if sec%30 < 5 {
				for range 55 {
					lines = append(lines, `"pk":"TENANT#acme","op":"PutItem","units":5`)
				}
			} else {
				lines = append(lines, `"pk":"TENANT#acme","op":"PutItem","units":1`)
			}
			for range 20 {
				lines = append(lines, fmt.Sprintf(`"pk":"USER#%d","op":"PutItem","units":%d`, rng.IntN(300), 1+rng.IntN(2)))
			}
			lines = append(lines, `"pk":"CONFIG","op":"GetItem","units":0.5`)
			rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
			for i, l := range lines {
				at := burstStart.Add(time.Duration(sec)*time.Second + time.Duration(i)*time.Second/time.Duration(len(lines)) + time.Duration(h)*time.Millisecond)
				hosts[h] = append(hosts[h], hostLine{at, fmt.Sprintf(`{"ts":%q,"table":"orders",%s}`, at.Format(time.RFC3339Nano), l)})
			}
		}
	}
	return hosts
}

// writeLines writes lines to dir/name.
func writeLines(t *testing.T, dir, name string, lines []hostLine) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// analyzeJSON runs an analysis on workers workers and returns the JSON
// report, decoded, and the report as written.
func analyzeJSON(t *testing.T, workers int, stdin string, files ...string) (report.Report, string) {
	t.Helper()
	rep, out, _ := analyzeJSONStderr(t, workers, stdin, files...)
	return rep, out
}

// analyzeJSONStderr is analyzeJSON, with what the analysis wrote on
// stderr.
func analyzeJSONStderr(t *testing.T, workers int, stdin string, files ...string) (report.Report, string, string) {
	t.Helper()
	cfg := config.Default()
	cfg.Detector.Top = 20
	pipeline := cfg.Pipeline()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), Config{
		Files: files, Pipeline: pipeline, Format: "json", Workers: workers, MinPart: 16 << 10,
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
	})
	if err != nil {
		t.Fatalf("analyze %s on %d workers: %v; stderr:\n%s", files, workers, err, errOut.String())
	}
	var rep report.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	return rep, out.String(), errOut.String()
}

// TestAnalyzeAnyOrderLongKey: a key longer than a table holds whole
// (reported shortened, sketch.MaxKeyBytes) keeps its exact busiest second
// in a shuffled input: the second read finds it by its held form.
func TestAnalyzeAnyOrderLongKey(t *testing.T) {
	dir := t.TempDir()
	long := "TENANT#" + strings.Repeat("acme-", 40)
	hosts := burstHosts()
	var all []hostLine
	for h := range hosts {
		for _, l := range hosts[h] {
			l.text = strings.Replace(l.text, `"TENANT#acme"`, `"`+long+`"`, 1)
			all = append(all, l)
		}
	}
	rand.New(rand.NewPCG(7, 8)).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	rep, _ := analyzeJSON(t, 2, "", writeLines(t, dir, "shuffled.jsonl", all))
	var tenant report.TopKey
	for _, k := range rep.Tables[0].TopKeys {
		if strings.HasPrefix(k.Key, "TENANT#acme-") {
			tenant = k
		}
	}
	if tenant.Key == long || tenant.PeakUnitsPerSecond != 1100 {
		t.Fatalf("the long key %q peaks at %v WCU, want it held short and at 1100", tenant.Key, tenant.PeakUnitsPerSecond)
	}
}

// TestAnalyzeAnyOrder: the same events as one ordered file, as four
// hosts' files, as the cat of them, shuffled, and shuffled on standard
// input, on one worker and on two and three with files cut into parts of 16 KiB, give the
// same report, byte for byte: diagnoses, severities, the table's and the
// keys' busiest seconds. And those are the truth: the tenant's 1100 WCU/s
// is critical.
func TestAnalyzeAnyOrder(t *testing.T) {
	dir := t.TempDir()
	hosts := burstHosts()
	var all []hostLine
	var names []string
	for h := range hosts {
		all = append(all, hosts[h]...)
		names = append(names, writeLines(t, dir, fmt.Sprintf("host%d.jsonl", h), hosts[h]))
	}
	cat := writeLines(t, dir, "cat.jsonl", all)
	ordered := slices.Clone(all)
	slices.SortStableFunc(ordered, func(a, b hostLine) int { return a.at.Compare(b.at) })
	sorted := writeLines(t, dir, "sorted.jsonl", ordered)
	shuffled := slices.Clone(all)
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	mixed := writeLines(t, dir, "shuffled.jsonl", shuffled)
	stdin, err := os.ReadFile(mixed)
	if err != nil {
		t.Fatal(err)
	}

	want, wantJSON := analyzeJSON(t, 1, "", sorted)
	orders := want.Tables[0]
	var tenant report.TopKey
	for _, k := range orders.TopKeys {
		if k.Key == "TENANT#acme" {
			tenant = k
		}
	}
	if tenant.PeakUnitsPerSecond != 1100 {
		t.Fatalf("ordered file: the tenant's busiest second is %v WCU, want 1100", tenant.PeakUnitsPerSecond)
	}
	if len(orders.Diagnoses) == 0 || orders.Diagnoses[0].Cause != "partition_limit" || orders.Diagnoses[0].Severity != "critical" || orders.Diagnoses[0].Keys[0] != "TENANT#acme" {
		t.Fatalf("ordered file: diagnoses %+v, want the tenant's partition_limit, critical", orders.Diagnoses)
	}
	for _, c := range orders.Classes {
		if c.Class == "write" && c.PeakUnitsPerSecond < 1100+4*20 {
			t.Fatalf("ordered file: the table's busiest second is %v WCU, want at least 1180", c.PeakUnitsPerSecond)
		}
	}
	for _, c := range []struct {
		name  string
		stdin string
		files []string
	}{
		{"four host files", "", names},
		{"the hosts' files in another order", "", []string{names[2], names[0], names[3], names[1]}},
		{"cat of the hosts", "", []string{cat}},
		{"shuffled", "", []string{mixed}},
		{"shuffled on stdin", string(stdin), []string{"-"}},
	} {
		for _, workers := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%s on %d workers", c.name, workers), func(t *testing.T) {
				_, got := analyzeJSON(t, workers, c.stdin, c.files...)
				if got != wantJSON {
					t.Errorf("report differs from the ordered file's on one worker:\n%s", firstLineDiff(got, wantJSON))
				}
			})
		}
	}
}

// firstLineDiff shows the first line where got and want differ.
func firstLineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i+1, a, b)
		}
	}
	return ""
}
