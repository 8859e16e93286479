package export

import (
	"bytes"
	"compress/gzip"
	"context"
	"hash/crc32"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// text encodes families as the text exposition.
func text(t *testing.T, mfs []*dto.MetricFamily) string {
	t.Helper()
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestGatherMatchesCollect: the Collector's cached families (what the
// daemon serves) are the series a registry gathers from the Collector,
// in the same order, whatever the keys mode or the replica.
func TestGatherMatchesCollect(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  CollectorConfig
		top  int // the report's settings' top; 0 keeps the default
	}{
		{"plain", CollectorConfig{}, 0},
		{"redact", CollectorConfig{Masker: mustMasker(t, KeysRedact, "")}, 0},
		{"hash", CollectorConfig{Masker: mustMasker(t, KeysHash, "k")}, 0},
		{"top 1", CollectorConfig{}, 1},
		{"replica", CollectorConfig{Replica: "b"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := handState()
			if tc.top > 0 {
				rep.Settings.Top = tc.top
			}
			rep.Tables[0].Replica = "a"
			rep.Tables[0].Diagnoses[1].RaisedBy = "b"
			live := NewLive(func() time.Time { return t0 })
			live.Update(rep)
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(NewCollector(live, tc.cfg))
			want, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got, err := Gatherers(prometheus.NewRegistry(), NewCollector(live, tc.cfg)).Gather()
			if err != nil {
				t.Fatal(err)
			}
			if g, w := text(t, got), text(t, want); g != w {
				t.Errorf("gathered:\n%s\nwant, as a registry gathers it:\n%s", g, w)
			}
		})
	}
}

// TestGatherKeepsTables holds the incremental rule of the scrape: a table
// whose report kept its revision keeps its series (the same objects, not
// built again); one whose revision changed, or that has none, is built
// again; one gone is gone.
func TestGatherKeepsTables(t *testing.T) {
	rep := handState()
	live := NewLive(func() time.Time { return t0 })
	c := NewCollector(live, CollectorConfig{})
	seriesOf := func() map[string]*dto.Metric {
		t.Helper()
		mfs, err := c.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*dto.Metric{}
		for _, mf := range mfs {
			for _, m := range mf.Metric {
				id := mf.GetName()
				for _, l := range m.Label {
					id += " " + l.GetValue()
				}
				out[id] = m
			}
		}
		return out
	}
	const orders, index = "hotkeyd_partition_keys_distinct orders", "hotkeyd_partition_keys_distinct orders/status-index"
	live.Publish(rep, []uint64{1, 2})
	first := seriesOf()
	if first[orders] == nil || first[index] == nil {
		t.Fatalf("series %v", first)
	}
	live.Publish(rep, []uint64{1, 2}) // a new State, nothing changed
	second := seriesOf()
	for id, m := range first {
		if !strings.HasPrefix(id, "hotkeyd_last_evaluation_timestamp_seconds") && !strings.HasPrefix(id, "hotkeyd_partition_limit_units_per_second") && second[id] != m {
			t.Errorf("%s built again though its table did not change", id)
		}
	}
	rep2 := rep
	rep2.Tables = append([]report.TableReport(nil), rep.Tables...)
	rep2.Tables[1].DistinctPartitionKeys = 3
	live.Publish(rep2, []uint64{1, 3})
	third := seriesOf()
	if third[orders] != first[orders] || third[index] == first[index] || third[index].GetGauge().GetValue() != 3 {
		t.Errorf("after the index changed: orders kept %v, index built again %v with %v", third[orders] == first[orders], third[index] != first[index], third[index].GetGauge().GetValue())
	}
	live.Update(rep2) // no revisions: everything is built again
	if fourth := seriesOf(); fourth[orders] == third[orders] {
		t.Error("a State without revisions reused a table's series")
	}
	live.Publish(report.Report{Tables: rep2.Tables[:1]}, []uint64{1})
	if fifth := seriesOf(); fifth[index] != nil || fifth[orders] == nil {
		t.Errorf("after the index left the report: %d series, index %v", len(fifth), fifth[index])
	}
}

// scrape asks h for /metrics with the given Accept and Accept-Encoding
// headers, and returns the answer, decompressed, with its headers.
func scrape(t *testing.T, h http.Handler, accept, encoding string) (string, http.Header) {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	body := rec.Body.Bytes()
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatalf("the gzip answer does not read back (CRC, size): %v", err)
		}
		if rest, _ := io.ReadAll(zr); len(rest) != 0 {
			t.Error("data after the gzip member")
		}
	}
	return string(body), rec.Header()
}

// sortedLines returns text's lines, sorted.
func sortedLines(text string) []string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	slices.Sort(lines)
	return lines
}

// TestExpositionAnswers: /metrics answered from the kept text, plain and
// gzipped, in the text format and OpenMetrics, has the lines promhttp
// writes for the same families (a family's series come table by table),
// each family's lines together, OpenMetrics' "# EOF" last; protobuf and
// name[] filters are promhttp's own answer.
func TestExpositionAnswers(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hotkeyd_a_first", Help: "before the report's"}, func() float64 { return 1 }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hotkeyd_zz_last", Help: "after the report's"}, func() float64 { return 2 }))
	live := NewLive(func() time.Time { return t0 })
	live.Publish(handState(), []uint64{1, 2})
	e := NewExposition(reg, NewCollector(live, CollectorConfig{}))
	opts := promhttp.HandlerOpts{EnableOpenMetrics: true}
	fast, slow := e.Handler(opts), promhttp.HandlerFor(e, opts)
	for _, tc := range []struct{ name, accept string }{
		{"text", ""},
		{"openmetrics", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,text/plain;version=0.0.4;q=0.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wh := scrape(t, slow, tc.accept, "")
			plain, ph := scrape(t, fast, tc.accept, "")
			zipped, zh := scrape(t, fast, tc.accept, "gzip")
			if ph.Get("Content-Type") != wh.Get("Content-Type") || zh.Get("Content-Type") != wh.Get("Content-Type") {
				t.Errorf("content types %q and %q, promhttp's %q", ph.Get("Content-Type"), zh.Get("Content-Type"), wh.Get("Content-Type"))
			}
			if zh.Get("Content-Encoding") != "gzip" || ph.Get("Content-Encoding") != "" {
				t.Errorf("content encodings %q (gzip asked) and %q (none)", zh.Get("Content-Encoding"), ph.Get("Content-Encoding"))
			}
			if zipped != plain {
				t.Errorf("gzipped answer differs from the plain one:\n%s\n--\n%s", zipped, plain)
			}
			if !slices.Equal(sortedLines(plain), sortedLines(want)) {
				t.Errorf("answer:\n%s\nwant the lines of promhttp's:\n%s", plain, want)
			}
			// Each family's lines together, in the order of the names.
			var names []string
			for line := range strings.SplitSeq(plain, "\n") {
				if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
					names = append(names, strings.Fields(name)[0])
				}
			}
			if !slices.IsSorted(names) || names[0] != "hotkeyd_a_first" || names[len(names)-1] != "hotkeyd_zz_last" {
				t.Errorf("families in the order %q", names)
			}
			if tc.name == "openmetrics" && !strings.HasSuffix(plain, "# EOF\n") {
				t.Error("OpenMetrics answer does not end with # EOF")
			}
		})
	}
	for _, tc := range []struct{ name, accept, query string }{
		{"protobuf", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", ""},
		{"name filter", "", "?name[]=hotkeyd_keys_omitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			get := func(h http.Handler) []byte {
				req := httptest.NewRequest("GET", "/metrics"+tc.query, nil)
				req.Header.Set("Accept", tc.accept)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec.Body.Bytes()
			}
			if a, b := get(fast), get(slow); !bytes.Equal(a, b) || len(a) == 0 {
				t.Errorf("answer differs from promhttp's (%d and %d bytes)", len(a), len(b))
			}
		})
	}
}

// TestExpositionKeepsTables holds the incremental rule of the scrape: a
// table whose report kept its revision keeps its text (the same bytes,
// not encoded again), and the families' compressed chunks stand while no
// table changed; a table whose revision changed, or that has none, is
// encoded again; one gone is gone.
func TestExpositionKeepsTables(t *testing.T) {
	rep := handState()
	live := NewLive(func() time.Time { return t0 })
	e := NewExposition(prometheus.NewRegistry(), NewCollector(live, CollectorConfig{}))
	h := e.Handler(promhttp.HandlerOpts{})
	kept := func() map[string]*tableText {
		scrape(t, h, "", "gzip")
		t.Helper()
		e.mu.Lock()
		defer e.mu.Unlock()
		return maps.Clone(e.texts[textKind{typ: expfmt.TypeTextPlain}].tables)
	}
	chunks := func() [numFamilies]*chunk {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.texts[textKind{typ: expfmt.TypeTextPlain}].chunks
	}
	live.Publish(rep, []uint64{1, 2})
	first := kept()
	c1 := chunks()
	live.Publish(rep, []uint64{1, 2}) // a new State, nothing changed
	second := kept()
	if second["orders"] != first["orders"] || second["orders/status-index"] != first["orders/status-index"] || chunks() != c1 {
		t.Error("text or chunks made again though no table changed")
	}
	rep2 := rep
	rep2.Tables = append([]report.TableReport(nil), rep.Tables...)
	rep2.Tables[1].DistinctPartitionKeys = 3
	live.Publish(rep2, []uint64{1, 3})
	third := kept()
	if third["orders"] != first["orders"] || third["orders/status-index"] == first["orders/status-index"] || chunks() == c1 {
		t.Errorf("after the index changed: orders kept %v, index encoded again %v, chunks made again %v",
			third["orders"] == first["orders"], third["orders/status-index"] != first["orders/status-index"], chunks() != c1)
	}
	if body, _ := scrape(t, h, "", ""); !strings.Contains(body, `hotkeyd_partition_keys_distinct{table="orders/status-index"} 3`) {
		t.Errorf("the index's new figure is not served:\n%s", body)
	}
	live.Update(rep2) // no revisions: every table is encoded again
	if fourth := kept(); fourth["orders"] == third["orders"] {
		t.Error("a State without revisions kept a table's text")
	}
	live.Publish(report.Report{Tables: rep2.Tables[:1]}, []uint64{1})
	fifth := kept()
	if fifth["orders/status-index"] != nil || fifth["orders"] == nil {
		t.Errorf("after the index left the report: kept %v", fifth)
	}
	// A report judged with another top (a reload's: one key a class),
	// its tables' revisions unchanged: their text is made again.
	rep3 := report.Report{Tables: rep2.Tables[:1], Settings: rep2.Settings}
	rep3.Settings.Top = 1
	live.Publish(rep3, []uint64{1})
	if sixth := kept(); sixth["orders"] == fifth["orders"] {
		t.Error("a report with another top kept a table's text")
	}
	body, _ := scrape(t, h, "", "")
	for _, class := range []string{"read", "write"} {
		n := 0
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, `hotkeyd_key_share{class="`+class+`"`) && strings.Contains(l, `table="orders"}`) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d %s keys of orders after top 1, want 1:\n%s", n, class, body)
		}
	}
	// Another Collector (a reload's: keys redacted), the same State: its
	// text, not the former's.
	e.SetCollector(NewCollector(live, CollectorConfig{Masker: mustMasker(t, KeysRedact, "")}))
	got, _ := scrape(t, h, "", "gzip")
	want, _ := scrape(t, promhttp.HandlerFor(e, promhttp.HandlerOpts{}), "", "")
	if !slices.Equal(sortedLines(got), sortedLines(want)) || strings.Contains(got, "USER#alice") {
		t.Errorf("after SetCollector:\n%s\nwant the new Collector's:\n%s", got, want)
	}
}

// countedKept is a Kept gatherer that counts its gatherings.
type countedKept struct {
	Kept
	gathers int
}

func (k *countedKept) Gather() ([]*dto.MetricFamily, error) {
	k.gathers++
	return k.Kept.Gather()
}

// TestExpositionKeepsSinkCounters: the CountingSink's per-table counters
// are gathered and encoded again only after a batch was counted or a
// table dropped, and /metrics serves, in every format, plain and
// gzipped, the lines promhttp writes for the same families at once: a
// batch counted or a table dropped since the last scrape is never served
// stale.
func TestExpositionKeepsSinkCounters(t *testing.T) {
	now := t0
	clock := func() time.Time { return now }
	store, err := sketch.NewStore(sketch.Config{Window: time.Minute, MaxTables: 2}, clock)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hotkeyd_a_first", Help: "before the sink's"}, func() float64 { return 1 }))
	sink, err := NewCountingSink(store, reg, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept := &countedKept{Kept: sink}
	live := NewLive(clock)
	live.Publish(handState(), []uint64{1, 2})
	e := NewExposition(reg, NewCollector(live, CollectorConfig{}), kept)
	opts := promhttp.HandlerOpts{EnableOpenMetrics: true}
	fast, slow := e.Handler(opts), promhttp.HandlerFor(e, opts)
	put := func(table string, n int, units float64) {
		t.Helper()
		batch := make([]traffic.Event, n)
		for i := range batch {
			batch[i] = traffic.Event{Table: table, PK: "K", Class: traffic.Write, Units: units, Time: now, Source: "http"}
		}
		if err := sink.Put(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	// check scrapes every kind of answer and compares it with promhttp's;
	// it returns the gatherings of the sink's counters the answers made.
	check := func(step string, want ...string) int {
		t.Helper()
		n := 0
		for _, accept := range []string{"", "application/openmetrics-text;version=1.0.0;escaping=underscores,text/plain;version=0.0.4;q=0.3"} {
			for _, encoding := range []string{"", "gzip"} {
				before := kept.gathers
				got, _ := scrape(t, fast, accept, encoding)
				n += kept.gathers - before
				ref, _ := scrape(t, slow, accept, "")
				if !slices.Equal(sortedLines(withoutRuntime(got)), sortedLines(withoutRuntime(ref))) {
					t.Errorf("%s, %q %q: answer\n%s\nwant the lines of promhttp's\n%s", step, accept, encoding, got, ref)
				}
				for _, w := range want {
					if accept == "" && !strings.Contains(got, w) {
						t.Errorf("%s: %q not served:\n%s", step, w, got)
					}
				}
			}
		}
		return n
	}
	put("orders", 5, 2)
	put("sessions", 2, 1)
	if n := check("first", `hotkeyd_events_total{class="write",source="http",table="orders"} 5`); n != 2 {
		t.Errorf("first scrapes gathered the sink %d times, want 2 (once a format)", n)
	}
	if n := check("nothing counted"); n != 0 {
		t.Errorf("the sink's counters gathered %d times though nothing was counted", n)
	}
	put("orders", 3, 2)
	if n := check("a batch counted", `hotkeyd_events_total{class="write",source="http",table="orders"} 8`,
		`hotkeyd_units_total{class="write",table="orders"} 16`); n != 2 {
		t.Errorf("after a batch the sink was gathered %d times, want 2", n)
	}
	// Every table idle: a new one takes the place of one of them, whose
	// series are dropped.
	now = now.Add(2 * time.Minute)
	put("junk", 1, 1)
	if n := check("a table dropped", `hotkeyd_events_total{class="write",source="http",table="junk"} 1`); n != 2 {
		t.Errorf("after a table was dropped the sink was gathered %d times, want 2", n)
	}
	if got, _ := scrape(t, fast, "", ""); strings.Count(got, "hotkeyd_events_total{") != 2 {
		t.Errorf("after a table was dropped, the answer:\n%s\nwant the series of two tables", got)
	}
}

// discard is a ResponseWriter that keeps nothing of the answer.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// TestIdleScrapeAllocatesLittle: a gzip scrape of tables whose text is
// kept allocates a few kilobytes, even after garbage collections: its
// buffered writer and compressor (a megabyte) are the Exposition's, not
// a pool's that a collection empties. An idle daemon with a small heap is
// collected between two scrapes; made anew at each, they were most of
// what it allocated, and so the cause of the next collection.
func TestIdleScrapeAllocatesLittle(t *testing.T) {
	live := NewLive(func() time.Time { return t0 })
	live.Publish(handState(), []uint64{1, 2})
	h := NewExposition(prometheus.NewRegistry(), NewCollector(live, CollectorConfig{})).Handler(promhttp.HandlerOpts{})
	scrapeOnce := func() {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		h.ServeHTTP(&discard{h: http.Header{}}, req)
	}
	scrapeOnce() // the text is made, and its chunks
	var before, after runtime.MemStats
	for range 3 {
		runtime.GC()
		runtime.GC() // a pool's victims go too
		runtime.ReadMemStats(&before)
		scrapeOnce()
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
			t.Errorf("an idle scrape after collections allocated %d bytes, want under 64 KiB", n)
		}
	}
}

// TestCRC32Combine: the CRC of two pieces put together is the CRC of
// their concatenation.
func TestCRC32Combine(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		a, b := make([]byte, rnd.IntN(3000)), make([]byte, rnd.IntN(3000))
		for i := range a {
			a[i] = byte(rnd.IntN(256))
		}
		for i := range b {
			b[i] = byte(rnd.IntN(256))
		}
		want := crc32.ChecksumIEEE(append(slices.Clone(a), b...))
		if got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b))); got != want {
			t.Fatalf("%d and %d bytes: %08x, want %08x", len(a), len(b), got, want)
		}
	}
}
