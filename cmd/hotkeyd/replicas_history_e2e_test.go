package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// startReplicaAt is startReplica with its history in dir.
func startReplicaAt(t *testing.T, ddb *testenv.DDBLocal, leaseTable, id string, tables []string, dir string) *testenv.Hotkeyd {
	t.Helper()
	cfg := fmt.Sprintf(`sources:
  - type: dynamodb-streams
    tables: [%s]
    endpoint: %s
    region: us-east-1
    start: trim_horizon
    lease_table: %s
    worker_id: %s
    failover_time: %s
`, strings.Join(tables, ", "), ddb.Endpoint, leaseTable, id, replicaFailover)
	path := filepath.Join(t.TempDir(), id+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return testenv.StartHotkeyd(t, testenv.HotkeydOptions{Env: replicaEnv}, "run", "--config.file", path, "--history.path", dir)
}

// replicaIncident returns the incident of key in table on h's
// /api/v1/incidents over the last hour, or nil.
func replicaIncident(t *testing.T, h *testenv.Hotkeyd, table, key string) *history.Incident {
	t.Helper()
	code, body := h.Get(t, "/api/v1/incidents?table="+table+"&from="+url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)))
	var out struct{ Incidents []history.Incident }
	if err := json.Unmarshal(body, &out); code != 200 || err != nil {
		t.Fatalf("/api/v1/incidents: %d %s", code, body)
	}
	for i, inc := range out.Incidents {
		if len(inc.Keys) > 0 && inc.Keys[0] == key {
			return &out.Incidents[i]
		}
	}
	return nil
}

// replicaUnits returns the write units of table's 1-minute cells on h's
// /api/v1/history over the last hour, and those of key.
func replicaUnits(t *testing.T, h *testenv.Hotkeyd, table, key string) (all, ofKey float64) {
	t.Helper()
	now := time.Now()
	q := url.Values{"table": {table}, "class": {"write"}, "step": {"60"},
		"from": {now.Add(-time.Hour).UTC().Format(time.RFC3339)}, "to": {now.Add(time.Minute).UTC().Format(time.RFC3339)}}
	code, body := h.Get(t, "/api/v1/history?"+q.Encode())
	var a history.Answer
	if err := json.Unmarshal(body, &a); code != 200 || err != nil || len(a.Series) != 1 {
		t.Fatalf("/api/v1/history?%s: %d %s", q.Encode(), code, body)
	}
	for _, c := range a.Series[0].Cells {
		all += c.Units
		ofKey += keyUnits(c, key)
	}
	return all, ofKey
}

// diskUnits reads the write units of table's 1-minute cells over the
// last hour from the history database in dir, as hotkeyd report does
// beside a running daemon.
func diskUnits(t *testing.T, dir, table string) float64 {
	t.Helper()
	r, err := history.OpenReader(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	now := time.Now()
	a, err := r.Cells(context.Background(), history.Query{Table: table, Class: "write", Step: time.Minute, From: now.Add(-time.Hour), To: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var units float64
	for _, s := range a.Series {
		for _, c := range s.Cells {
			units += c.Units
		}
	}
	return units
}

// writeHot writes n items to table, one every pace, every fourth to
// key; each write changes its item (v names key and the write), or the
// stream would not record it.
func writeHot(t *testing.T, ddb *testenv.DDBLocal, table, key string, n int, pace time.Duration) {
	t.Helper()
	for i := range n {
		pk := fmt.Sprintf("USER#%d", i)
		if i%4 == 0 {
			pk = key
		}
		if _, err := ddb.DB.PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk},
				"v": &types.AttributeValueMemberS{Value: key + "/" + strconv.Itoa(i)}},
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pace) // pacing the traffic over seconds, not waiting for a result
	}
}

// TestReplicasHistory: every replica records the history of every table
// the replicas judge together (their combined window), and every
// incident, whichever replica reads the table. Two replicas read a table
// each (DynamoDB Local gives a stream one shard); a key hot in t1 is an
// incident on both replicas' history, and t1's cells are on both. The
// reader of t1 is killed (SIGKILL) and a replacement started on its
// history path: the survivor still has the incident and the cells, the
// replacement has them from the path, and the traffic after the
// replacement, a key hot in it, is recorded by both.
func TestReplicasHistory(t *testing.T) {
	t.Parallel() // a DynamoDB Local and processes of its own, on ports of its own
	if testing.Short() {
		t.Skip("runs DynamoDB Local and three hotkeyd processes")
	}
	ddb := testenv.DynamoDBLocal(t)
	const leaseTable = "history_leases"
	tables := []string{"history_t0", "history_t1"}
	for _, tb := range tables {
		createStreamTable(t, ddb, tb)
	}
	workers := []string{"history-a", "history-b"}
	dirs := []string{t.TempDir(), t.TempDir()}
	hs := []*testenv.Hotkeyd{
		startReplicaAt(t, ddb, leaseTable, workers[0], tables, dirs[0]),
		startReplicaAt(t, ddb, leaseTable, workers[1], tables, dirs[1]),
	}
	waitUntil(t, settle, "one table per replica", func() bool {
		return heldOf(scrape(t, hs[0]), leaseTable) == 1 && heldOf(scrape(t, hs[1]), leaseTable) == 1
	})
	reader := 0 // the replica holding t1's shard
	if strings.Contains(strings.Join(ownedBy(t, ddb, leaseTable, workers[1]), " "), tables[1]) {
		reader = 1
	}
	survivor := 1 - reader
	t.Logf("%s reads %s", workers[reader], tables[1])

	// A key hot in t1 for 20 s: an incident on both replicas.
	writeHot(t, ddb, tables[1], "HOT#1", 200, 100*time.Millisecond)
	waitUntil(t, settle, "the incident of HOT#1 on both replicas", func() bool {
		return replicaIncident(t, hs[0], tables[1], "HOT#1") != nil && replicaIncident(t, hs[1], tables[1], "HOT#1") != nil
	})
	first := *replicaIncident(t, hs[reader], tables[1], "HOT#1")
	var units [2]float64
	for i, h := range hs {
		all, hot := replicaUnits(t, h, tables[1], "HOT#1")
		units[i] = all
		t.Logf("%s: %s's cells hold %.0f write units, HOT#1 %.0f", workers[i], tables[1], all, hot)
		if all == 0 || hot == 0 {
			t.Errorf("%s: no units of %s (%.0f) or of HOT#1 (%.0f) in its history", workers[i], tables[1], all, hot)
		}
	}

	// The reader is killed once its disk has t1's cells (it writes its
	// open cells once a minute of the clock: a hard kill loses at most
	// the last minute); a replacement takes its shard and its path.
	var onDisk float64
	waitUntil(t, settle, "the reader's cells of t1 on its disk", func() bool {
		onDisk = diskUnits(t, dirs[reader], tables[1])
		return onDisk > 0
	})
	hs[reader].Kill(t)
	replacement := startReplicaAt(t, ddb, leaseTable, "history-c", tables, dirs[reader])
	waitUntil(t, settle, "the replacement holding a lease", func() bool {
		return heldOf(scrape(t, replacement), leaseTable) >= 1
	})
	for _, h := range []*testenv.Hotkeyd{hs[survivor], replacement} {
		inc := replicaIncident(t, h, tables[1], "HOT#1")
		if inc == nil {
			t.Fatalf("HOT#1's incident lost after the replacement")
		}
		if d := inc.Start.Sub(first.Start); d < -5*time.Second || d > 5*time.Second {
			t.Errorf("HOT#1's incident starts at %s, the reader said %s", inc.Start, first.Start)
		}
	}
	if all, _ := replicaUnits(t, hs[survivor], tables[1], "HOT#1"); all < units[survivor] {
		t.Errorf("the survivor's cells of %s hold %.0f units after the replacement, %.0f before", tables[1], all, units[survivor])
	}
	if all, _ := replicaUnits(t, replacement, tables[1], "HOT#1"); all < onDisk {
		t.Errorf("the replacement's cells of %s hold %.0f units, the killed reader's disk %.0f", tables[1], all, onDisk)
	}

	// Traffic after the replacement: recorded by both, on top of what
	// they had.
	before := [2]float64{}
	before[0], _ = replicaUnits(t, hs[survivor], tables[1], "HOT#2")
	before[1], _ = replicaUnits(t, replacement, tables[1], "HOT#2")
	writeHot(t, ddb, tables[1], "HOT#2", 200, 100*time.Millisecond)
	// Both go on recording t1. How much of it the survivor's cells hold
	// by the time the replacement's do depends on how often the reader's
	// summaries reach it (a replica records a table it does not read from
	// its summaries, each bringing the seconds since the last round: see
	// docs/running.md), so the survivor is only required to have recorded
	// some of it; the replacement reads t1 and records every second it
	// judges.
	waitUntilOr(t, settle, "the traffic after the replacement in the survivor's and the replacement's history", func() (bool, string) {
		s, _ := replicaUnits(t, hs[survivor], tables[1], "HOT#2")
		r, _ := replicaUnits(t, replacement, tables[1], "HOT#2")
		return s > before[0] && r >= before[1]+50, fmt.Sprintf("survivor %.0f units (%.0f before), replacement %.0f (%.0f before), of 200 written", s, before[0], r, before[1])
	})
	waitUntil(t, settle, "the incident of HOT#2 on the survivor and the replacement", func() bool {
		return replicaIncident(t, hs[survivor], tables[1], "HOT#2") != nil && replicaIncident(t, replacement, tables[1], "HOT#2") != nil
	})
	for _, h := range []*testenv.Hotkeyd{hs[survivor], replacement} {
		all, hot := replicaUnits(t, h, tables[1], "HOT#2")
		t.Logf("after the replacement: %.0f write units of %s, HOT#2 %.0f", all, tables[1], hot)
	}
}
