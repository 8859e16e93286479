package export

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history/view"
)

// HistoryReader is what the API reads of the history on disk
// (history.Store supplies it): the cells of a table over a time range,
// and the incidents that overlap one. Safe for concurrent use.
type HistoryReader interface {
	Cells(ctx context.Context, q view.Query) (view.Answer, error)
	Incidents(ctx context.Context, from, to time.Time, table string) ([]view.Incident, error)
}

// Default ranges of the history's paths when from is not given: the last
// hour of cells, the last day of incidents.
const (
	DefaultCellsRange     = time.Hour
	DefaultIncidentsRange = 24 * time.Hour
)

// cellsHandler serves GET /api/v1/history.
type cellsHandler struct {
	hist   HistoryReader
	masker *KeyMasker
	log    *zap.Logger
	now    func() time.Time
}

// unkept answers 503 where the daemon keeps no history, and says so.
func (h cellsHandler) unkept(w http.ResponseWriter) bool {
	if h.hist != nil {
		return false
	}
	writeJSON(w, h.log, http.StatusServiceUnavailable, map[string]string{"error": "history is not kept by this daemon"})
	return true
}

func (h cellsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.unkept(w) {
		return
	}
	v := r.URL.Query()
	q := view.Query{Table: v.Get("table"), Index: v.Get("index"), Class: v.Get("class")}
	var err error
	q.From, q.To, err = timeRange(v, h.now(), DefaultCellsRange)
	if err == nil && v.Get("step") != "" {
		q.Step, err = stepOf(v.Get("step"))
	}
	if err == nil && q.Table == "" {
		err = errors.New("table: required")
	}
	if err != nil {
		writeJSON(w, h.log, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	a, err := h.hist.Cells(r.Context(), q)
	if err != nil {
		writeHistoryError(w, h.log, err)
		return
	}
	writeJSONAs(w, h.log, http.StatusOK, h.masker.MaskAnswer(a), false)
}

// incidentsHandler serves GET /api/v1/incidents, from what cellsHandler
// holds.
type incidentsHandler cellsHandler

func (h incidentsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if cellsHandler(h).unkept(w) {
		return
	}
	v := r.URL.Query()
	from, to, err := timeRange(v, h.now(), DefaultIncidentsRange)
	if err != nil {
		writeJSON(w, h.log, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	incs, err := h.hist.Incidents(r.Context(), from, to, v.Get("table"))
	if err != nil {
		writeHistoryError(w, h.log, err)
		return
	}
	for i := range incs {
		incs[i] = h.masker.MaskIncident(incs[i])
	}
	writeJSON(w, h.log, http.StatusOK, map[string][]view.Incident{"incidents": incs})
}

// writeHistoryError answers a refused query 400, a history not kept 503.
func writeHistoryError(w http.ResponseWriter, log *zap.Logger, err error) {
	status := http.StatusServiceUnavailable
	if errors.Is(err, view.ErrBadQuery) {
		status = http.StatusBadRequest
	}
	writeJSON(w, log, status, map[string]string{"error": err.Error()})
}

// timeRange reads from and to (RFC 3339): to defaults to now, from to
// span before to.
func timeRange(v url.Values, now time.Time, span time.Duration) (from, to time.Time, err error) {
	to = now.UTC()
	if s := v.Get("to"); s != "" {
		if to, err = time.Parse(time.RFC3339, s); err != nil {
			return from, to, fmt.Errorf("to: want an RFC 3339 time (2026-12-02T10:00:00Z), got %q", s)
		}
	}
	from = to.Add(-span)
	if s := v.Get("from"); s != "" {
		if from, err = time.Parse(time.RFC3339, s); err != nil {
			return from, to, fmt.Errorf("from: want an RFC 3339 time (2026-12-02T09:00:00Z), got %q", s)
		}
	}
	if !from.Before(to) {
		return from, to, fmt.Errorf("from (%s) must be before to (%s)", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	return from, to, nil
}

// stepOf reads step, in seconds.
func stepOf(s string) (time.Duration, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > 366*24*3600 {
		return 0, fmt.Errorf("step: want a number of seconds from 1 to a year, got %q", s)
	}
	return time.Duration(n) * time.Second, nil
}

// MaskAnswer masks the keys of a history answer as everywhere else.
func (m *KeyMasker) MaskAnswer(a view.Answer) view.Answer {
	if m.Mode() == KeysPlain {
		return a
	}
	for i := range a.Series {
		for j := range a.Series[i].Cells {
			keys := a.Series[i].Cells[j].Keys
			for k := range keys {
				keys[k].Key = m.Mask(keys[k].Key)
			}
		}
	}
	return a
}

// MaskIncident masks an incident's keys, and the keys its summary and fix
// name, as a diagnosis's are.
func (m *KeyMasker) MaskIncident(inc view.Incident) view.Incident {
	if m.Mode() == KeysPlain {
		return inc
	}
	d := m.MaskDiagnosis(report.Diagnosis{Cause: report.Kind(inc.Cause), Class: inc.Class, Keys: inc.Keys, Summary: inc.Summary,
		Fix: report.Recommendation{Kind: report.AdviceKind(inc.FixKind), Text: inc.Fix}})
	inc.Keys, inc.Summary, inc.Fix = d.Keys, d.Summary, d.Fix.Text
	return inc
}
