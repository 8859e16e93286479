package lease

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// boardWorker is a worker with a Board publishing "<id>#<n>" payloads.
type boardWorker struct {
	*worker
	b     *Board[string]
	quiet atomic.Bool // publish nothing
	// hold, while set, makes the next Decode close its entered and wait
	// for its release.
	hold   atomic.Pointer[decodeGate]
	n      atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
}

func startBoard(t *testing.T, d *testenv.DDBLocal, table, id string) *boardWorker {
	t.Helper()
	w := &boardWorker{worker: startWorker(t, d.DB, table, id, &staticLister{}), done: make(chan struct{})}
	b, err := NewBoard(w.c, BoardConfig[string]{
		Publish: func() ([]byte, error) {
			if w.quiet.Load() {
				return nil, nil
			}
			return []byte(id + "#" + strconv.FormatInt(w.n.Add(1), 10)), nil
		},
		Decode: func(p []byte) (string, error) {
			if g := w.hold.Swap(nil); g != nil {
				close(g.entered)
				<-g.release
			}
			if !strings.Contains(string(p), "#") {
				return "", errors.New("no # in the payload")
			}
			return string(p), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.b = b
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() { _ = b.Run(ctx); close(w.done) }()
	t.Cleanup(w.stopBoard)
	return w
}

// decodeGate holds a Decode until released.
type decodeGate struct{ entered, release chan struct{} }

func (w *boardWorker) stopBoard() {
	w.cancel()
	<-w.done
}

func peerNames(ps []Peer[string]) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Worker)
	}
	return strings.Join(out, ",")
}

// testBoard: workers see each other's summaries, and only live ones; a
// summary item with attributes of the wrong type, and one whose payload is
// not a summary, are logged once and ignored; a worker that stops
// publishing goes stale after the failover time, one that stops deletes
// its item.
func testBoard(t *testing.T, d *testenv.DDBLocal) {
	const table = "leases_board"
	a := startBoard(t, d, table, "a")
	b := startBoard(t, d, table, "b")
	waitFor(t, slowCalls, "a and b to see each other", func() bool {
		return peerNames(a.b.Peers()) == "b" && peerNames(b.b.Peers()) == "a"
	})
	if v := a.b.Peers()[0].Value; !strings.HasPrefix(v, "b#") {
		t.Errorf("a reads b's payload as %q", v)
	}
	if got := testutil.ToFloat64(a.c.m.peers.WithLabelValues(table)); got != 1 {
		t.Errorf("hotkeyd_lease_peer_summaries = %v, want 1", got)
	}

	// While b's newer summary is being decoded, a still holds b's
	// previous summary: a judgement made meanwhile has every live peer.
	g := &decodeGate{entered: make(chan struct{}), release: make(chan struct{})}
	a.hold.Store(g)
	select {
	case <-g.entered:
	case <-time.After(slowCalls):
		t.Fatal("a decoded no newer summary of b")
	}
	// What Peers returns also depends on how recently b moved (stale past
	// the failover time, which load can reach): the entry itself is
	// checked.
	a.b.mu.Lock()
	p := a.b.peers["b"]
	kept := p != nil && p.decoded && strings.HasPrefix(p.value, "b#")
	a.b.mu.Unlock()
	close(g.release)
	if !kept {
		t.Errorf("a's entry for b while it decodes b's newer summary: %+v, want b's previous summary, decoded", p)
	}

	// Items nobody valid wrote.
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	putItem(t, d.DB, table, map[string]types.AttributeValue{
		"leaseKey": s(SummaryKeyPrefix + "typo"), "entityType": s(EntitySummary),
		"workerId": n("7"), "summarySeq": n("1"), "publishedAt": n(now), "summary": s("text"),
	})
	putItem(t, d.DB, table, map[string]types.AttributeValue{
		"leaseKey": s(SummaryKeyPrefix + "junk"), "entityType": s(EntitySummary),
		"workerId": s("junk"), "summarySeq": n("1"), "publishedAt": n(now), "summary": bin("not a summary"),
	})
	putItem(t, d.DB, table, map[string]types.AttributeValue{
		"leaseKey": s(SummaryKeyPrefix + "old"), "entityType": s(EntitySummary),
		"workerId": s("old"), "summarySeq": n("1"), "publishedAt": n("1000"), "summary": bin("old#1"),
	})
	waitFor(t, slowCalls, "the bad items reported", func() bool {
		return a.logged("ignoring a worker summary") >= 2
	})
	time.Sleep(3 * a.b.cfg.Every)
	if got := a.logged("ignoring a worker summary"); got != 2 {
		t.Errorf("%d lines about the bad items over several rounds, want 2 (each once)", got)
	}
	// b is live only while it moved within the failover time, which load
	// can exceed for a moment: wait for it, and never see another peer.
	waitFor(t, slowCalls, "a's live peers b alone (the bad items and the old one ignored)", func() bool {
		got := peerNames(a.b.Peers())
		if got != "" && got != "b" {
			t.Fatalf("a's live peers %q, want b alone (the bad items and the old one ignored)", got)
		}
		return got == "b"
	})
	if got := a.rep.countPrefixed("summary item "); got != 2 {
		t.Errorf("%d errors reported about the summary items, want 2", got)
	}

	// b stops publishing: stale after the failover time.
	b.quiet.Store(true)
	// It moved last at most one period before quiet was set, and a sees it
	// go stale at its next read after the failover time.
	took := waitFor(t, slowCalls, "b stale", func() bool {
		for _, p := range a.b.Peers() {
			if p.Age > testFailover {
				t.Fatalf("a counts b's summary %v after it last moved, over the failover time", p.Age)
			}
		}
		return len(a.b.Peers()) == 0
	})
	t.Logf("b stale %v after it stopped publishing (failover time %v)", took.Round(time.Millisecond), testFailover)
	b.quiet.Store(false)
	waitFor(t, slowCalls, "b live again", func() bool { return peerNames(a.b.Peers()) == "b" })

	// b stops: its item is deleted.
	b.stopBoard()
	if item := getItem(t, d.DB, table, SummaryKeyPrefix+"b"); item != nil {
		t.Errorf("b's summary is still there after it stopped: %v", item)
	}
	if got := getItem(t, d.DB, table, SummaryKeyPrefix+"a"); attr(got, "entityType") != "S:"+EntitySummary {
		t.Errorf("a's summary item: %v", got)
	}
}

func bin(v string) types.AttributeValue { return &types.AttributeValueMemberB{Value: []byte(v)} }
