package demo

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/hotkeyd/hotkeyd/traffic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// generate returns n events at DefaultRate starting at t0, with the index
// writes they cause.
func generate(seed uint64, n int) []traffic.Event {
	w := New(Config{Seed: seed})
	evs := make([]traffic.Event, 0, n)
	step := time.Second / DefaultRate
	for i := range n {
		var ev traffic.Event
		w.Next(&ev, t0.Add(time.Duration(i)*step))
		evs = w.IndexWrites(append(evs, ev))
	}
	return evs
}

func TestDeterministic(t *testing.T) {
	a, b, c := generate(7, 5000), generate(7, 5000), generate(8, 5000)
	if len(a) != len(b) {
		t.Fatalf("two runs with one seed give %d and %d events", len(a), len(b))
	}
	same := 0
	for i := range min(len(a), len(c)) {
		if a[i] != b[i] {
			t.Fatalf("event %d differs between two runs with one seed: %+v vs %+v", i, a[i], b[i])
		}
		if a[i] == c[i] {
			same++
		}
	}
	if same == len(a) {
		t.Error("another seed gives the same events")
	}
}

// tableStats are one table's (or index's) per-class totals.
type tableStats struct {
	units, events [traffic.NumClasses]float64
	keyUnits      [traffic.NumClasses]map[string]float64
	sortKeys      map[string]map[string]bool
	keyless       int
}

// stats counts the events exactly, per table and index.
func stats(evs []traffic.Event) map[string]*tableStats {
	out := map[string]*tableStats{}
	for _, e := range evs {
		id := e.Table
		if e.Index != "" {
			id += "/" + e.Index
		}
		s := out[id]
		if s == nil {
			s = &tableStats{sortKeys: map[string]map[string]bool{}}
			for c := range s.keyUnits {
				s.keyUnits[c] = map[string]float64{}
			}
			out[id] = s
		}
		s.units[e.Class] += e.Units
		s.events[e.Class]++
		if e.PK == "" {
			s.keyless++
			continue
		}
		s.keyUnits[e.Class][e.PK] += e.Units
		if s.sortKeys[e.PK] == nil {
			s.sortKeys[e.PK] = map[string]bool{}
		}
		s.sortKeys[e.PK][e.SK] = true
	}
	return out
}

func (s *tableStats) share(c traffic.Class, key string) float64 {
	return s.keyUnits[c][key] / s.units[c]
}

func (s *tableStats) maxShare(c traffic.Class) (string, float64) {
	var best string
	var max float64
	for k, u := range s.keyUnits[c] {
		if u > max {
			best, max = k, u
		}
	}
	return best, max / s.units[c]
}

// testSeconds of traffic at the default rate, generated once for the tests
// that look at a window of it.
const testSeconds = 30

var window = sync.OnceValue(func() []traffic.Event { return generate(DefaultSeed, DefaultRate*testSeconds) })

// TestPlantedShapes checks, on 30 s of traffic at the default rate, the
// shapes Planted promises, with exact counts.
func TestPlantedShapes(t *testing.T) {
	const seconds = testSeconds
	evs := window()
	st := stats(evs)
	within := func(name string, got, want, tol float64) {
		t.Helper()
		if got < want-tol || got > want+tol {
			t.Errorf("%s = %.4f, want %.4f ± %.4f", name, got, want, tol)
		}
	}

	for _, p := range Planted() {
		id := p.Table
		if p.Index != "" {
			id += "/" + p.Index
		}
		if st[id] == nil {
			t.Errorf("planted %s has no traffic", id)
		}
	}

	// The planted rates, against one partition's 1000 WCU/s and 3000
	// RCU/s: warnings between 50 and 80 % of the ceiling, the trivial key
	// far below.
	rate := func(table string, c traffic.Class, key string) float64 { return st[table].keyUnits[c][key] / seconds }
	within("USER#42 WCU/s", rate("orders", traffic.Write, CelebrityUser), 600, 40)
	within("STATUS#OPEN WCU/s", rate("tickets", traffic.Write, "STATUS#OPEN"), 560, 40)
	within("EVENTS#2026-11-23 WCU/s", rate("events", traffic.Write, "EVENTS#2026-11-23"), 560, 40)
	within("PRODUCT#7 RCU/s", rate("products", traffic.Read, HotProduct), 1800, 120)
	// The index hot spot: told from the shipments' images, every shipment
	// write an IN_TRANSIT index write of 3 WCU, 600 WCU/s; no shipment key
	// written twice in a second.
	within("IN_TRANSIT index WCU/s", rate("shipments/by-status", traffic.Write, ShipmentStatus), 600, 40)
	if _, share := st["shipments"].maxShare(traffic.Write); share > 0.001 {
		t.Errorf("a shipment key takes %.2f%% of the table's writes: the table must look healthy", 100*share)
	}
	within("CONFIG#global share of settings writes", st["settings"].share(traffic.Write, TrivialKey), 1.0/3, 0.1)
	if r := rate("settings", traffic.Write, TrivialKey); r > 10 {
		t.Errorf("CONFIG#global at %.1f WCU/s, want a trivial rate", r)
	}
	if n := st["settings"].events[traffic.Write]; n < 100 {
		t.Errorf("settings has %v writes in %d s, under the 100-event floor: it would be quiet, not info", n, seconds)
	}

	orders := st["orders"]
	within("USER#42 share of orders writes", orders.share(traffic.Write, CelebrityUser), CelebrityShare, 0.01)
	if n := len(orders.sortKeys[CelebrityUser]); n < 1000 {
		t.Errorf("USER#42 has %d sort keys, want many (an item collection)", n)
	}
	if k, s := orders.maxShare(traffic.Read); s > 0.01 {
		t.Errorf("orders reads: %s has %.3f, want uniform", k, s)
	}

	products := st["products"]
	within("PRODUCT#7 share of products reads", products.share(traffic.Read, HotProduct), HotProductShare, 0.01)
	if n := len(products.sortKeys[HotProduct]); n != 1 {
		t.Errorf("PRODUCT#7 has %d sort keys, want 1 (a single item)", n)
	}

	tickets := st["tickets"]
	if n := len(tickets.keyUnits[traffic.Write]); n != len(statuses) {
		t.Errorf("tickets has %d partition keys, want %d statuses", n, len(statuses))
	}
	for k := range tickets.keyUnits[traffic.Write] {
		if !strings.HasPrefix(k, "STATUS#") {
			t.Errorf("tickets key %q", k)
		}
	}

	events := st["events"]
	if len(events.keyUnits[traffic.Write]) != 1 || events.keyUnits[traffic.Write]["EVENTS#2026-11-23"] == 0 {
		t.Errorf("events keys %v, want the one date key EVENTS#2026-11-23", events.keyUnits[traffic.Write])
	}

	tel := st["telemetry"]
	share := tel.share(traffic.Write, HotDevice)
	within("DEVICE#7781 share of telemetry writes", share, HotDeviceShare, 0.01)
	if share >= 0.10 {
		t.Errorf("DEVICE#7781 share %.3f: it must stay under the hot_key threshold", share)
	}
	wcu := tel.keyUnits[traffic.Write][HotDevice] / seconds
	if wcu < 850 || wcu >= 1000 {
		t.Errorf("DEVICE#7781 at %.0f WCU/s, want 850..1000 (near the partition ceiling)", wcu)
	}
	// 30 s hold about 630 of its writes: one standard deviation is 35 WCU/s.
	within("documented HotDeviceWCU", wcu, HotDeviceWCU, 3*35)

	sessions := st["sessions"]
	for c := range traffic.Class(traffic.NumClasses) {
		if k, s := sessions.maxShare(c); s > 0.001 {
			t.Errorf("sessions %s: %s has %.4f, want uniform", c, k, s)
		}
	}
	if sessions.keyless == 0 {
		t.Error("no keyless Scan in a minute of traffic")
	}

	gsi := st["orders/GSI1"]
	if gsi == nil || gsi.events[traffic.Read] == 0 {
		t.Fatal("no traffic on orders/GSI1")
	}
	if k, s := gsi.maxShare(traffic.Read); s > 0.01 {
		t.Errorf("GSI1: %s has %.3f, want uniform", k, s)
	}

	total := 0.0
	for _, s := range st {
		total += s.events[0] + s.events[1]
	}
	if int(total) != len(evs) {
		t.Errorf("counted %v events of %d", total, len(evs))
	}
}

// collector is a Sink keeping every Event.
type collector struct {
	mu     sync.Mutex
	events []traffic.Event
}

func (c *collector) Put(ctx context.Context, b []traffic.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, b...)
	return ctx.Err()
}

// accesses counts the application's accesses among evs: the Rate paces
// those, and the writes DynamoDB makes in the indexes come on top.
func accesses(evs []traffic.Event) int {
	n := 0
	for _, e := range evs {
		if e.Table != "shipments" || e.Index == "" {
			n++
		}
	}
	return n
}

func TestRunSteadyRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &collector{}
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		w := New(Config{Rate: 500})
		go func() { done <- w.Run(ctx, sink) }()
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if n := accesses(sink.events); n < 4990 || n > 5000 {
			t.Errorf("%d accesses in 10 s at 500/s", n)
		}
		prev := start
		for i, e := range sink.events {
			if e.Time.Before(prev) || e.Time.After(start.Add(10*time.Second)) {
				t.Fatalf("event %d at %v: not stamped in order within the run", i, e.Time.Sub(start))
			}
			prev = e.Time
			if e.Source != SourceName || e.Table == "" {
				t.Fatalf("event %d: %+v", i, e)
			}
		}
	})
}

func TestRunInjectedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The clock stamps the events; pacing follows it.
		base := time.Now()
		clock := func() time.Time { return t0.Add(time.Since(base)) }
		sink := &collector{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- New(Config{Now: clock, Rate: 100}).Run(ctx, sink) }()
		time.Sleep(time.Second + time.Millisecond)
		cancel()
		<-done
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if n := accesses(sink.events); n != 100 {
			t.Errorf("%d accesses in 1 s at 100/s", n)
		}
		for _, e := range sink.events {
			if e.Time.Before(t0) || e.Time.After(t0.Add(time.Second)) {
				t.Fatalf("event at %v, want within the injected clock's first second", e.Time)
			}
		}
	})
}

func TestRunReturnsSinkError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := traffic.SinkFunc(func(context.Context, []traffic.Event) error { return context.DeadlineExceeded })
		err := New(Config{}).Run(context.Background(), boom)
		if err != context.DeadlineExceeded {
			t.Errorf("Run with a failing sink: %v", err)
		}
	})
}
