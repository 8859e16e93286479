package export

import (
	"encoding/json"
	"net/http"
	"slices"

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
		writeJSON(w, h.log, http.StatusServiceUnavailable, map[string]string{
			"error": "no report yet: the first one is made at the first detector tick after start",
		})
		return
	}
	q := r.URL.Query()
	table, index := q.Get("table"), q.Get("index")
	_, byIndex := q["index"]
	rep := st.Report
	tables := make([]report.TableReport, 0, len(rep.Tables))
	for _, t := range rep.Tables {
		if table != "" && t.Table != table || byIndex && t.Index != index || table == "" && t.Idle() {
			continue
		}
		// Arrays, not nulls, for tools that iterate without checking.
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
		tables = append(tables, t)
	}
	rep.Tables = tables
	writeJSON(w, h.log, http.StatusOK, h.masker.MaskReport(rep))
}

// writeJSON answers status with v as indented JSON. It encodes before it
// answers, so that a value JSON cannot hold (a +Inf) gives a 500 with the
// error, logged, instead of a 200 with an empty or cut body.
func writeJSON(w http.ResponseWriter, log *zap.Logger, status int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		log.Error("cannot encode the API response", zap.Int("status", status), zap.Error(err))
		status = http.StatusInternalServerError
		body, _ = json.Marshal(map[string]string{"error": "cannot encode the report: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n')) // the client went away; nothing to do
}
