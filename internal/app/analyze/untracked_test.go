package analyze

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/app/config"
)

// TestAnalyzeSaysWhatItDidNotCount reads 400 tables of 10 events each,
// shuffled, with room for 300 (max_tables): the tables counted are the
// busiest, ties by name (table-000 to table-299), on one worker and on
// several; the events of the tables past the bound are said in the notes
// of the JSON, text and HTML reports, and with those counted they make up
// every event of the input.
func TestAnalyzeSaysWhatItDidNotCount(t *testing.T) {
	var lines []hostLine
	for i := range 400 {
		for k := range 10 {
			at := burstStart.Add(time.Duration(k) * time.Second)
			lines = append(lines, hostLine{at, fmt.Sprintf(`{"ts":%q,"table":"table-%03d","pk":"K%d","op":"PutItem"}`, at.Format(time.RFC3339), i, k)})
		}
	}
	rand.New(rand.NewPCG(4, 1)).Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	path := writeLines(t, t.TempDir(), "tables.jsonl", lines)
	for _, workers := range []int{1, 3} {
		rep, _ := analyzeJSON(t, workers, "", path)
		for i, ts := range rep.Tables {
			if want := fmt.Sprintf("table-%03d", i); ts.Table != want {
				t.Fatalf("%d workers: table %d of the report is %s, want %s: the busiest, ties by name", workers, i, ts.Table, want)
			}
		}
	}
	rep, _ := analyzeJSON(t, 2, "", path)
	var counted uint64
	for _, ts := range rep.Tables {
		counted += ts.Events
	}
	const note = "1000 events of tables and indexes past the 300 counted (max_tables) were not counted"
	var said bool
	for _, n := range rep.Notes {
		said = said || strings.Contains(n, note)
	}
	if counted != 3000 || len(rep.Tables) != 300 || !said {
		t.Errorf("%d tables, %d events counted, notes %q; want 300 tables, 3000 events and a note that %s", len(rep.Tables), counted, rep.Notes, note)
	}
	for _, format := range []string{"text", "html"} {
		var out, errOut bytes.Buffer
		cfg := config.Default()
		err := Run(context.Background(), Config{Files: []string{path}, Pipeline: cfg.Pipeline(), Format: format, Stdout: &out, Stderr: &errOut})
		if err != nil {
			t.Fatalf("%s: %v; stderr:\n%s", format, err, errOut.String())
		}
		if !strings.Contains(out.String(), note) {
			t.Errorf("the %s report does not say that %s", format, note)
		}
	}
}
