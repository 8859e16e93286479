package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// throttledCall is one call of a generated ledger workload.
type throttledCall struct {
	at        time.Time
	key       string
	throttled bool
	reason    string // DynamoDB's throttling reason, "" for none
}

// ledgerWorkload is a table's writes over users plus a tenant and a hot
// key: capacity is every call's chance to be refused for the table's
// capacity, hot the hot key's extra chance (its partition at its
// ceiling). It returns the calls in time order and the exact throttled
// calls per key.
type ledgerWorkload struct {
	perSecond, seconds, users int
	tenant, hotShare          float64
	capacity, hot             float64
	// reasons makes each throttled call carry its reason.
	reasons bool
}

func (w ledgerWorkload) calls(start time.Time, seed uint64) ([]throttledCall, map[string]int) {
	rng := rand.New(rand.NewPCG(seed, 13))
	n := w.perSecond * w.seconds
	out := make([]throttledCall, 0, n)
	truth := map[string]int{}
	for i := range n {
		c := throttledCall{at: start.Add(time.Duration(i) * time.Duration(w.seconds) * time.Second / time.Duration(n)),
			key: "USER#" + strconv.Itoa(rng.IntN(w.users))}
		hot := false
		switch r := rng.Float64(); {
		case r < w.hotShare:
			c.key, hot = "LEADERBOARD#global", true
		case r < w.hotShare+w.tenant:
			c.key = "TENANT#acme"
		}
		switch {
		case hot && rng.Float64() < w.hot:
			c.throttled, c.reason = true, "TableWriteKeyRangeThroughputExceeded"
		case rng.Float64() < w.capacity:
			c.throttled, c.reason = true, "TableWriteProvisionedThroughputExceeded"
		}
		if !w.reasons {
			c.reason = ""
		}
		if c.throttled {
			truth[c.key]++
		}
		out = append(out, c)
	}
	return out, truth
}

// cloudTrail renders the calls as one CloudTrail file: PutItem data
// events, the throttled ones with DynamoDB's usual message, which names no
// reason.
func cloudTrail(calls []throttledCall) []byte {
	var b bytes.Buffer
	b.WriteString(`{"Records":[`)
	for i, c := range calls {
		if i > 0 {
			b.WriteByte(',')
		}
		errPart := ""
		if c.throttled {
			errPart = `"errorCode":"ProvisionedThroughputExceededException","errorMessage":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.",`
		}
		fmt.Fprintf(&b, `{"eventVersion":"1.09","userIdentity":{"type":"AssumedRole","accountId":"111122223333"},"eventTime":%q,"eventSource":"dynamodb.amazonaws.com","eventName":"PutItem","awsRegion":"us-east-1",%s"requestParameters":{"tableName":"ledger","key":{"pk":%q}},"responseElements":null,"eventType":"AwsApiCall","managementEvent":false,"eventCategory":"Data"}`,
			c.at.UTC().Format(time.RFC3339), errPart, c.key)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// jsonLines renders the calls as an application's access log.
func jsonLines(calls []throttledCall) []byte {
	var b bytes.Buffer
	for _, c := range calls {
		fmt.Fprintf(&b, `{"ts":%q,"table":"ledger","pk":%q,"op":"PutItem"`, c.at.UTC().Format(time.RFC3339Nano), c.key)
		switch {
		case c.reason != "":
			fmt.Fprintf(&b, `,"throttle_reason":%q,"throttle_resource":"arn:aws:dynamodb:us-east-1:111122223333:table/ledger"`, c.reason)
		case c.throttled:
			b.WriteString(`,"throttled":true`)
		}
		b.WriteString("}\n")
	}
	return b.Bytes()
}

// analyzeFile runs the hotkeyd binary's analyze on one file.
func analyzeFile(t *testing.T, path string, args ...string) report.TableReport {
	t.Helper()
	code, stdout, stderr := runBinary(t, filepath.Dir(path), nil, append(append([]string{"analyze", "--format", "json"}, args...), path)...)
	if code != 0 {
		t.Fatalf("analyze %s: exit %d\n%s", path, code, stderr)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("analyze report: %v", err)
	}
	if len(rep.Tables) != 1 {
		t.Fatalf("want one table, got %+v", rep.Tables)
	}
	return rep.Tables[0]
}

// capacityOf returns the write capacity diagnosis, nil when there is none.
func capacityOf(tr report.TableReport) *report.Diagnosis {
	for i := range tr.Diagnoses {
		if tr.Diagnoses[i].Cause == report.KindCapacity {
			return &tr.Diagnoses[i]
		}
	}
	return nil
}

// checkNoKeyPaged fails on a key diagnosis that pages though its key is
// far from any ceiling, but for want.
func checkNoKeyPaged(t *testing.T, what string, tr report.TableReport, want string) {
	t.Helper()
	for _, d := range tr.Diagnoses {
		if d.Cause != report.KindCapacity && d.Key() != want && d.Severity.Pages() {
			t.Errorf("%s: key %s paged (%s, %s, fix %s) though far from any ceiling: %s", what, d.Key(), d.Cause, d.Severity, d.Fix.Kind, d.Summary)
		}
	}
}

// checkThrottledKeys checks a report's throttled_keys against the exact
// counts: every listed key within its bounds and known to have had at
// least as many as any key not listed, which had at most the bound (a tie
// at the end of the list, cut at --top, is no error of the counting);
// exact, with exact, ranked as the truth ranks them.
func checkThrottledKeys(t *testing.T, what string, tr report.TableReport, truth map[string]int, exact bool) {
	t.Helper()
	if len(tr.ThrottledKeys) == 0 {
		t.Fatalf("%s: no throttled keys listed", what)
	}
	listed := map[string]bool{}
	for _, k := range tr.ThrottledKeys {
		listed[k.Key] = true
		n := uint64(truth[k.Key])
		hi := max(k.Count, k.CountMax)
		if k.Count > n || hi < n {
			t.Errorf("%s: %s listed with %d to %d throttled calls, truth %d", what, k.Key, k.Count, hi, n)
		}
		if k.Count < tr.ThrottledBound || !exact && k.Count == tr.ThrottledBound {
			t.Errorf("%s: %s listed with %d, not above the bound %d of the others", what, k.Key, k.Count, tr.ThrottledBound)
		}
		if exact && k.CountMax != 0 {
			t.Errorf("%s: %s within bounds %d to %d, want exact", what, k.Key, k.Count, k.CountMax)
		}
	}
	for k, n := range truth {
		if !listed[k] && uint64(n) > tr.ThrottledBound {
			t.Errorf("%s: %s not listed with %d throttled calls, over the bound %d", what, k, n, tr.ThrottledBound)
		}
	}
	if !exact {
		return
	}
	type kc struct {
		key string
		n   int
	}
	var ranked []kc
	for k, n := range truth {
		ranked = append(ranked, kc{k, n})
	}
	slices.SortFunc(ranked, func(a, b kc) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.key, b.key)) })
	for i, k := range tr.ThrottledKeys {
		if uint64(ranked[i].n) != k.Count {
			t.Errorf("%s: rank %d is %s with %d, the true %d-th has %d (%s)", what, i+1, k.Key, k.Count, i+1, ranked[i].n, ranked[i].key)
		}
	}
}

// TestAnalyzeTableShortOfCapacity: the table short of write capacity,
// about 400 writes a second for two minutes over 5 000 users and a tenant
// with 12 % of them (35 WCU/s), a third of every key's calls refused, as
// CloudTrail records it (no reason) and as an application logs it
// (TableWriteProvisionedThroughputExceeded): a capacity diagnosis, no key
// paged, and the throttled keys exact, the true top (the users at 10 to 11
// throttled calls after the tenant).
func TestAnalyzeTableShortOfCapacity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w := ledgerWorkload{perSecond: 400, seconds: 120, users: 5000, tenant: 0.12, capacity: 1.0 / 3, reasons: true}
	calls, truth := w.calls(start, 1)

	ct := filepath.Join(dir, "ledger-cloudtrail.json")
	if err := os.WriteFile(ct, cloudTrail(calls), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "ledger.jsonl")
	if err := os.WriteFile(log, jsonLines(calls), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		limit      report.CapacityLimit
	}{
		{"cloudtrail", ct, report.LimitUnknown},
		{"jsonl with reasons", log, report.LimitProvisioned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := analyzeFile(t, tc.path, "--top", "12")
			d := capacityOf(tr)
			if d == nil || d.Severity != report.SeverityCritical || d.Fix.Kind != report.AdviceCapacity || d.Capacity == nil ||
				d.Capacity.Limit != tc.limit || d.Class != "write" || len(d.Keys) != 0 {
				t.Fatalf("want a critical write capacity diagnosis, limit %s, fix capacity; got %+v in %+v", tc.limit, d, tr.Diagnoses)
			}
			if s := d.Capacity.ThrottledShare; s < 0.3 || s > 0.37 {
				t.Errorf("throttled share %.3f, want about a third", s)
			}
			checkNoKeyPaged(t, tc.name, tr, "")
			checkThrottledKeys(t, tc.name, tr, truth, true)
			if tr.ThrottledKeys[0].Key != "TENANT#acme" {
				t.Errorf("the most throttled key is %s, want the tenant", tr.ThrottledKeys[0].Key)
			}
			top := tr.ThrottledKeys[1].Count
			if top < 9 || top > 13 {
				t.Errorf("the most throttled user has %d throttled calls, want about 10 to 11", top)
			}
		})
	}
}

// TestAnalyzeKeyRangeThrottling: one key refused in its key range while
// the table is far from its capacity, as CloudTrail records it and as an
// application logs it (TableWriteKeyRangeThroughputExceeded): the key
// critical with a spreading fix, no capacity diagnosis.
func TestAnalyzeKeyRangeThrottling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w := ledgerWorkload{perSecond: 300, seconds: 90, users: 2000, hotShare: 0.1, hot: 0.4, reasons: true}
	calls, _ := w.calls(start, 2)
	ct := filepath.Join(dir, "hot-cloudtrail.json")
	if err := os.WriteFile(ct, cloudTrail(calls), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "hot.jsonl")
	if err := os.WriteFile(log, jsonLines(calls), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{ct, log} {
		tr := analyzeFile(t, path)
		if d := capacityOf(tr); d != nil {
			t.Errorf("%s: capacity diagnosis for a key range's throttling: %+v", path, d)
		}
		var hot *report.Diagnosis
		for i := range tr.Diagnoses {
			if tr.Diagnoses[i].Key() == "LEADERBOARD#global" {
				hot = &tr.Diagnoses[i]
			}
		}
		if hot == nil || hot.Severity != report.SeverityCritical || hot.Fix.Kind != report.AdviceWriteSharding || hot.Fix.SuffixCount < 2 {
			t.Errorf("%s: want LEADERBOARD#global critical with write sharding, got %+v in %+v", path, hot, tr.Diagnoses)
		}
	}
}

// TestDaemonTableShortOfCapacity: the daemon, fed the same kind of table
// over HTTP ingest (no reasons, as a log that only says "throttled"),
// flags one capacity diagnosis and no key, and its throttled keys (API and
// metrics) hold the truth within their bounds: more keys were throttled
// than it counts, so the users' counts cannot be told from the error and
// only the tenant is listed.
func TestDaemonTableShortOfCapacity(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	cfg := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfg, []byte("window: 60s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "--config.file", cfg, "--web.enable-ingest", "--log.level", "debug")
	w := ledgerWorkload{perSecond: 400, seconds: 40, users: 5000, tenant: 0.12, capacity: 1.0 / 3}
	calls, truth := w.calls(time.Now().Add(-45*time.Second), 3)
	body := jsonLines(calls)
	for len(body) > 0 {
		// Requests of at most 2 MiB, cut at a line.
		n := min(len(body), 2<<20)
		if n < len(body) {
			n = bytes.LastIndexByte(body[:n], '\n') + 1
		}
		resp, err := http.Post(h.URL+"/api/v1/events", "application/x-ndjson", bytes.NewReader(body[:n]))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /api/v1/events: %s", resp.Status)
		}
		body = body[n:]
	}
	line := h.WaitLog(t, `msg="short of capacity" table=ledger class=write severity=critical limit=unknown`, 20*time.Second)
	if !strings.Contains(line, "fix=capacity") {
		t.Errorf("capacity line without its fix: %s", line)
	}
	// Wait for a judgement of every call sent (the line may be of an
	// evaluation made while the posts were still being taken), before the
	// first call leaves the 60 s window.
	rep := waitJudged(t, h, calls[0].at.Add(55*time.Second), fmt.Sprintf("the %d calls judged", len(calls)), func(r report.Report) bool {
		tr := ctEntry(&r, "ledger", "")
		if tr == nil {
			return false
		}
		d := capacityOf(*tr)
		return d != nil && d.Capacity != nil && d.Capacity.Calls >= uint64(len(calls))
	})
	tr := *ctEntry(&rep, "ledger", "")
	if d := capacityOf(tr); d == nil || d.Severity != report.SeverityCritical || d.Capacity.Calls != uint64(len(calls)) {
		t.Fatalf("no critical capacity diagnosis of the %d calls: %+v", len(calls), tr.Diagnoses)
	}
	checkNoKeyPaged(t, "daemon", tr, "")
	checkThrottledKeys(t, "daemon", tr, truth, false)
	_, metrics := h.Get(t, "/metrics")
	if !regexp.MustCompile(`(?m)^hotkeyd_diagnosis\{cause="capacity",class="write",fix="capacity",key="",severity="critical",table="ledger"\} 1$`).Match(metrics) {
		t.Errorf("/metrics lacks the capacity diagnosis")
	}
	// Each exported key's gauges bound its truth.
	re := regexp.MustCompile(`(?m)^hotkeyd_key_throttled(_max)?\{key="([^"]+)",table="ledger"\} (\d+)$`)
	seen := 0
	for _, m := range re.FindAllSubmatch(metrics, -1) {
		n, _ := strconv.Atoi(string(m[3]))
		upper, want := len(m[1]) > 0, truth[string(m[2])]
		if upper && n < want || !upper && n > want {
			t.Errorf("%s = %d, truth %d", m[0], n, want)
		}
		seen++
	}
	if seen == 0 || seen%2 != 0 {
		t.Errorf("%d hotkeyd_key_throttled series for ledger, want pairs of lower and upper bounds", seen)
	}
}
