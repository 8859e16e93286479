package export

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// hotkeysHandler serves /api/v1/hotkeys: the latest report, keys masked, in
// the JSON shape of `hotkeyd analyze --format json`. ?table=NAME keeps that
// table and its indexes; ?index=NAME then keeps one index ("" or absent
// keeps all). An idle entry (report.TableReport.Idle: nothing in the window,
// as a CloudTrail table whose traffic has left it) is listed only when its
// table is asked for by name.
type hotkeysHandler struct {
	live   *Live
	masker *KeyMasker
	log    *zap.Logger
}

func (h hotkeysHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := h.live.Load()
	if st == nil {
		writeNoReport(w, h.log)
		return
	}
	rep := st.Report
	rep.Tables = selectTables(rep.Tables, r.URL.Query())
	for i := range rep.Tables {
		rep.Tables[i] = withArrays(rep.Tables[i])
	}
	writeJSON(w, h.log, http.StatusOK, h.masker.MaskReport(rep))
}

// writeNoReport is the answer of the API before the first detector tick.
func writeNoReport(w http.ResponseWriter, log *zap.Logger) {
	writeJSON(w, log, http.StatusServiceUnavailable, map[string]string{
		"error": "no report yet: the first one is made at the first detector tick after start",
	})
}

// selectTables keeps the entries the query asks for: ?table=NAME keeps
// that table and its indexes, ?index=NAME then one index (""
// the base table); without ?table= an idle entry is left out.
func selectTables(all []report.TableReport, q url.Values) []report.TableReport {
	table, index := q.Get("table"), q.Get("index")
	_, byIndex := q["index"]
	tables := make([]report.TableReport, 0, len(all))
	for _, t := range all {
		if table != "" && t.Table != table || byIndex && t.Index != index || table == "" && t.Idle() {
			continue
		}
		tables = append(tables, t)
	}
	return tables
}

// withArrays returns t with arrays, not nulls, for tools that iterate
// without checking.
func withArrays(t report.TableReport) report.TableReport {
	if t.TopKeys == nil {
		t.TopKeys = []report.TopKey{}
	}
	if t.Findings == nil {
		t.Findings = []report.Finding{}
	}
	if t.Classes == nil {
		t.Classes = []report.ClassReport{}
	}
	t.Diagnoses = slices.Clone(t.Diagnoses)
	if t.Diagnoses == nil {
		t.Diagnoses = []report.Diagnosis{}
	}
	for i := range t.Diagnoses {
		d := &t.Diagnoses[i]
		if d.Keys == nil {
			d.Keys = []string{}
		}
		if d.Explains == nil {
			d.Explains = []report.Explained{}
		}
	}
	return t
}

// historyHandler serves /api/v1/hotkeys/history: the per-second series of
// the latest report's tables (the same ?table= and ?index= as
// /api/v1/hotkeys), their classes and top keys, keys masked; ?top=N keeps
// N keys per class.
type historyHandler struct {
	live   *Live
	recent func() *Recent
	masker *KeyMasker
	log    *zap.Logger
}

func (h historyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := h.live.Load()
	if st == nil {
		writeNoReport(w, h.log)
		return
	}
	q := r.URL.Query()
	top := 0
	if v := q.Get("top"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeJSON(w, h.log, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("top: want a positive number, got %q", v)})
			return
		}
		top = n
	}
	rep := st.Report
	rep.Tables = selectTables(rep.Tables, q)
	series := h.recent().Series(rep, top)
	series.End = rep.End
	// Compact: the page asks for it every second, and indented points
	// would take a line each.
	writeJSONAs(w, h.log, http.StatusOK, h.masker.MaskSeries(series), false)
}

// writeJSON answers status with v as indented JSON. It encodes before it
// answers, so that a value JSON cannot hold (a +Inf) gives a 500 with the
// error, logged, instead of a 200 with an empty or cut body.
func writeJSON(w http.ResponseWriter, log *zap.Logger, status int, v any) {
	writeJSONAs(w, log, status, v, true)
}

// writeJSONAs is writeJSON, indented or not.
func writeJSONAs(w http.ResponseWriter, log *zap.Logger, status int, v any, indent bool) {
	var body []byte
	var err error
	if indent {
		body, err = json.MarshalIndent(v, "", "  ")
	} else {
		body, err = json.Marshal(v)
	}
	if err != nil {
		log.Error("cannot encode the API response", zap.Int("status", status), zap.Error(err))
		status = http.StatusInternalServerError
		body, _ = json.Marshal(map[string]string{"error": "cannot encode the report: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n')) // the client went away; nothing to do
}
