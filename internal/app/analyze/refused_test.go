package analyze

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// refusedKey is a key whose calls are all refused: n calls of op, with
// reason as throttle_reason ("" for none).
type refusedKey struct {
	pk, op, reason string
	n              int
}

// TestAnalyzeKeysOnlyThrottled: keys that are throttled without ever
// being served get the cause that explains them and its fix, with their
// refused calls counted: a key range (from the spread of the throttled
// calls, or from the reasons) is one key diagnosis per key with the key's
// fix; a table short of capacity (from the reasons, or from the spread
// when nothing is served) is one capacity diagnosis for all its keys.
// Every diagnosis names a fix.
func TestAnalyzeKeysOnlyThrottled(t *testing.T) {
	type want struct {
		cause report.Kind
		keys  []string
		fix   report.AdviceKind
		// throttled are the diagnosis's refused calls.
		throttled uint64
	}
	for _, tc := range []struct {
		name    string
		served  string // the op of 200 other keys' served calls; "" for none
		refused []refusedKey
		want    []want
	}{
		{
			name:    "a read item refused in its key range, no reason",
			served:  "GetItem",
			refused: []refusedKey{{"ITEM#hot", "GetItem", "", 600}},
			want:    []want{{report.KindPartitionLimit, []string{"ITEM#hot"}, report.AdviceCache, 600}},
		},
		{
			name:    "a written key refused in its key range, no reason",
			served:  "PutItem",
			refused: []refusedKey{{"COUNTER#hot", "PutItem", "", 400}},
			want:    []want{{report.KindPartitionLimit, []string{"COUNTER#hot"}, report.AdviceWriteSharding, 400}},
		},
		{
			name:   "three keys refused in their key ranges, as the reasons say",
			served: "GetItem",
			refused: []refusedKey{
				{"A", "GetItem", "TableReadKeyRangeThroughputExceeded", 500},
				{"B", "GetItem", "TableReadKeyRangeThroughputExceeded", 300},
				{"C", "GetItem", "TableReadKeyRangeThroughputExceeded", 200},
			},
			want: []want{
				{report.KindPartitionLimit, []string{"A"}, report.AdviceCache, 500},
				{report.KindPartitionLimit, []string{"B"}, report.AdviceCache, 300},
				{report.KindPartitionLimit, []string{"C"}, report.AdviceCache, 200},
			},
		},
		{
			name:   "three keys of a table short of provisioned capacity, as the reasons say",
			served: "PutItem",
			refused: []refusedKey{
				{"A", "PutItem", "TableWriteProvisionedThroughputExceeded", 500},
				{"B", "PutItem", "TableWriteProvisionedThroughputExceeded", 500},
				{"C", "PutItem", "TableWriteProvisionedThroughputExceeded", 500},
			},
			want: []want{{report.KindCapacity, []string{}, report.AdviceCapacity, 1500}},
		},
		{
			name: "three keys of a table short of capacity, nothing served, no reason",
			refused: []refusedKey{
				{"A", "GetItem", "", 500},
				{"B", "GetItem", "", 500},
				{"C", "GetItem", "", 500},
			},
			want: []want{{report.KindCapacity, []string{}, report.AdviceCapacity, 1500}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeLines(t, t.TempDir(), "refused.jsonl", refusedLines(tc.served, tc.refused))
			rep, _ := analyzeJSON(t, 2, "", path)
			if len(rep.Tables) != 1 {
				t.Fatalf("%d tables, want 1", len(rep.Tables))
			}
			ds := rep.Tables[0].Diagnoses
			var got []want
			for _, d := range ds {
				got = append(got, want{d.Cause, d.Keys, d.Fix.Kind, d.Throttled})
				everyPageNamesAFix(t, d)
				if d.Cause == report.KindPartitionLimit && !strings.Contains(d.Summary, fmt.Sprintf("%d of its reads refused", d.Throttled)) &&
					!strings.Contains(d.Summary, fmt.Sprintf("%d of its writes refused", d.Throttled)) {
					t.Errorf("summary of %v does not count its %d refused calls: %s", d.Keys, d.Throttled, d.Summary)
				}
			}
			slices.SortFunc(got, func(a, b want) int { return strings.Compare(strings.Join(a.keys, ","), strings.Join(b.keys, ",")) })
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("diagnoses (cause, keys, fix, throttled):\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// everyPageNamesAFix fails on a diagnosis without a fix, or whose summary
// reads a key's busiest second where it has none.
func everyPageNamesAFix(t *testing.T, d report.Diagnosis) {
	t.Helper()
	if d.Fix.Kind == "" || d.Fix.Text == "" {
		t.Errorf("%s %v (%s, %s) names no fix: %+v", d.Cause, d.Keys, d.Class, d.Severity, d.Fix)
	}
	if d.PeakUnitsPerSecond == 0 && strings.Contains(d.Summary, "peaking at 0 ") {
		t.Errorf("%s %v reads a peak it does not have: %s", d.Cause, d.Keys, d.Summary)
	}
}

// refusedLines is a minute of JSON lines on table orders: 200 keys served
// 20 times each with op (none when op is empty), and each refused key's
// calls, all throttled, spread over the minute.
func refusedLines(op string, refused []refusedKey) []hostLine {
	var lines []hostLine
	add := func(pk, op, extra string, i, n int) {
		at := burstStart.Add(time.Duration(i) * time.Minute / time.Duration(n))
		lines = append(lines, hostLine{at, fmt.Sprintf(`{"ts":%q,"table":"orders","pk":%q,"op":%q%s}`, at.Format(time.RFC3339Nano), pk, op, extra)})
	}
	if op != "" {
		for u := range 200 {
			for i := range 20 {
				add(fmt.Sprintf("USER#%d", u), op, "", i, 20)
			}
		}
	}
	for _, r := range refused {
		extra := `,"throttled":true`
		if r.reason != "" {
			extra += fmt.Sprintf(`,"throttle_reason":%q`, r.reason)
		}
		for i := range r.n {
			add(r.pk, r.op, extra, i, r.n)
		}
	}
	return lines
}

// TestAnalyzeCloudTrailKeyOnlyThrottled: CloudTrail, which keeps the
// exception and not its reasons: an item whose three reads all failed
// with ProvisionedThroughputExceededException, among 20 items read every
// second without a refusal, is throttled in its key range (no other key
// is refused) and gets the item's fix, its three refused calls counted.
func TestAnalyzeCloudTrailKeyOnlyThrottled(t *testing.T) {
	call := func(key string, sec int, refused bool) string {
		failed := ""
		if refused {
			failed = `"errorCode":"ProvisionedThroughputExceededException","errorMessage":"The level of configured provisioned throughput for the table was exceeded.",`
		}
		return fmt.Sprintf(`{"eventVersion":"1.09","eventTime":"2026-11-22T10:00:%02dZ","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","awsRegion":"us-east-1",%s"requestParameters":{"tableName":"orders","key":{"pk":%q}},"eventType":"AwsApiCall","managementEvent":false,"eventCategory":"Data"}`,
			sec, failed, key)
	}
	var recs []string
	for sec := range 60 {
		for u := range 20 {
			recs = append(recs, call(fmt.Sprintf("u%d", u), sec, false))
		}
	}
	for i := range 3 {
		recs = append(recs, call("o-1", 10*i, true))
	}
	path := filepath.Join(t.TempDir(), "trail.json")
	if err := os.WriteFile(path, []byte(`{"Records":[`+strings.Join(recs, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _ := analyzeJSON(t, 1, "", path)
	if len(rep.Tables) != 1 || len(rep.Tables[0].Diagnoses) != 1 {
		t.Fatalf("want one table with one diagnosis, got %+v", rep.Tables)
	}
	d := rep.Tables[0].Diagnoses[0]
	everyPageNamesAFix(t, d)
	if d.Cause != report.KindPartitionLimit || fmt.Sprint(d.Keys) != "[o-1]" || d.Fix.Kind != report.AdviceCache || d.Throttled != 3 {
		t.Errorf("want partition_limit o-1 with a cache and 3 refused, got %s %v %s %d", d.Cause, d.Keys, d.Fix.Kind, d.Throttled)
	}
	if !strings.Contains(d.Summary, "3 of its reads refused and none served") {
		t.Errorf("summary miscounts o-1's calls: %s", d.Summary)
	}
}
