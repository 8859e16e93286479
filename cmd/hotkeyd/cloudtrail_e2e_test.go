package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// ctItem is one item access of the generated CloudTrail traffic.
type ctItem struct {
	table, index string
	key          map[string]string
	write        bool
	errorCode    string
}

// ctTruth is what a generated delivery folder holds, counted exactly.
type ctTruth struct {
	// traffic counts the item accesses that are traffic (not failed, not
	// throttled).
	traffic int
	// units[entry][class][pk]: entry is "table" or "table/index".
	units map[string]map[string]map[string]float64
	// throttled[entry][pk] counts throttled accesses.
	throttled map[string]map[string]int
	rejected  int
}

const ctAccount = "111122223333"

// ctTraffic plans the generated workload: an orders table (partition key
// customer, sort key order) with a write-hot and a read-hot customer, a
// GSI status-index whose OPEN status is hot, a sessions table with a
// one-attribute key and uniform reads, throttled calls on a few keys,
// failed calls (ConditionalCheckFailedException) that must count nowhere,
// and control-plane and other services' noise.
func ctTraffic(rng *rand.Rand) []ctItem {
	var items []ctItem
	add := func(n int, it ctItem) {
		for range n {
			items = append(items, it)
		}
	}
	order := func(c string) map[string]string {
		return map[string]string{"customer": c, "order": fmt.Sprintf("O-%d", rng.IntN(1e6))}
	}
	for range 300 {
		add(1, ctItem{table: "orders", key: order("C-HOT-W"), write: true})
	}
	for range 250 {
		add(1, ctItem{table: "orders", key: order("C-HOT-R")})
	}
	for i := range 200 {
		c := fmt.Sprintf("C-%d", i)
		for range 3 {
			add(1, ctItem{table: "orders", key: order(c), write: true})
		}
		for range 5 {
			add(1, ctItem{table: "orders", key: order(c)})
		}
	}
	add(400, ctItem{table: "orders", index: "status-index", key: map[string]string{"status": "OPEN"}})
	add(50, ctItem{table: "orders", index: "status-index", key: map[string]string{"status": "SHIPPED"}})
	for i := range 10 {
		add(5, ctItem{table: "orders", index: "status-index", key: map[string]string{"status": fmt.Sprintf("RETURNED-%d", i)}})
	}
	for i := range 100 {
		add(2, ctItem{table: "sessions", key: map[string]string{"sid": fmt.Sprintf("S-%d", i)}})
	}
	add(40, ctItem{table: "orders", key: order("C-THR"), write: true, errorCode: "ProvisionedThroughputExceededException"})
	add(20, ctItem{table: "orders", key: order("C-HOT-W"), write: true, errorCode: "ThrottlingException"})
	add(10, ctItem{table: "orders", key: order("C-THR2"), errorCode: "ProvisionedThroughputExceededException"})
	add(15, ctItem{table: "orders", index: "status-index", key: map[string]string{"status": "OPEN"}, errorCode: "ThrottlingException"})
	add(30, ctItem{table: "orders", key: order("C-FAIL"), write: true, errorCode: "ConditionalCheckFailedException"})
	rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	return items
}

// ctRecord renders one call over items (all of one table, class and
// error), and says what each item costs: 1 unit, 2 in a transaction.
func ctRecord(t time.Time, items []ctItem, rng *rand.Rand) (string, float64) {
	keyJSON := func(k map[string]string) string {
		b, _ := json.Marshal(k)
		return string(b)
	}
	first := items[0]
	var name, rp string
	switch {
	case first.index != "":
		name, rp = "Query", fmt.Sprintf(`{"tableName":%q,"indexName":%q,"key":%s,"keyConditionExpression":"#n0 = :v0"}`, first.table, first.index, keyJSON(first.key))
	case len(items) == 1 && first.write:
		name = []string{"PutItem", "UpdateItem", "DeleteItem"}[rng.IntN(3)]
		rp = fmt.Sprintf(`{"tableName":%q,"key":%s}`, first.table, keyJSON(first.key))
	case len(items) == 1:
		name, rp = "GetItem", fmt.Sprintf(`{"tableName":%q,"key":%s}`, first.table, keyJSON(first.key))
	case first.write && rng.IntN(2) == 0:
		// BatchWriteItem in the documented request shape (no public
		// CloudTrail sample exists).
		var reqs []string
		for _, it := range items {
			reqs = append(reqs, fmt.Sprintf(`{"putRequest":{"key":%s,"item":["customer","order","total"]}}`, keyJSON(it.key)))
		}
		name, rp = "BatchWriteItem", fmt.Sprintf(`{"requestItems":{%q:[%s]}}`, first.table, strings.Join(reqs, ","))
	case first.write:
		var reqs []string
		for i, it := range items {
			field := []string{"tableName", "TableName"}[i%2]
			reqs = append(reqs, fmt.Sprintf(`{"operation":"Put",%q:%q,"key":%s}`, field, it.table, keyJSON(it.key)))
		}
		name, rp = "TransactWriteItems", `{"requestItems":[`+strings.Join(reqs, ",")+`]}`
	default:
		var keys []string
		for _, it := range items {
			keys = append(keys, keyJSON(it.key))
		}
		name, rp = "BatchGetItem", fmt.Sprintf(`{"requestItems":{%q:{"keys":[%s]}}}`, first.table, strings.Join(keys, ","))
	}
	errPart := ""
	if first.errorCode != "" {
		errPart = fmt.Sprintf(`"errorCode":%q,"errorMessage":"refused",`, first.errorCode)
	}
	units := 1.0
	if name == "TransactWriteItems" {
		units = 2
	}
	return fmt.Sprintf(`{"eventVersion":"1.09","userIdentity":{"type":"AssumedRole","accountId":%q},"eventTime":%q,"eventSource":"dynamodb.amazonaws.com","eventName":%q,"awsRegion":"us-east-1",%s"requestParameters":%s,"responseElements":null,"eventType":"AwsApiCall","managementEvent":false,"eventCategory":"Data"}`,
		ctAccount, t.UTC().Format(time.RFC3339), name, errPart, rp), units
}

// writeDelivery writes the workload as CloudTrail delivers it: several
// .json.gz files under AWSLogs/<account>/CloudTrail/<region>/<y>/<m>/<d>/,
// with noise and two bad records, its calls from start on, and returns the
// truth about it.
func writeDelivery(t *testing.T, dir string, files int, start time.Time) *ctTruth {
	t.Helper()
	rng := rand.New(rand.NewPCG(6, 7))
	items := ctTraffic(rng)
	truth := &ctTruth{units: map[string]map[string]map[string]float64{}, throttled: map[string]map[string]int{}}
	var recs []string
	for i := 0; i < len(items); {
		it := items[i]
		// Calls of one to five items of the same table, class and outcome.
		n := 1
		if it.index == "" && it.errorCode == "" {
			n = 1 + rng.IntN(5)
		}
		j := i + 1
		for j < len(items) && j-i < n && items[j].table == it.table && items[j].index == "" && it.index == "" &&
			items[j].write == it.write && items[j].errorCode == it.errorCode {
			j++
		}
		ts := start.Add(time.Duration(len(recs)) * 100 * time.Millisecond)
		rec, units := ctRecord(ts, items[i:j], rng)
		recs = append(recs, rec)
		for _, x := range items[i:j] {
			entry, pk := x.table, x.key["customer"]
			if x.index != "" {
				entry, pk = x.table+"/"+x.index, x.key["status"]
			} else if x.table == "sessions" {
				pk = x.key["sid"]
			}
			class := "read"
			if x.write {
				class = "write"
			}
			switch x.errorCode {
			case "":
				truth.traffic++
				if truth.units[entry] == nil {
					truth.units[entry] = map[string]map[string]float64{}
				}
				if truth.units[entry][class] == nil {
					truth.units[entry][class] = map[string]float64{}
				}
				truth.units[entry][class][pk] += units
			case "ProvisionedThroughputExceededException", "ThrottlingException":
				if truth.throttled[entry] == nil {
					truth.throttled[entry] = map[string]int{}
				}
				truth.throttled[entry][pk]++
			}
		}
		i = j
	}
	// Noise that is not traffic: control-plane calls and another service.
	for k := range 5 {
		recs = append(recs, fmt.Sprintf(`{"eventTime":"2026-11-22T10:0%d:00Z","eventSource":"dynamodb.amazonaws.com","eventName":"DescribeTable","requestParameters":{"tableName":"orders"}}`, k))
		recs = append(recs, fmt.Sprintf(`{"eventTime":"2026-11-22T10:0%d:00Z","eventSource":"s3.amazonaws.com","eventName":"GetObject","requestParameters":{"bucketName":"b","key":"k"}}`, k))
	}
	// Two bad records: not an object, and a time that does not parse.
	recs = append(recs, `"not a record"`,
		`{"eventTime":"yesterday","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"customer":"C-1"}}}`)
	truth.rejected = 2
	rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })

	per := (len(recs) + files - 1) / files
	for f := 0; f*per < len(recs); f++ {
		part := recs[f*per : min((f+1)*per, len(recs))]
		when := start.Add(time.Duration(f) * 5 * time.Minute)
		sub := filepath.Join(dir, "AWSLogs", ctAccount, "CloudTrail", "us-east-1", "2026", "11", "22")
		name := fmt.Sprintf("%s_CloudTrail_us-east-1_%s_%04d.json.gz", ctAccount, when.Format("20060102T1504Z"), f)
		ctWriteGz(t, filepath.Join(sub, name), `{"Records":[`+strings.Join(part, ",")+`]}`)
	}
	return truth
}

// ctWriteGz writes a gzip file the way a sync tool delivers it: to a
// temporary name, renamed into place, dated a minute ago (so the follower
// does not wait for it to settle).
func ctWriteGz(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(content))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute)
	if err := os.Chtimes(tmp, past, past); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func ctEntry(rep *report.Report, table, index string) *report.TableReport {
	for i := range rep.Tables {
		if rep.Tables[i].Table == table && rep.Tables[i].Index == index {
			return &rep.Tables[i]
		}
	}
	return nil
}

// TestAnalyzeCloudTrailDeliveryFolder runs hotkeyd analyze on a generated
// delivery folder and checks, per table and per index, the hot keys of
// each class, the findings, and the most throttled keys.
func TestAnalyzeCloudTrailDeliveryFolder(t *testing.T) {
	dir := t.TempDir()
	truth := writeDelivery(t, dir, 4, time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	files, err := filepath.Glob(filepath.Join(dir, "AWSLogs", "*", "CloudTrail", "*", "*", "*", "*", "*.json.gz"))
	if err != nil || len(files) != 4 {
		t.Fatalf("generated files %v: %v", files, err)
	}
	var stdout, stderr bytes.Buffer
	args := append([]string{"analyze", "--format", "json", "--top", "5",
		"--key-schema", "orders=customer,order", "--key-schema", "orders/status-index=status"}, files...)
	if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, stderr.String())
	}
	var rep report.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, stdout.String())
	}
	if rep.Events != uint64(truth.traffic) || rep.Rejected != uint64(truth.rejected) {
		t.Errorf("events %d rejected %d, want %d and %d", rep.Events, rep.Rejected, truth.traffic, truth.rejected)
	}

	checkTop := func(e *report.TableReport, entry, class, key string) {
		t.Helper()
		units := truth.units[entry][class]
		var total float64
		for _, u := range units {
			total += u
		}
		var got *report.TopKey
		for i := range e.TopKeys {
			if e.TopKeys[i].Class == class {
				got = &e.TopKeys[i]
				break
			}
		}
		if got == nil || got.Key != key {
			t.Errorf("%s %s: top key %+v, want %s", entry, class, got, key)
			return
		}
		// 1 unit per item, 2 in a transaction.
		if got.Units < units[key] || got.Units > units[key]*1.02 || math.Abs(got.Share-units[key]/total) > 0.02 {
			t.Errorf("%s %s %s: units %g share %g, want %g and %.3f", entry, class, key, got.Units, got.Share, units[key], units[key]/total)
		}
		found := false
		for _, f := range e.Findings {
			found = found || (f.Kind == "hot_key" && f.Key == key && f.Class == class)
		}
		if !found {
			t.Errorf("%s: no hot_key finding for %s %s in %+v", entry, class, key, e.Findings)
		}
	}
	checkThrottled := func(e *report.TableReport, entry string, want ...string) {
		t.Helper()
		var got []string
		for _, k := range e.ThrottledKeys {
			got = append(got, fmt.Sprintf("%s=%d", k.Key, k.Count))
		}
		var exp []string
		for _, k := range want {
			exp = append(exp, fmt.Sprintf("%s=%d", k, truth.throttled[entry][k]))
		}
		if strings.Join(got, " ") != strings.Join(exp, " ") {
			t.Errorf("%s throttled_keys %v, want %v", entry, got, exp)
		}
	}

	orders := ctEntry(&rep, "orders", "")
	gsi := ctEntry(&rep, "orders", "status-index")
	sessions := ctEntry(&rep, "sessions", "")
	if orders == nil || gsi == nil || sessions == nil {
		t.Fatalf("want entries for orders, orders/status-index and sessions, got %+v", rep.Tables)
	}
	checkTop(orders, "orders", "write", "C-HOT-W")
	checkTop(orders, "orders", "read", "C-HOT-R")
	checkTop(gsi, "orders/status-index", "read", "OPEN")
	checkThrottled(orders, "orders", "C-THR", "C-HOT-W", "C-THR2")
	checkThrottled(gsi, "orders/status-index", "OPEN")
	sum := func(entry, class string) (n float64) {
		for _, u := range truth.units[entry][class] {
			n += u
		}
		return n
	}
	if orders.ReadUnits != 1250 || orders.WriteUnits != sum("orders", "write") || orders.WriteUnits <= 900 || gsi.ReadUnits != 500 || sessions.ReadUnits != 200 {
		t.Errorf("units: orders %g/%g, index %g, sessions %g; want 1250/%g (over the 900 items: transactions count 2), 500, 200",
			orders.ReadUnits, orders.WriteUnits, gsi.ReadUnits, sessions.ReadUnits, sum("orders", "write"))
	}
	if len(sessions.ThrottledKeys) != 0 || sessions.DistinctPartitionKeys != 100 {
		t.Errorf("sessions: throttled %v, %d distinct keys (want none and 100)", sessions.ThrottledKeys, sessions.DistinctPartitionKeys)
	}
	for _, f := range sessions.Findings {
		if f.Kind == "hot_key" {
			t.Errorf("sessions is uniform but has a hot key: %+v", f)
		}
	}
	// The failed calls count nowhere.
	if strings.Contains(stdout.String(), "C-FAIL") {
		t.Errorf("failed calls (ConditionalCheckFailedException) reached the report")
	}
}

// ctMetric returns the value of the first sample of name whose labels
// hold all of labels (`key="C-THR"`), and whether there is one.
func ctMetric(body, name string, labels ...string) (float64, bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{([^}]*)\} (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(","+m[1]+",", ","+l+",")
		}
		if ok {
			v, err := strconv.ParseFloat(m[2], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestRunFollowsCloudTrailFolder runs the daemon on a cloudtrail source
// and checks that the throttled keys reach /metrics, that files landing
// later are read, and that a restart does not read the old files again.
func TestRunFollowsCloudTrailFolder(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	dir, ckpt := t.TempDir(), t.TempDir()
	cfg := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	// The daemon counts each call in the second it happened: a delivery
	// of the last minutes, as CloudTrail's are.
	recent := time.Now().Add(-5 * time.Minute).Truncate(time.Second)
	writeDelivery(t, dir, 3, recent)
	yaml := fmt.Sprintf(`window: 10m
tables:
  orders: {partition_key: customer, sort_key: order}
  orders/status-index: {partition_key: status}
sources:
  - type: cloudtrail
    paths: [%q]
    checkpoint_dir: %q
`, filepath.Join(dir, "**", "*.json.gz"), ckpt)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	waitMetric := func(h *testenv.Hotkeyd, want float64, name string, labels ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, body := h.Get(t, "/metrics")
			v, ok := ctMetric(string(body), name, labels...)
			if ok && v == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s{%s} = %g (present %v), want %g", name, strings.Join(labels, ","), v, ok, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "run", "--config.file", cfg)
	waitMetric(h, 40, "hotkeyd_key_throttled", `table="orders"`, `key="C-THR"`)
	waitMetric(h, 15, "hotkeyd_key_throttled", `table="orders/status-index"`, `key="OPEN"`)
	waitMetric(h, 1250, "hotkeyd_events_total", `table="orders"`, `class="read"`, `source="cloudtrail"`)
	// A file that lands while the daemon runs is read at the next listing.
	more := `{"Records":[` + strings.Repeat(`{"eventTime":"`+recent.Add(time.Minute).UTC().Format(time.RFC3339)+`","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","errorCode":"ThrottlingException","requestParameters":{"tableName":"orders","key":{"customer":"C-LATE","order":"O-1"}}},`, 6) +
		`{"eventTime":"` + recent.Add(time.Minute).UTC().Format(time.RFC3339) + `","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"customer":"C-LATE","order":"O-1"}}}]}`
	ctWriteGz(t, filepath.Join(dir, "AWSLogs", ctAccount, "CloudTrail", "us-east-1", "2026", "11", "22", "late.json.gz"), more)
	waitMetric(h, 6, "hotkeyd_key_throttled", `table="orders"`, `key="C-LATE"`)
	waitMetric(h, 1251, "hotkeyd_events_total", `table="orders"`, `class="read"`, `source="cloudtrail"`)
	// The reader's own metrics: four files, the 30 failed calls.
	waitMetric(h, 4, "hotkeyd_cloudtrail_files_read_total")
	waitMetric(h, 30, "hotkeyd_cloudtrail_failed_calls_total")
	if code := h.Stop(t); code != 0 {
		t.Fatalf("exit status %d", code)
	}

	// Restart on the same checkpoint: only the file that is new is read.
	ctWriteGz(t, filepath.Join(dir, "after-restart.json.gz"), `{"Records":[`+
		`{"eventTime":"`+recent.Add(2*time.Minute).UTC().Format(time.RFC3339)+`","eventSource":"dynamodb.amazonaws.com","eventName":"PutItem","requestParameters":{"tableName":"orders","key":{"customer":"C-NEW","order":"O-1"}}}]}`)
	h = testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "run", "--config.file", cfg)
	waitMetric(h, 1, "hotkeyd_events_total", `table="orders"`, `class="write"`, `source="cloudtrail"`)
	_, body := h.Get(t, "/metrics")
	if v, ok := ctMetric(string(body), "hotkeyd_events_total", `table="orders"`, `class="read"`, `source="cloudtrail"`); ok && v != 0 {
		t.Errorf("after a restart, %g reads were counted again", v)
	}
}
