package export

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history"
)

// evilCells is one cell of orders' writes whose key and shard are hostile.
func evilCells(key string) []history.Answer {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	return []history.Answer{{Table: "orders", From: start, To: start.Add(time.Minute), StepSeconds: 60, Series: []history.Series{{
		Class: "write", Ceiling: 1000, Cells: []history.Cell{{
			Start: start, Units: 10, Events: 10, BusiestSecond: 4,
			Keys:   []history.KeyCell{{Key: key, Units: 6, BusiestSecond: 3, Share: 0.6}},
			Rest:   history.Rest{Units: 4, Share: 0.4},
			Shards: []history.ShardCell{{Shard: key, Records: 10, Share: 1}},
		}},
	}}}}
}

// The HTML report's cells and incidents are data of the page like the
// report: no key they hold can end the element they are written in, and
// they read back whole.
func TestHTMLReportCarriesHistory(t *testing.T) {
	evil := `USER#</script><img src=x onerror=alert(1)>`
	end := time.Date(2026, 12, 2, 0, 1, 0, 0, time.UTC)
	in := HTMLReport{
		Report:    report.Report{Tables: []report.TableReport{{Table: "orders"}}},
		History:   evilCells(evil),
		Incidents: &Incidents{Incidents: []history.Incident{{ID: "1", Table: "orders", Cause: "hot_key", Keys: []string{evil}, Class: "write", Severity: "critical", Start: end.Add(-time.Minute), End: &end, Summary: evil, Fix: evil}}},
	}
	var b bytes.Buffer
	if err := WriteHTMLReport(&b, in, "hotkeyd analyze", "v1"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<img") {
		t.Errorf("a key of the cells or incidents broke out of its element")
	}
	m := regexp.MustCompile(`(?s)<script id="hotkeyd-data" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data element")
	}
	var back HTMLReport
	if err := json.Unmarshal([]byte(m[1]), &back); err != nil {
		t.Fatal(err)
	}
	cell := back.History[0].Series[0].Cells[0]
	if cell.Keys[0].Key != evil || cell.Shards[0].Shard != evil || back.Incidents.Incidents[0].Keys[0] != evil || back.Incidents.Incidents[0].End == nil {
		t.Errorf("the data read back: %+v %+v", back.History, back.Incidents)
	}
	// A report without cells writes an empty list, which the page reads as
	// no heatmap, and no incidents at all.
	b.Reset()
	if err := WriteHTMLReport(&b, HTMLReport{}, "hotkeyd analyze", "v1"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"history":[]`) || strings.Contains(b.String(), `"incidents"`) {
		t.Errorf("a report without cells or incidents: %s", regexp.MustCompile(`"history".{0,40}`).FindString(b.String()))
	}
}

// MaskHistory masks the keys of the cells as the report's, and leaves the
// cells given as they were.
func TestMaskHistory(t *testing.T) {
	for _, mode := range []KeyMode{KeysPlain, KeysRedact, KeysHash} {
		m := mustMasker(t, mode, "secret")
		in := evilCells("USER#alice")
		out := m.MaskHistory(in)
		got := out[0].Series[0].Cells[0].Keys[0].Key
		if got != m.Mask("USER#alice") || (mode != KeysPlain && got == "USER#alice") {
			t.Errorf("%s: the cell's key is %q, want %q", mode, got, m.Mask("USER#alice"))
		}
		if in[0].Series[0].Cells[0].Keys[0].Key != "USER#alice" {
			t.Errorf("%s: MaskHistory changed the cells given", mode)
		}
	}
}
