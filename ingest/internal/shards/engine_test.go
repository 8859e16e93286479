package shards

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"

	"github.com/hotkeyd/hotkeyd/ingest/internal/ingesttest"
)

// fakeStream is a stream behind the engine's own Stream interface (not a
// fake of an AWS API): shards hold sequence numbers, an iterator is
// "SHARD|INDEX", and one Records call answers up to page records. Safe
// for concurrent use, as the engine calls it from every shard's loop.
type fakeStream struct {
	mu       sync.Mutex
	shards   []Shard
	records  map[string][]string // by shard: the sequence numbers it holds
	page     int
	failures map[string][]error // by shard: the errors its next Records calls return
	emitted  []string           // "SHARD/SEQUENCE", in the order handed on
	iters    []string           // "SHARD POSITION SEQUENCE" of every Iterator call
}

// fakePage is one Records answer: the records [from, to) of a shard.
type fakePage struct {
	shard    string
	from, to int
}

var errExpired = errors.New("iterator expired")

func newFakeStream(page int, shards ...Shard) *fakeStream {
	return &fakeStream{shards: shards, page: page, records: map[string][]string{}, failures: map[string][]error{}}
}

// add appends n records to shard, numbered after the ones it holds.
func (f *fakeStream) add(shard string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.records[shard] = append(f.records[shard], fmt.Sprintf("%s-%03d", shard, len(f.records[shard])+1))
	}
}

func (f *fakeStream) List(context.Context) (Listing, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Listing{Shards: slices.Clone(f.shards)}, nil
}

func (f *fakeStream) First(context.Context, Listing, bool) {}

func (f *fakeStream) Iterator(_ context.Context, shard string, pos Position, seq string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.iters = append(f.iters, fmt.Sprintf("%s %s %s", shard, pos, seq))
	recs := f.records[shard]
	i := 0
	switch pos {
	case AtLatest:
		i = len(recs)
	case AfterSequenceNumber:
		j := slices.Index(recs, seq)
		if j < 0 {
			return "", fmt.Errorf("sequence %q not in shard %q", seq, shard)
		}
		i = j + 1
	}
	return shard + "|" + strconv.Itoa(i), nil
}

func (f *fakeStream) Records(_ context.Context, shard, iter string) (fakePage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if errs := f.failures[shard]; len(errs) > 0 {
		f.failures[shard] = errs[1:]
		return fakePage{}, errs[0]
	}
	name, at, _ := strings.Cut(iter, "|")
	i, err := strconv.Atoi(at)
	if name != shard || err != nil {
		return fakePage{}, fmt.Errorf("iterator %q is not of shard %q", iter, shard)
	}
	return fakePage{shard: shard, from: i, to: min(i+f.page, len(f.records[shard]))}, nil
}

func (f *fakeStream) Emit(_ context.Context, shard string, p fakePage, _ time.Time) (Emitted, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs := f.records[shard][p.from:p.to]
	for _, seq := range recs {
		f.emitted = append(f.emitted, shard+"/"+seq)
	}
	e := Emitted{Records: len(recs), Next: shard + "|" + strconv.Itoa(p.to), Lag: float64(len(f.records[shard]) - p.to), LagSet: true}
	if len(recs) > 0 {
		e.Last = recs[len(recs)-1]
	}
	if f.closed(shard) && p.to == len(f.records[shard]) {
		e.Next, e.End = "", true
	}
	return e, true
}

func (f *fakeStream) closed(shard string) bool {
	for _, s := range f.shards {
		if s.ID == shard {
			return s.Closed
		}
	}
	return false
}

// read returns what was handed on so far.
func (f *fakeStream) read() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.emitted)
}

// iterCalls returns the Iterator calls so far.
func (f *fakeStream) iterCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.iters)
}

type instantPacer struct{}

func (instantPacer) Wait(records int, _ time.Duration, _ bool) time.Duration {
	if records > 0 {
		return 0
	}
	return 5 * time.Millisecond
}

// engineRun is an engine reading one fake stream until stopped.
type engineRun struct {
	e    *Engine
	reg  *prometheus.Registry
	rep  *ingesttest.Reporter
	stop func()
}

func runEngine(t *testing.T, dir string, f *fakeStream) *engineRun {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, MetricOpts{
		StreamLabel: "stream",
		Shards:      prometheus.GaugeOpts{Name: "fake_shards", Help: "Shards by state."},
		Lag:         prometheus.GaugeOpts{Name: "fake_lag_records", Help: "Records behind."},
		Records:     prometheus.CounterOpts{Name: "fake_records_total", Help: "Records read."},
		TTLDeletes:  prometheus.CounterOpts{Name: "fake_ttl_deletes_total", Help: "Time to Live deletes read."},
		Calls:       prometheus.CounterOpts{Name: "fake_calls_total", Help: "GetRecords calls."},
	})
	if err != nil {
		t.Fatal(err)
	}
	rep := &ingesttest.Reporter{}
	e := &Engine{
		Settings: Settings{Source: "fake", ListInterval: 20 * time.Millisecond, CheckpointInterval: time.Hour,
			MaxBackoff: 20 * time.Millisecond, CallTimeout: time.Second},
		Reporter:    rep,
		Checkpoints: NewStore(dir),
		Health:      NewHealth("fake", IsNetwork),
		Metrics:     m,
		Classify: func(err error) string {
			if errors.Is(err, errExpired) {
				return ReasonExpiredIterator
			}
			return ReasonAPI
		},
		NewPacer: func() Pacer { return instantPacer{} },
		Now:      time.Now,
	}
	e.Health.Set("orders", ErrStarting)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx, func() {
			ReadStream(ctx, e, StreamSpec{ARN: "arn:fake:orders", Name: "orders", Key: "orders", Label: func() string { return "orders" }, Log: zaptest.NewLogger(t)}, f)
		})
	}()
	r := &engineRun{e: e, reg: reg, rep: rep}
	r.stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(r.stop)
	return r
}

// TestEngineReadsParentsFirst reads a split shard and its two children:
// every record of the parent is handed on before any of a child's, the
// closed shards are checkpointed as finished, and the shard series say
// so: two finished, one open, and a lag series for the open shard only.
func TestEngineReadsParentsFirst(t *testing.T) {
	f := newFakeStream(2,
		Shard{ID: "root", Closed: true},
		Shard{ID: "left", Parents: []string{"root"}, Closed: true},
		Shard{ID: "right", Parents: []string{"root"}},
	)
	f.add("root", 5)
	f.add("left", 3)
	f.add("right", 4)
	dir := t.TempDir()
	r := runEngine(t, dir, f)
	ingesttest.WaitFor(t, ingesttest.Eventually, "12 records", func() bool { return len(f.read()) == 12 })
	// A finished shard's checkpoint is written, and the listing may count
	// it as finished, before the reader drops its lag series: wait for
	// both, then judge.
	ingesttest.WaitFor(t, ingesttest.Eventually, "two shards finished and their lag series dropped", func() bool {
		n, err := testutil.GatherAndCount(r.reg, "fake_lag_records")
		return err == nil && n == 1 && testutil.ToFloat64(r.e.Metrics.shards.WithLabelValues("orders", StateFinished)) == 2
	})

	got := f.read()
	for i, rec := range got[:5] {
		if !strings.HasPrefix(rec, "root/") {
			t.Fatalf("record %d is %s before the parent was read to its end: %v", i, rec, got)
		}
	}
	if !slices.IsSorted(got[:5]) {
		t.Errorf("parent read out of order: %v", got[:5])
	}
	for state, want := range map[string]float64{StateOpen: 1, StateClosed: 0, StateFinished: 2} {
		if v := testutil.ToFloat64(r.e.Metrics.shards.WithLabelValues("orders", state)); v != want {
			t.Errorf("shards{state=%q} = %v, want %v", state, v, want)
		}
	}
	if n, err := testutil.GatherAndCount(r.reg, "fake_lag_records"); err != nil || n != 1 {
		t.Errorf("%d lag series (%v), want 1: finished shards forget theirs", n, err)
	}
	if v := testutil.ToFloat64(r.e.Metrics.lag.WithLabelValues("orders", "right")); v != 0 {
		t.Errorf("lag of the open shard read to its newest record = %v, want 0", v)
	}
	r.stop()
	for _, id := range []string{"root", "left"} {
		cp, ok, err := NewStore(dir).Load("arn:fake:orders", id)
		if err != nil || !ok || !cp.Finished {
			t.Errorf("checkpoint of closed shard %s: %+v, %v, %v; want finished", id, cp, ok, err)
		}
	}
	if cp, ok, err := NewStore(dir).Load("arn:fake:orders", "right"); err != nil || !ok || cp.Finished || cp.Sequence != "right-004" {
		t.Errorf("checkpoint of the open shard: %+v, %v, %v; want after right-004", cp, ok, err)
	}
	if n := r.rep.Errors(ReasonAPI) + r.rep.Errors(ReasonCheckpoint); n != 0 {
		t.Errorf("%d errors reported reading a healthy stream", n)
	}
}

// TestEngineResumesAfterCheckpoint stops an engine and starts another on
// the same checkpoint folder: it takes its iterator after the last record
// read and hands on only what came since.
func TestEngineResumesAfterCheckpoint(t *testing.T) {
	f := newFakeStream(10, Shard{ID: "only"})
	f.add("only", 3)
	dir := t.TempDir()
	r := runEngine(t, dir, f)
	ingesttest.WaitFor(t, ingesttest.Eventually, "3 records", func() bool { return len(f.read()) == 3 })
	r.stop()

	f.add("only", 2)
	r2 := runEngine(t, dir, f)
	ingesttest.WaitFor(t, ingesttest.Eventually, "5 records", func() bool { return len(f.read()) == 5 })
	r2.stop()
	if got, want := f.read(), []string{"only/only-001", "only/only-002", "only/only-003", "only/only-004", "only/only-005"}; !slices.Equal(got, want) {
		t.Errorf("read %v, want every record once: %v", got, want)
	}
	if calls := f.iterCalls(); !slices.Contains(calls, "only AFTER_SEQUENCE_NUMBER only-003") {
		t.Errorf("iterator calls %v: the second engine did not resume after only-003", calls)
	}
}

// TestEngineRecoversExpiredIterator expires the iterator at the first
// GetRecords call: the error is reported once, the iterator taken again
// at the same position, and no record is lost or read twice.
func TestEngineRecoversExpiredIterator(t *testing.T) {
	f := newFakeStream(2, Shard{ID: "only"})
	f.add("only", 5)
	f.failures["only"] = []error{errExpired}
	r := runEngine(t, t.TempDir(), f)
	ingesttest.WaitFor(t, ingesttest.Eventually, "5 records", func() bool { return len(f.read()) == 5 })
	if n := r.rep.Errors(ReasonExpiredIterator); n != 1 {
		t.Errorf("%d expired iterators reported, want 1", n)
	}
	if got := f.read(); !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != 5 {
		t.Errorf("read %v, want five records in order, once each", got)
	}
	if calls := f.iterCalls(); len(calls) < 2 || calls[0] != calls[1] {
		t.Errorf("iterator calls %v: want the first taken again at the same position", calls)
	}
	if err := r.e.Ready(); err != nil {
		t.Errorf("not ready after recovering: %v", err)
	}
}

// TestEngineSkipsLongShardIDs lists a shard whose id is longer than any
// the APIs give: it is not read (its id would name a checkpoint file and
// a series), the error is reported, and the other shard is read.
func TestEngineSkipsLongShardIDs(t *testing.T) {
	long := strings.Repeat("x", MaxShardIDLen+1)
	f := newFakeStream(10, Shard{ID: "ok"}, Shard{ID: long})
	f.add("ok", 3)
	f.add(long, 3)
	r := runEngine(t, t.TempDir(), f)
	ingesttest.WaitFor(t, ingesttest.Eventually, "the short shard's 3 records and the long one reported", func() bool {
		return len(f.read()) >= 3 && r.rep.Errors(ReasonAPI) > 0
	})
	r.stop()
	for _, rec := range f.read() {
		if strings.HasPrefix(rec, long) {
			t.Fatalf("read %s of the shard with a %d-byte id", rec, len(long))
		}
	}
	if err := r.rep.Last(ReasonAPI); err == nil || !strings.Contains(err.Error(), "shard id of 129 bytes") {
		t.Errorf("reported %v, want the shard id's length", err)
	}
}
