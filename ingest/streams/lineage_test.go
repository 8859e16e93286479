package streams

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/time/rate"

	"github.com/hotkeyd/hotkeyd/ingest/internal/ingesttest"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
)

const (
	rootShard   = "shardId-00000001414562045508-2bac9cd2"
	closedChild = "shardId-00000001414576573621-f55eea83"
	openChild   = "shardId-00000001414576573621-0b7e11e5"
	grandchild  = "shardId-00000001414591258131-213e4c0b"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// describeSplit decodes the recorded two-page listing with the SDK client.
func describeSplit(t *testing.T) []shards.Shard {
	rs := newReplayServer(t)
	rs.describe = map[string][]byte{
		"":          readTestdata(t, "describe/split-page1.json"),
		closedChild: readTestdata(t, "describe/split-page2.json"),
	}
	sr := &streamReader{s: &Source{streams: rs.client(), limit: rate.NewLimiter(rate.Inf, 1), cfg: fastConfig()}, arn: "arn"}
	d, err := sr.describe(context.Background())
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if rs.calls["DescribeStream"] != 2 {
		t.Errorf("DescribeStream calls = %d, want 2 (one per page)", rs.calls["DescribeStream"])
	}
	return shardInfos(d.Shards)
}

func TestReadyShards(t *testing.T) {
	list := describeSplit(t)
	if len(list) != 4 {
		t.Fatalf("listed %d shards over two pages, want 4", len(list))
	}
	for _, tc := range []struct {
		name     string
		finished []string
		running  []string
		want     []string
	}{
		// The root's parent was trimmed away: the root may start.
		{"start", nil, nil, []string{rootShard}},
		{"root running", nil, []string{rootShard}, nil},
		// Both children of the split start once the root is done.
		{"root finished", []string{rootShard}, nil, []string{closedChild, openChild}},
		{"one child running", []string{rootShard}, []string{closedChild}, []string{openChild}},
		// The grandchild waits for its own parent only.
		{"closed child finished", []string{rootShard, closedChild}, []string{openChild}, []string{grandchild}},
		{"all finished", []string{rootShard, closedChild, openChild, grandchild}, nil, nil},
	} {
		fin := map[string]bool{}
		for _, id := range tc.finished {
			fin[id] = true
		}
		run := map[string]bool{}
		for _, id := range tc.running {
			run[id] = true
		}
		var got []string
		for _, s := range shards.ReadyShards(list, func(id string) bool { return fin[id] }, run) {
			got = append(got, s.ID)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ready %v, want %v", tc.name, got, tc.want)
		}
	}
	closed := map[string]bool{}
	for _, s := range list {
		closed[s.ID] = s.Closed
	}
	if !closed[rootShard] || !closed[closedChild] || closed[openChild] || closed[grandchild] {
		t.Errorf("closed flags %v, want the root and the first child closed", closed)
	}
}

// TestLineageOrder reads the recorded multi-shard stream end to end through
// the real SDK client: every record of a parent is handed to the sink
// before any record of its children, closed shards are checkpointed as
// finished, and a restart reads none of them again.
func TestLineageOrder(t *testing.T) {
	rs := newReplayServer(t)
	rs.describe = map[string][]byte{
		"":          readTestdata(t, "describe/split-page1.json"),
		closedChild: readTestdata(t, "describe/split-page2.json"),
	}
	closed := map[string]bool{rootShard: true, closedChild: true}
	// Iterators are "<shard>|<0 or 1>": 0 holds three records, 1 is the end.
	rs.iterator = func(in map[string]string) string {
		if in["ShardIteratorType"] == "AFTER_SEQUENCE_NUMBER" && strings.HasSuffix(in["SequenceNumber"], "-2") {
			return in["ShardId"] + "|1"
		}
		return in["ShardId"] + "|0"
	}
	rs.records = func(it string) []byte {
		shard, pos, _ := strings.Cut(it, "|")
		var recs []string
		if pos == "0" {
			for i := range 3 {
				recs = append(recs, fmt.Sprintf(`{"eventID":"%s-%d","eventName":"INSERT","dynamodb":{"ApproximateCreationDateTime":1432155070,`+
					`"Keys":{"Subject":{"S":"s"},"ForumName":{"S":"%s#%d"}},"SequenceNumber":"%s-%d","SizeBytes":30,"StreamViewType":"KEYS_ONLY"}}`,
					shard, i, shard, i, shard, i))
			}
		}
		next := fmt.Sprintf(`,"NextShardIterator":%q`, shard+"|1")
		if pos == "1" && closed[shard] {
			next = ""
		}
		return []byte(`{"Records":[` + strings.Join(recs, ",") + `]` + next + `}`)
	}
	cfg := fastConfig()
	cfg.StreamARNs = []string{"arn:aws:dynamodb:us-west-2:111122223333:table/Forum/stream/2015-05-20T20:51:10.252"}
	cfg.CheckpointDir = t.TempDir()
	r := start(t, cfg, rs.client(), nil)
	ingesttest.WaitFor(t, ingesttest.Eventually, "12 events", func() bool { return len(r.sink.Events()) >= 12 })
	time.Sleep(100 * time.Millisecond)
	r.stop(t)

	events := r.sink.Events()
	if len(events) != 12 {
		t.Fatalf("got %d events, want 12 (3 per shard)", len(events))
	}
	first, last := map[string]int{}, map[string]int{}
	for i, e := range events {
		if e.Table != "Forum" || e.SK != "s" || !strings.HasPrefix(e.PK, e.Shard+"#") {
			t.Errorf("event %+v: want table Forum, sort key s, key of its own shard", e)
		}
		if _, ok := first[e.Shard]; !ok {
			first[e.Shard] = i
		}
		last[e.Shard] = i
	}
	for child, parent := range map[string]string{closedChild: rootShard, openChild: rootShard, grandchild: closedChild} {
		if first[child] < last[parent] {
			t.Errorf("shard %s read (event %d) before its parent %s was done (event %d)", child, first[child], parent, last[parent])
		}
	}
	for _, id := range []string{rootShard, closedChild} {
		var cp shards.Checkpoint
		b, err := os.ReadFile(shards.NewStore(cfg.CheckpointDir).Path(cfg.StreamARNs[0], id))
		if err == nil {
			err = json.Unmarshal(b, &cp)
		}
		if err != nil || !cp.Finished {
			t.Errorf("checkpoint of closed shard %s: %+v, %v; want finished", id, cp, err)
		}
	}

	// Finished shards drop their iterator-age series; the listing's states
	// are counted.
	if n, err := testutil.GatherAndCount(r.reg, "hotkeyd_stream_iterator_age_seconds"); err != nil || n != 2 {
		t.Errorf("%d iterator age series, want 2 (the open shards only)", n)
	}
	for state, want := range map[string]float64{shards.StateOpen: 2, shards.StateClosed: 0, shards.StateFinished: 2} {
		if got := gauge(t, r.reg, "hotkeyd_stream_shards", "table", "Forum", "state", state); got != want {
			t.Errorf("hotkeyd_stream_shards{state=%q} = %v, want %v", state, got, want)
		}
	}

	// A restart reads nothing again: closed shards are finished, open ones
	// resume after their last record.
	r2 := start(t, cfg, rs.client(), nil)
	time.Sleep(500 * time.Millisecond)
	r2.stop(t)
	if n := len(r2.sink.Events()); n != 0 {
		t.Errorf("restart read %d events again, want 0", n)
	}
}
