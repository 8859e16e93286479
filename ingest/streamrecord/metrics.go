package streamrecord

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/internal/promutil"
)

// maxGaps bounds the tables and view types a Gaps names in its note (a
// stream names its tables, any number of them).
const maxGaps = 1000

// Gaps keeps what a reader of stream records could not tell of index
// writes: counted per table and view type (hotkeyd_index_writes_unknown_total),
// logged once each, and said in the report's notes (Note). It is safe
// for concurrent use; a nil Gaps keeps nothing.
type Gaps struct {
	source  string
	log     *zap.Logger
	unknown *prometheus.CounterVec // source, table, view_type

	mu sync.Mutex
	n  map[IndexGap]uint64
}

// NewGaps returns the Gaps of the reader named source, its series
// registered on reg (shared with other readers'; nil registers none).
func NewGaps(source string, log *zap.Logger, reg prometheus.Registerer) (*Gaps, error) {
	if log == nil {
		log = zap.NewNop()
	}
	g := &Gaps{source: source, log: log, n: map[IndexGap]uint64{}, unknown: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hotkeyd_index_writes_unknown_total",
		Help: "Writes to tables with secondary indexes whose stream records could not tell every index write, by the stream's view type: KEYS_ONLY carries no image, NEW_IMAGE none before an update or a removal, OLD_IMAGE none after an insert or an update. Only the index writes the images make certain are counted.",
	}, []string{"source", "table", "view_type"})}
	var err error
	if reg != nil {
		g.unknown = promutil.Register(reg, g.unknown, &err)
	}
	return g, err
}

// Add counts one write of table whose record, of a stream of view type
// viewType, could not tell all its index writes; the first of each table
// and view type is logged.
func (g *Gaps) Add(table, viewType string) {
	if g == nil {
		return
	}
	g.unknown.WithLabelValues(g.source, table, viewType).Inc()
	k := IndexGap{table, viewType}
	g.mu.Lock()
	_, seen := g.n[k]
	first := !seen && len(g.n) < maxGaps
	if seen || first {
		g.n[k]++
	}
	g.mu.Unlock()
	if first {
		g.log.Warn("index writes not all told by the stream's records: counting only those the item images make certain",
			zap.String("table", table), zap.String("view_type", viewType), zap.String("why", hiddenBy(viewType)))
	}
}

// Note is the report's note of the gaps so far, "" without any.
func (g *Gaps) Note() string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return GapNote(g.n)
}
