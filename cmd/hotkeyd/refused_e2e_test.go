package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestDaemonKeyOnlyThrottled: the daemon, fed over HTTP ingest an item
// whose reads are all refused (a log that says only "throttled") among
// 200 keys served without a refusal, pages it as throttled in its key
// range with the key's fix (a cache: one item read), in its log line, its
// metric and its API, with its refused calls counted and no served read
// made up.
func TestDaemonKeyOnlyThrottled(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	cfg := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfg, []byte("window: 60s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "--config.file", cfg, "--web.enable-ingest")
	start := time.Now().Add(-30 * time.Second)
	var body bytes.Buffer
	line := func(i, n int, pk, extra string) {
		at := start.Add(time.Duration(i) * 25 * time.Second / time.Duration(n))
		fmt.Fprintf(&body, `{"ts":%q,"table":"orders","pk":%q,"op":"GetItem"%s}`+"\n", at.UTC().Format(time.RFC3339Nano), pk, extra)
	}
	for u := range 200 {
		for i := range 20 {
			line(i, 20, fmt.Sprintf("USER#%d", u), "")
		}
	}
	const refused = 600
	for i := range refused {
		line(i, refused, "ITEM#hot", `,"throttled":true`)
	}
	resp, err := http.Post(h.URL+"/api/v1/events", "application/x-ndjson", &body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v1/events: %s", resp.Status)
	}
	logged := h.WaitLog(t, `msg="key near the partition limit" table=orders class=read key=ITEM#hot `, 20*time.Second)
	if !strings.Contains(logged, "fix=cache") || !strings.Contains(logged, "severity=critical") {
		t.Errorf("the refused item's line does not page it with a cache: %s", logged)
	}
	rep := waitJudged(t, h, start.Add(55*time.Second), "the refused item judged", func(r report.Report) bool {
		tr := ctEntry(&r, "orders", "")
		return tr != nil && keyDiagnosis(tr.Diagnoses, "ITEM#hot") != nil && keyDiagnosis(tr.Diagnoses, "ITEM#hot").Throttled == refused
	})
	d := keyDiagnosis(ctEntry(&rep, "orders", "").Diagnoses, "ITEM#hot")
	if d.Cause != report.KindPartitionLimit || d.Fix.Kind != report.AdviceCache || d.Fix.Text == "" {
		t.Errorf("ITEM#hot: want partition_limit with a cache, got %s with %+v", d.Cause, d.Fix)
	}
	if !strings.Contains(d.Summary, fmt.Sprintf("%d of its reads refused", refused)) || strings.Contains(d.Summary, "peaking at 0 ") {
		t.Errorf("ITEM#hot's summary miscounts its calls: %s", d.Summary)
	}
	_, metrics := h.Get(t, "/metrics")
	if !regexp.MustCompile(`(?m)^hotkeyd_diagnosis\{cause="partition_limit",class="read",fix="cache",key="ITEM#hot",severity="critical",table="orders"\} 1$`).Match(metrics) {
		t.Errorf("/metrics lacks ITEM#hot's diagnosis with its fix:\n%s", grepLines(string(metrics), "hotkeyd_diagnosis{"))
	}
}

// keyDiagnosis is the diagnosis of key, nil when there is none.
func keyDiagnosis(ds []report.Diagnosis, key string) *report.Diagnosis {
	for i := range ds {
		if len(ds[i].Keys) == 1 && ds[i].Keys[0] == key {
			return &ds[i]
		}
	}
	return nil
}
