package sketch

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/go-kratos/aegis/topk"
	boom "github.com/tylertreat/BoomFilters"
	"github.com/ulikunitz/xz"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// The heavy-hitter benchmarks feed whole workloads (one iteration = the whole
// workload; run with -benchtime=1x) into each implementation and report:
//
//	ns/update      wall time per event
//	cpu-ns/update  process CPU time per event (steadier on a shared machine;
//	               includes the garbage collector's work)
//	bytes          heap held by the implementation after the workload
//	precision@10   share of the reported top 10 in the true top 10
//	precision@100  share of the reported top 100 in the true top 100
//	share-err-pp   mean |estimated - true| share of the reported top 10, in
//	               percentage points
//
// Trace workloads with several tables (cache2k ORM: type = table) average the
// accuracy metrics over the tables with at least 100 distinct keys.
//
// Implementations: hotkeyd (Store.Put with the default live configuration and
// a frozen clock, so the whole workload lands in one 5 s slot of the 60 s
// window), exact (a map per table), boom-topk (tylertreat/BoomFilters TopK:
// count-min + heap) and heavykeeper (go-kratos/aegis/topk). The peers get per
// table the memory hotkeyd's heavy-hitter state of one class takes: both
// count-min generations plus the candidates (peerBudget, about 250 KiB).
// Other Go top-K modules (HeavyKeeper, Space-Saving, count-min) are not
// served by the module proxy here; docs/bench/sketch.md lists them.

// workload is a sequence of accesses to keys of tables.
type workload struct {
	name     string
	tables   []string
	keys     []string // distinct partition keys
	keyBytes [][]byte // the same, for byte-slice APIs
	tbl      []uint8  // per access: table index
	pk       []uint32 // per access: key index
	sk       []uint16 // per access: sort key (empty: none)
	skNames  []string
	exact    []map[uint32]uint64 // per table: exact counts
	perTable []uint64            // per table: accesses
}

func (w *workload) finish() {
	w.keyBytes = make([][]byte, len(w.keys))
	for i, k := range w.keys {
		w.keyBytes[i] = []byte(k)
	}
	w.exact = make([]map[uint32]uint64, len(w.tables))
	w.perTable = make([]uint64, len(w.tables))
	for i := range w.exact {
		w.exact[i] = map[uint32]uint64{}
	}
	for i, k := range w.pk {
		w.exact[w.tbl[i]][k]++
		w.perTable[w.tbl[i]]++
	}
}

const (
	benchKeys    = 1_000_000
	benchUpdates = 10_000_000
)

var (
	workloadsMu sync.Mutex
	workloads   = map[string]*workload{}
)

// getWorkload builds a workload once per process.
func getWorkload(b *testing.B, name string) *workload {
	workloadsMu.Lock()
	defer workloadsMu.Unlock()
	if w, ok := workloads[name]; ok {
		if w == nil {
			b.Skip("workload unavailable")
		}
		return w
	}
	w, err := buildWorkload(name)
	if err != nil {
		workloads[name] = nil
		b.Skip(err)
	}
	workloads[name] = w
	return w
}

func buildWorkload(name string) (*workload, error) {
	switch name {
	case "zipf0.8", "zipf1.0", "zipf1.2":
		s, _ := strconv.ParseFloat(name[4:], 64)
		w := &workload{name: name, tables: []string{"bench"}}
		w.keys = make([]string, benchKeys)
		for i := range w.keys {
			w.keys[i] = keyName(i)
		}
		z := newZipf(benchKeys, s, 20261122)
		w.pk = make([]uint32, benchUpdates)
		w.tbl = make([]uint8, benchUpdates)
		// Ranks are shuffled onto keys so that hot keys are not the
		// smallest strings.
		perm := z.rng.Perm(benchKeys)
		for i := range w.pk {
			w.pk[i] = uint32(perm[z.next()])
		}
		w.finish()
		return w, nil
	case "orm-busy":
		return ormTrace(filepath.Join(dataDir(), "traces", "cache2k", "orm-busy.trace.xz"))
	case "scarab":
		return scarabTrace(filepath.Join(dataDir(), "traces", "scarab", "scarab-recs.trace.xz"))
	}
	return nil, fmt.Errorf("unknown workload %q", name)
}

// dataDir is the shared sample data beside the repository.
func dataDir() string { return filepath.Join("..", "..", "shared", "data") }

func openXZ(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("trace %s not found: the benchmark needs ../shared/data beside the repository", path)
		}
		return nil, nil, err
	}
	r, err := xz.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return bufio.NewReaderSize(r, 1<<20), f.Close, nil
}

// ormTrace reads a cache2k ORM trace: big-endian int32 accesses packing
// type (bits 27-31), id (9-26) and index (0-8), read as table, partition
// key and sort key.
func ormTrace(path string) (*workload, error) {
	r, closeFn, err := openXZ(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = closeFn() }()
	w := &workload{name: "orm-busy"}
	tables := map[uint32]uint8{}
	keys := map[uint64]uint32{}
	var buf [4]byte
	for {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			break
		}
		v := binary.BigEndian.Uint32(buf[:])
		typ, id, idx := v>>27, (v>>9)&(1<<18-1), v&(1<<9-1)
		ti, ok := tables[typ]
		if !ok {
			ti = uint8(len(w.tables))
			tables[typ] = ti
			w.tables = append(w.tables, fmt.Sprintf("orm-type-%d", typ))
		}
		kk := uint64(typ)<<32 | uint64(id)
		ki, ok := keys[kk]
		if !ok {
			ki = uint32(len(w.keys))
			keys[kk] = ki
			w.keys = append(w.keys, fmt.Sprintf("E%d#%d", typ, id)) // unique across tables
		}
		w.tbl = append(w.tbl, ti)
		w.pk = append(w.pk, ki)
		w.sk = append(w.sk, uint16(idx))
	}
	w.skNames = make([]string, 1<<9)
	for i := range w.skNames {
		w.skNames[i] = fmt.Sprintf("IDX#%03d", i)
	}
	w.finish()
	return w, nil
}

// scarabTrace reads the scarab trace: big-endian int64 keys.
func scarabTrace(path string) (*workload, error) {
	r, closeFn, err := openXZ(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = closeFn() }()
	w := &workload{name: "scarab", tables: []string{"recs"}}
	keys := map[uint64]uint32{}
	var buf [8]byte
	for {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			break
		}
		v := binary.BigEndian.Uint64(buf[:])
		ki, ok := keys[v]
		if !ok {
			ki = uint32(len(w.keys))
			keys[v] = ki
			w.keys = append(w.keys, strconv.FormatUint(v, 10))
		}
		w.tbl = append(w.tbl, 0)
		w.pk = append(w.pk, ki)
	}
	w.finish()
	return w, nil
}

// ranked is one reported key of one table.
type ranked struct {
	key   uint32
	count float64
}

// hhImpl is one heavy-hitter implementation under test.
type hhImpl interface {
	// start sizes the implementation for w.
	start(w *workload)
	// prepare readies accesses [from, to) the way a reader hands them over
	// (hotkeyd: a batch of Events); untimed.
	prepare(w *workload, from, to int)
	// count counts accesses [from, to); timed.
	count(w *workload, from, to int)
	// top returns a table's heaviest keys, heaviest first, at most n.
	top(w *workload, table, n int) []ranked
}

// benchBatch is the number of accesses handed over at once.
const benchBatch = 1024

var touchSink byte

// touch reads the key bytes of accesses [from, to) so that they are in the
// cache when counted, as they are right after a reader decoded them: 1M
// distinct keys would otherwise make every access a cache miss on the key
// bytes, which no real reader has.
func touch(w *workload, from, to int) {
	var x byte
	for _, k := range w.pk[from:to] {
		key := w.keys[k]
		x ^= key[0] ^ key[len(key)-1] ^ w.keyBytes[k][len(key)/2]
	}
	touchSink ^= x
}

// run feeds the whole workload, timing only count, and returns the CPU
// time the process spent in count.
func run(b *testing.B, impl hhImpl, w *workload) time.Duration {
	impl.start(w)
	var cpu time.Duration
	for i := 0; i < len(w.pk); i += benchBatch {
		to := min(i+benchBatch, len(w.pk))
		b.StopTimer()
		touch(w, i, to)
		impl.prepare(w, i, to)
		b.StartTimer()
		// The CPU time is read inside the timed part: StartTimer and
		// StopTimer each call runtime.ReadMemStats, a stop of the world
		// that cost about 45 ns of CPU per update (pprof), which the
		// CPU time per update counted when it was read outside them.
		c0 := cpuTime()
		impl.count(w, i, to)
		cpu += cpuTime() - c0
		b.StopTimer()
		b.StartTimer()
	}
	return cpu
}

// cpuTime is the user and system CPU time of the process so far. On a
// machine shared with other work, CPU time per update is steadier than
// wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peerBudget is the memory given to each peer per table: what hotkeyd's
// heavy-hitter state of one class takes at the default configuration.
func peerBudget() int {
	c := DefaultConfig()
	cms := 2 * c.Depth * c.Width * 4
	// Per candidate: hash, total, estimate flags, entry, heap position
	// (57 bytes), per-slot units, accesses and sort-key bitmaps, a 24-byte
	// key and its index: the state that counts, without per-second peaks.
	cand := c.Candidates * (57 + c.SubWindows*12 + 24 + 16)
	return cms + cand
}

type hotkeydImpl struct {
	store *Store
	batch []traffic.Event
	keyIx map[string]uint32
}

func (h *hotkeydImpl) start(*workload) {
	h.store, _ = NewStore(DefaultConfig(), func() time.Time { return t0 })
}

func (h *hotkeydImpl) prepare(w *workload, from, to int) {
	h.batch = h.batch[:to-from]
	for j := range h.batch {
		e := &h.batch[j]
		*e = traffic.Event{Table: w.tables[w.tbl[from+j]], PK: w.keys[w.pk[from+j]], Class: traffic.Write, Units: 1}
		if w.sk != nil {
			e.SK = w.skNames[w.sk[from+j]]
		}
	}
}

func (h *hotkeydImpl) count(*workload, int, int) {
	_ = h.store.Put(context.Background(), h.batch)
}

func (h *hotkeydImpl) top(w *workload, table, n int) []ranked {
	if h.keyIx == nil {
		h.keyIx = make(map[string]uint32, len(w.keys))
		for i, k := range w.keys {
			h.keyIx[k] = uint32(i)
		}
	}
	var out []ranked
	for _, ts := range h.store.Snapshot().Tables {
		if ts.Table != w.tables[table] {
			continue
		}
		for _, k := range ts.Classes[traffic.Write].Top {
			out = append(out, ranked{key: h.keyIx[k.Key], count: k.Units})
		}
	}
	if len(out) > n {
		out = out[:n]
	}
	return out
}

type exactImpl struct{ counts []map[string]uint64 }

func (e *exactImpl) start(w *workload) {
	e.counts = make([]map[string]uint64, len(w.tables))
	for i := range e.counts {
		e.counts[i] = map[string]uint64{}
	}
}

func (e *exactImpl) prepare(*workload, int, int) {}

func (e *exactImpl) count(w *workload, from, to int) {
	for i := from; i < to; i++ {
		e.counts[w.tbl[i]][w.keys[w.pk[i]]]++
	}
}

func (e *exactImpl) top(w *workload, table, n int) []ranked {
	ix := map[string]uint32{}
	for i, k := range w.keys {
		ix[k] = uint32(i)
	}
	var out []ranked
	for k, c := range e.counts[table] {
		out = append(out, ranked{key: ix[k], count: float64(c)})
	}
	sortRanked(out)
	if len(out) > n {
		out = out[:n]
	}
	return out
}

type boomImpl struct{ tk []*boom.TopK }

func (p *boomImpl) start(w *workload) {
	// Depth 4 as hotkeyd (δ = e^-4); width from the budget, 8-byte counters.
	width := peerBudget() / (4 * 8)
	p.tk = make([]*boom.TopK, len(w.tables))
	for i := range p.tk {
		p.tk[i] = boom.NewTopK(math.E/float64(width), math.Exp(-4)+1e-9, 100)
	}
}

func (p *boomImpl) prepare(*workload, int, int) {}

func (p *boomImpl) count(w *workload, from, to int) {
	for i := from; i < to; i++ {
		p.tk[w.tbl[i]].Add(w.keyBytes[w.pk[i]])
	}
}

func (p *boomImpl) top(w *workload, table, n int) []ranked {
	ix := map[string]uint32{}
	for i, k := range w.keys {
		ix[k] = uint32(i)
	}
	var out []ranked
	for _, e := range p.tk[table].Elements() {
		out = append(out, ranked{key: ix[string(e.Data)], count: float64(e.Freq)})
	}
	sortRanked(out)
	if len(out) > n {
		out = out[:n]
	}
	return out
}

type heavyKeeperImpl struct{ hk []topk.Topk }

func (p *heavyKeeperImpl) start(w *workload) {
	// The paper's setting: 2 rows, decay base 1.08; 8-byte buckets.
	width := uint32(peerBudget() / (2 * 8))
	p.hk = make([]topk.Topk, len(w.tables))
	for i := range p.hk {
		p.hk[i] = topk.NewHeavyKeeper(100, width, 2, 1/1.08, 0)
	}
}

func (p *heavyKeeperImpl) prepare(*workload, int, int) {}

func (p *heavyKeeperImpl) count(w *workload, from, to int) {
	for i := from; i < to; i++ {
		p.hk[w.tbl[i]].Add(w.keys[w.pk[i]], 1)
	}
}

func (p *heavyKeeperImpl) top(w *workload, table, n int) []ranked {
	ix := map[string]uint32{}
	for i, k := range w.keys {
		ix[k] = uint32(i)
	}
	var out []ranked
	for _, e := range p.hk[table].List() {
		out = append(out, ranked{key: ix[e.Key], count: float64(e.Count)})
	}
	sortRanked(out)
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func sortRanked(r []ranked) {
	sort.Slice(r, func(i, j int) bool {
		if r[i].count != r[j].count {
			return r[i].count > r[j].count
		}
		return r[i].key < r[j].key
	})
}

// accuracy computes precision@10, precision@100 and the top-10 share error
// of one table.
func accuracy(w *workload, table int, got []ranked) (p10, p100, shareErr float64) {
	exact := w.exact[table]
	truth := make([]ranked, 0, len(exact))
	for k, c := range exact {
		truth = append(truth, ranked{key: k, count: float64(c)})
	}
	sortRanked(truth)
	prec := func(n int) float64 {
		if len(truth) == 0 {
			return 1
		}
		n = min(n, len(truth))
		cut := truth[n-1].count // keys tied with the n-th count as hits
		hit := 0
		for _, r := range got[:min(n, len(got))] {
			if float64(exact[r.key]) >= cut {
				hit++
			}
		}
		return float64(hit) / float64(n)
	}
	total := float64(w.perTable[table])
	var sum float64
	n := min(10, len(got))
	for _, r := range got[:n] {
		sum += math.Abs(r.count-float64(exact[r.key])) / total * 100
	}
	if n > 0 {
		sum /= float64(n)
	}
	return prec(10), prec(100), sum
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func BenchmarkHeavyHitters(b *testing.B) {
	impls := []struct {
		name string
		make func() hhImpl
	}{
		// The reader's batch buffer is made before the heap is measured:
		// it is the reader's, not the Store's.
		{"hotkeyd", func() hhImpl { return &hotkeydImpl{batch: make([]traffic.Event, benchBatch)} }},
		{"exact", func() hhImpl { return &exactImpl{} }},
		{"boom-topk", func() hhImpl { return &boomImpl{} }},
		{"heavykeeper", func() hhImpl { return &heavyKeeperImpl{} }},
	}
	for _, wl := range []string{"zipf0.8", "zipf1.0", "zipf1.2", "orm-busy", "scarab"} {
		b.Run(wl, func(b *testing.B) {
			w := getWorkload(b, wl)
			for _, im := range impls {
				b.Run(im.name, func(b *testing.B) {
					var impl hhImpl
					var bytes uint64
					var cpu time.Duration
					for range b.N {
						b.StopTimer()
						impl = im.make()
						before := heapInUse()
						b.StartTimer()
						cpu += run(b, impl, w)
						b.StopTimer()
						bytes = heapInUse() - min(before, heapInUse())
						b.StartTimer()
					}
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(w.pk)), "ns/update")
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*len(w.pk)), "cpu-ns/update")
					b.ReportMetric(float64(bytes), "bytes")
					var p10, p100, se float64
					var n int
					for t := range w.tables {
						if len(w.exact[t]) < 100 && len(w.tables) > 1 {
							continue
						}
						a, c, d := accuracy(w, t, impl.top(w, t, 100))
						p10, p100, se = p10+a, p100+c, se+d
						n++
					}
					b.ReportMetric(p10/float64(n), "precision@10")
					b.ReportMetric(p100/float64(n), "precision@100")
					b.ReportMetric(se/float64(n), "share-err-pp")
				})
			}
		})
	}
}

// hashImpl hashes each access's key as Store.Put does (xxh3), and counts
// nothing: the floor of any structure that hashes its keys.
type hashImpl struct{ sink uint64 }

func (h *hashImpl) start(*workload)             {}
func (h *hashImpl) prepare(*workload, int, int) {}
func (h *hashImpl) count(w *workload, from, to int) {
	x := h.sink
	for i := from; i < to; i++ {
		x ^= keyHash(w.keys[w.pk[i]])
	}
	h.sink = x
}
func (h *hashImpl) top(*workload, int, int) []ranked { return nil }

// readImpl reads every byte of each access's key, eight at a time, and
// counts nothing: the floor of any counter, exact or not, that looks at
// its keys, the map included (the map reads them to hash them and again
// to compare them). It differs from hashImpl by the hash's own work.
type readImpl struct{ hashImpl }

func (h *readImpl) count(w *workload, from, to int) {
	x := h.sink
	for i := from; i < to; i++ {
		x ^= readKey(w.keys[w.pk[i]])
	}
	h.sink = x
}

// readKey folds k's bytes into a word, eight bytes a load where it can.
func readKey(k string) uint64 {
	var x uint64
	for len(k) >= 8 {
		x ^= binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(k), 8))
		k = k[8:]
	}
	for i := 0; i < len(k); i++ {
		x = x<<8 | uint64(k[i])
	}
	return x
}

// packedHashImpl hashes the same keys copied, untimed, one batch after
// the other into one buffer, as a reader's decoded batch holds them: what
// the hash costs without the first touch of a million keys' scattered
// bytes (BenchmarkHeavyHitters reads them first, touch, but 1024 keys on
// as many pages do not stay close).
type packedHashImpl struct {
	hashImpl
	buf  []byte
	keys []string
}

func (h *packedHashImpl) prepare(w *workload, from, to int) {
	h.buf, h.keys = h.buf[:0], h.keys[:0]
	for i := from; i < to; i++ {
		h.buf = append(h.buf, w.keys[w.pk[i]]...)
	}
	off := 0
	for i := from; i < to; i++ {
		n := len(w.keys[w.pk[i]])
		h.keys = append(h.keys, unsafe.String(&h.buf[off], n))
		off += n
	}
}

func (h *packedHashImpl) count(*workload, int, int) {
	x := h.sink
	for _, k := range h.keys {
		x ^= keyHash(k)
	}
	h.sink = x
}

// eventsImpl puts the workload's batches of Events through Store.Put
// without their keys: the batch passes, the per-event checks and the
// class totals, no hash and no key counted.
type eventsImpl struct{ hotkeydImpl }

func (e *eventsImpl) prepare(w *workload, from, to int) {
	e.hotkeydImpl.prepare(w, from, to)
	for j := range e.batch {
		e.batch[j].PK = ""
	}
}

// BenchmarkFloor measures, on the Zipf workloads of BenchmarkHeavyHitters
// and with its harness (run in the same process as it, alternating), what
// an update costs before the counting core counts its key: "hash" hashes
// each key (xxh3), "hash-packed" the same keys packed batch by batch into
// one buffer, "events" is Store.Put of the same Events without their
// keys. Their sum is the least the counting core can cost per update
// without changing the hash or the batch interface (docs/bench/sketch.md,
// issue 41, fourth round).
func BenchmarkFloor(b *testing.B) {
	impls := []struct {
		name string
		make func() hhImpl
	}{
		{"read", func() hhImpl { return &readImpl{} }},
		{"hash", func() hhImpl { return &hashImpl{} }},
		{"hash-packed", func() hhImpl { return &packedHashImpl{buf: make([]byte, 0, 64*benchBatch)} }},
		{"events", func() hhImpl {
			return &eventsImpl{hotkeydImpl{batch: make([]traffic.Event, benchBatch)}}
		}},
	}
	for _, wl := range []string{"zipf1.0", "zipf1.2"} {
		b.Run(wl, func(b *testing.B) {
			w := getWorkload(b, wl)
			for _, im := range impls {
				b.Run(im.name, func(b *testing.B) {
					var cpu time.Duration
					for range b.N {
						cpu += run(b, im.make(), w)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(w.pk)), "ns/update")
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*len(w.pk)), "cpu-ns/update")
				})
			}
		})
	}
}
