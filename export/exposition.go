package export

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// Exposition is what the daemon serves at /metrics: the families of a
// registry, gathered and encoded at each scrape; the Collector's (the
// report's series, tens of thousands with a thousand tables), whose text
// is kept per table and exposition format while the table's report keeps
// its revision (State.Revisions); and those of Kept gatherers (the
// CountingSink's per-table counters, thousands of series), whose text is
// kept per format while their Revision stays. Each kept family is
// compressed once a gzip scrape asked for it. A scrape of idle tables
// copies their text: it builds, sorts and encodes only the registry's
// families. Formats other than the text ones (protobuf) and name[]
// filters are served as a registry would serve the same families
// (promhttp over Gather).
//
// The Collector's series come table by table within each family (a
// registry sorts them by their label values); the series are the same.
//
// Concurrent scrapes of one kind share one answer before they reach it
// (the server's scrapes), so the text is made at most once per kind and
// report.
type Exposition struct {
	reg  prometheus.Gatherer
	kept []Kept
	c    atomic.Pointer[Collector]

	mu    sync.Mutex
	texts map[textKind]*texts
	// bw and fw are the answers' buffered writer and compressor, made
	// once and guarded by mu, which every answer holds while it writes:
	// pooled, they went with each garbage collection, and an idle
	// daemon whose small heap is collected between two scrapes made them
	// again (a megabyte) at every scrape, and so the next collection.
	bw *bufio.Writer
	fw *flate.Writer
}

// Kept is a prometheus.Gatherer whose families change only when its
// Revision does: an Exposition gathers and encodes them again only then.
// Its families' names are its own, neither the registry's nor the
// Collector's, and legacy ones (escaping leaves them as they are).
type Kept interface {
	prometheus.Gatherer
	// Revision returns a number that changes whenever what Gather
	// returns may have; it is read before Gather.
	Revision() uint64
}

// NewExposition returns the Exposition of reg's families, c's and kept's.
// Neither c nor kept is registered in reg.
func NewExposition(reg prometheus.Gatherer, c *Collector, kept ...Kept) *Exposition {
	e := &Exposition{reg: reg, kept: kept, texts: map[textKind]*texts{}}
	e.c.Store(c)
	return e
}

// SetCollector serves c's series from now on in place of the Collector
// served so far (a reload that changes the top keys, the masking or the
// replica); the text kept of the former is let go at the next scrape.
func (e *Exposition) SetCollector(c *Collector) { e.c.Store(c) }

// Gather returns reg's families, the Kept gatherers' and the Collector's,
// sorted by name (Gatherers): a prometheus.Gatherer of what /metrics
// serves.
func (e *Exposition) Gather() ([]*dto.MetricFamily, error) {
	reg := e.reg
	if len(e.kept) > 0 {
		gs := prometheus.Gatherers{e.reg}
		for _, k := range e.kept {
			gs = append(gs, k)
		}
		reg = gs
	}
	return Gatherers(reg, e.c.Load()).Gather()
}

// HandlerFor returns the /metrics handler of g: an Exposition's own
// (Exposition.Handler), or promhttp's for any other Gatherer.
func HandlerFor(g prometheus.Gatherer, opts promhttp.HandlerOpts) http.Handler {
	if e, ok := g.(*Exposition); ok {
		return e.Handler(opts)
	}
	return promhttp.HandlerFor(g, opts)
}

// textKind is an exposition format whose text the Exposition keeps: the
// text format, or OpenMetrics of a version. Escaping schemes do not
// change it: every name and label of the Collector is a legacy one.
type textKind struct {
	typ     expfmt.FormatType
	version string
}

// textKindOf returns the kind of text of a negotiated format, false for a
// format the Exposition leaves to promhttp.
func textKindOf(f expfmt.Format) (textKind, bool) {
	switch f.FormatType() {
	case expfmt.TypeTextPlain:
		return textKind{typ: expfmt.TypeTextPlain}, true
	case expfmt.TypeOpenMetrics:
		_, params, err := mime.ParseMediaType(string(f))
		if err != nil || params["version"] == expfmt.OpenMetricsVersion_2_0_0 {
			return textKind{}, false
		}
		return textKind{typ: expfmt.TypeOpenMetrics, version: params["version"]}, true
	}
	return textKind{}, false
}

// texts is a Collector's text in one kind, as of one State.
type texts struct {
	kind   textKind
	c      *Collector
	state  *State
	tables map[string]*tableText // by table label
	order  []*tableText          // the State's tables, in report order
	// header holds each family's HELP and TYPE lines; chunks its text
	// compressed, made by the first gzip scrape after a change.
	header [numFamilies][]byte
	chunks [numFamilies]*chunk
	// kept holds each Kept gatherer's text, in the Exposition's order.
	kept []keptText
}

// keptText is a Kept gatherer's families encoded in one format, as of
// one revision.
type keptText struct {
	made   bool
	rev    uint64
	format expfmt.Format
	fams   []keptFamily
}

// keptFamily is one family of a Kept gatherer: its text, and compressed
// once a gzip scrape asked for it.
type keptFamily struct {
	name  string
	text  []byte
	chunk *chunk
}

// tableText is one table's series in one kind of text, per family.
type tableText struct {
	rev, top uint64
	fams     [numFamilies][]byte
}

// chunk is a family's text compressed on its own: a deflate stream that
// ends byte-aligned with a sync flush and refers to nothing before it, so
// that it can follow any other in one gzip member. size and crc are those
// of the text.
type chunk struct {
	deflate []byte
	size    int64
	crc     uint32
}

// Handler returns the /metrics handler: opts as promhttp.HandlerFor takes
// them (OpenMetrics, compression, error handling for the registry).
func (e *Exposition) Handler(opts promhttp.HandlerOpts) http.Handler {
	fallback := promhttp.HandlerFor(e, opts)
	accepted := opts.AcceptedFormats
	if len(accepted) == 0 {
		accepted = expfmt.DefaultAcceptedFormats()
		if opts.EnableOpenMetrics {
			accepted = expfmt.DefaultOpenMetricsAcceptedFormats()
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		format := expfmt.NegotiateAccept(r.Header, accepted...)
		kind, ok := textKindOf(format)
		c := e.c.Load()
		st := c.live.Load()
		if !ok || st == nil || (r.URL != nil && r.URL.Query().Has("name[]")) {
			fallback.ServeHTTP(w, r)
			return
		}
		mfs, err := e.reg.Gather()
		var t *texts
		if err == nil {
			e.mu.Lock()
			t = e.textsOf(kind, c, st)
			if err = t.keep(e.kept, format); err != nil {
				e.mu.Unlock()
			}
		}
		if err != nil {
			// promhttp says so, as its options ask.
			fallback.ServeHTTP(w, r)
			return
		}
		defer e.mu.Unlock()
		h := w.Header()
		h.Add("Vary", "Accept")
		gz := !opts.DisableCompression && acceptsGzip(r.Header.Values("Accept-Encoding"))
		if !opts.DisableCompression {
			h.Add("Vary", "Accept-Encoding")
		}
		h.Set("Content-Type", string(format))
		if gz {
			h.Set("Content-Encoding", "gzip")
		}
		bw := e.writer(w)
		var out exposer = plainExposer{bw}
		if gz {
			out = newGzipExposer(bw, e.compressor())
		}
		expose(out, mfs, t, st, format)
		out.close()
		_ = bw.Flush()
		bw.Reset(io.Discard) // w is let go
	})
}

// writer returns the answers' buffered writer, writing to w. Called with
// e.mu held.
func (e *Exposition) writer(w io.Writer) *bufio.Writer {
	if e.bw == nil {
		e.bw = bufio.NewWriterSize(w, 64<<10)
	} else {
		e.bw.Reset(w)
	}
	return e.bw
}

// compressor returns the answers' flate writer. Called with e.mu held.
func (e *Exposition) compressor() *flate.Writer {
	if e.fw == nil {
		e.fw, _ = flate.NewWriter(io.Discard, flate.DefaultCompression) // a valid level: no error
	}
	return e.fw
}

// exposer writes an answer: encoded families, and the Collector's kept
// ones.
type exposer interface {
	// dynamic returns where a family encoded now is written.
	dynamic() io.Writer
	// kept writes a kept text, given in pieces, whose compressed form
	// is *c (made by a gzip answer when nil).
	kept(c **chunk, pieces iter.Seq[[]byte])
	close()
}

// part is one family of an answer: encoded now (mf), the Collector's
// family f of t, or a Kept gatherer's family (kf).
type part struct {
	name string
	mf   *dto.MetricFamily
	f    int
	kf   *keptFamily
}

// expose writes the registry's families mfs, the Kept gatherers' and the
// Collector's (t, as of st), in format, sorted by name. Called with the
// Exposition's mu held.
func expose(out exposer, mfs []*dto.MetricFamily, t *texts, st *State, format expfmt.Format) {
	parts := make([]part, 0, len(mfs)+numFamilies+2)
	for _, mf := range mfs {
		parts = append(parts, part{name: mf.GetName(), mf: mf})
	}
	for f := range numFamilies {
		for _, tt := range t.order {
			if len(tt.fams[f]) > 0 {
				parts = append(parts, part{name: families[f].name, f: f})
				break
			}
		}
	}
	for i := range t.kept {
		for j := range t.kept[i].fams {
			kf := &t.kept[i].fams[j]
			parts = append(parts, part{name: kf.name, kf: kf})
		}
	}
	parts = append(parts, part{name: lastEvaluationName, mf: lastEvaluation(st)}, part{name: partitionLimitName, mf: partitionLimit(st)})
	slices.SortStableFunc(parts, func(a, b part) int { return strings.Compare(a.name, b.name) })
	for _, p := range parts {
		switch {
		case p.kf != nil:
			out.kept(&p.kf.chunk, func(yield func([]byte) bool) { yield(p.kf.text) })
		case p.mf == nil:
			out.kept(&t.chunks[p.f], t.family(p.f))
		default:
			// An encoding error is the registry's family's alone
			// (promhttp would count it): the others are still written.
			_ = expfmt.NewEncoder(out.dynamic(), format).Encode(p.mf)
		}
	}
	if t.kind.typ == expfmt.TypeOpenMetrics {
		_, _ = expfmt.FinalizeOpenMetrics(out.dynamic())
	}
}

// family returns the pieces of the Collector's family f: its header, then
// each table's text.
func (t *texts) family(f int) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if !yield(t.header[f]) {
			return
		}
		for _, tt := range t.order {
			if !yield(tt.fams[f]) {
				return
			}
		}
	}
}

// keep makes the text of each Kept gatherer in format again when its
// revision moved (or the format changed) since it was made. Called with
// the Exposition's mu held.
func (t *texts) keep(kept []Kept, format expfmt.Format) error {
	if len(t.kept) != len(kept) {
		t.kept = make([]keptText, len(kept))
	}
	for i, k := range kept {
		kt := &t.kept[i]
		rev := k.Revision()
		if kt.made && kt.rev == rev && kt.format == format {
			continue
		}
		kt.made = false
		mfs, err := k.Gather()
		if err != nil {
			return fmt.Errorf("gather kept families: %w", err)
		}
		fams := make([]keptFamily, 0, len(mfs))
		for _, mf := range mfs {
			var b bytes.Buffer
			if err := expfmt.NewEncoder(&b, format).Encode(mf); err != nil {
				return fmt.Errorf("encode %s: %w", mf.GetName(), err)
			}
			fams = append(fams, keptFamily{name: mf.GetName(), text: b.Bytes()})
		}
		*kt = keptText{made: true, rev: rev, format: format, fams: fams}
	}
	return nil
}

// textsOf returns c's text of kind as of st, encoding again the tables
// whose revision changed (every table, for a Collector not served
// before). Called with e.mu held.
func (e *Exposition) textsOf(kind textKind, c *Collector, st *State) *texts {
	t := e.texts[kind]
	if t != nil && t.c != c {
		clear(e.texts) // every kind's text is the former Collector's
		t = nil
	}
	if t == nil {
		t = &texts{kind: kind, c: c, tables: map[string]*tableText{}}
		e.texts[kind] = t
	}
	if t.state == st {
		return t
	}
	changed := len(t.order) != len(st.Report.Tables)
	order := make([]*tableText, 0, len(st.Report.Tables))
	seen := make(map[string]struct{}, len(st.Report.Tables))
	for i := range st.Report.Tables {
		rt := &st.Report.Tables[i]
		label := TableLabel(rt.Table, rt.Index)
		seen[label] = struct{}{}
		rev := uint64(0)
		if st.Revisions != nil {
			rev = st.Revisions[i]
		}
		// The keys a class exports are the report's settings' top, which
		// a reload changes without changing the tables' revisions.
		top := st.Report.Settings.Top
		tt := t.tables[label]
		if tt == nil || rev == 0 || tt.rev != rev || tt.top != uint64(top) {
			tt = encode(t, rt, rev, top)
			t.tables[label] = tt
		}
		changed = changed || t.order[i] != tt
		order = append(order, tt)
	}
	for label := range t.tables {
		if _, ok := seen[label]; !ok {
			delete(t.tables, label)
		}
	}
	t.order, t.state = order, st
	if changed {
		t.chunks = [numFamilies]*chunk{}
	}
	return t
}

// encode makes a table's text of t's kind, with top keys a class.
func encode(t *texts, rt *report.TableReport, rev uint64, top int) *tableText {
	tt := &tableText{rev: rev, top: uint64(top)}
	fams := t.c.seriesOf(rt, rev, top).fams
	var b bytes.Buffer
	for f, ms := range fams {
		if len(ms) == 0 {
			continue
		}
		b.Reset()
		mf := gauge(families[f].name, families[f].help, ms...)
		if t.kind.typ == expfmt.TypeOpenMetrics {
			_, _ = expfmt.MetricFamilyToOpenMetrics(&b, model.EscapeMetricFamily(mf, model.UnderscoreEscaping))
		} else {
			_, _ = expfmt.MetricFamilyToText(&b, model.EscapeMetricFamily(mf, model.UnderscoreEscaping))
		}
		text := b.Bytes()
		// The HELP and TYPE lines lead: the family's header, the same for
		// every table.
		n := 0
		for n < len(text) && text[n] == '#' {
			n += bytes.IndexByte(text[n:], '\n') + 1
		}
		if t.header[f] == nil {
			t.header[f] = bytes.Clone(text[:n])
		}
		tt.fams[f] = bytes.Clone(text[n:])
	}
	return tt
}

// plainExposer writes the answer as it is.
type plainExposer struct{ w *bufio.Writer }

func (p plainExposer) dynamic() io.Writer { return p.w }

func (p plainExposer) kept(_ **chunk, pieces iter.Seq[[]byte]) {
	for b := range pieces {
		_, _ = p.w.Write(b)
	}
}

func (plainExposer) close() {}

// gzipExposer writes one gzip member (RFC 1952): families encoded now are
// compressed as they come, a kept family's text is written as its kept
// chunk, and the trailer's CRC and size are those of the whole text.
type gzipExposer struct {
	w       *bufio.Writer
	fw      *flate.Writer // the Exposition's
	running bool          // fw compresses a run of families encoded now
	size    int64
	crc     uint32
}

// gzipHeader is a gzip member's header: deflate, no name, no time.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// finalBlock is an empty last deflate block.
var finalBlock = func() []byte {
	var b bytes.Buffer
	fw, _ := flate.NewWriter(&b, flate.BestSpeed)
	_ = fw.Close()
	return b.Bytes()
}()

func newGzipExposer(w *bufio.Writer, fw *flate.Writer) *gzipExposer {
	_, _ = w.Write(gzipHeader)
	return &gzipExposer{w: w, fw: fw}
}

func (g *gzipExposer) Write(p []byte) (int, error) {
	g.crc = crc32.Update(g.crc, crc32.IEEETable, p)
	g.size += int64(len(p))
	return g.fw.Write(p)
}

func (g *gzipExposer) dynamic() io.Writer {
	if !g.running {
		g.fw.Reset(g.w)
		g.running = true
	}
	return g
}

// endRun ends a run of families encoded now: byte-aligned, and referring
// to nothing after it.
func (g *gzipExposer) endRun() {
	if g.running {
		_ = g.fw.Flush()
		g.running = false
	}
}

func (g *gzipExposer) kept(cp **chunk, pieces iter.Seq[[]byte]) {
	g.endRun()
	c := *cp
	if c == nil {
		c = compress(g.fw, pieces)
		*cp = c
	}
	_, _ = g.w.Write(c.deflate)
	g.crc = crc32Combine(g.crc, c.crc, c.size)
	g.size += c.size
}

func (g *gzipExposer) close() {
	g.endRun()
	_, _ = g.w.Write(finalBlock)
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], g.crc)
	binary.LittleEndian.PutUint32(trailer[4:], uint32(g.size))
	_, _ = g.w.Write(trailer[:])
}

// compress makes the chunk of a text given in pieces, compressed on its
// own with fw (between runs of families encoded now).
func compress(fw *flate.Writer, pieces iter.Seq[[]byte]) *chunk {
	var b bytes.Buffer
	fw.Reset(&b)
	c := &chunk{}
	write := func(p []byte) {
		c.crc = crc32.Update(c.crc, crc32.IEEETable, p)
		c.size += int64(len(p))
		_, _ = fw.Write(p)
	}
	for p := range pieces {
		write(p)
	}
	_ = fw.Flush()
	c.deflate = bytes.Clone(b.Bytes())
	return c
}

// crc32Combine returns the CRC-32 (IEEE) of A followed by B from crcA, the
// CRC of A, and crcB and lenB, those of B, without B: zlib's
// crc32_combine, over the polynomial's powers of x.
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32
	odd[0] = 0xedb88320 // the polynomial, reflected: one zero bit
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	square(even[:], odd[:]) // two zero bits
	square(odd[:], even[:]) // four
	for {
		square(even[:], odd[:]) // a zero byte, then twice as many each time
		if lenB&1 != 0 {
			crcA = times(even[:], crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
		square(odd[:], even[:])
		if lenB&1 != 0 {
			crcA = times(odd[:], crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

// times multiplies vec by the GF(2) matrix mat.
func times(mat []uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

// square sets sq to mat squared.
func square(sq, mat []uint32) {
	for n := range 32 {
		sq[n] = times(mat, mat[n])
	}
}
