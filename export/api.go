package export

import (
	"encoding/json"
	"net/http"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// hotkeysHandler serves /api/v1/hotkeys: the latest report, keys masked, in
// the JSON shape of `hotkeyd analyze --format json`. ?table=NAME keeps that
// table and its indexes; ?index=NAME then keeps one index ("" or absent
// keeps all).
type hotkeysHandler struct {
	live   *Live
	masker *KeyMasker
}

func (h hotkeysHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := h.live.Load()
	if st == nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{
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
		if table != "" && t.Table != table || byIndex && t.Index != index {
			continue
		}
		// Arrays, not nulls, for tools that iterate without checking.
		if t.TopKeys == nil {
			t.TopKeys = []report.TopKey{}
		}
		if t.Findings == nil {
			t.Findings = []report.Finding{}
		}
		tables = append(tables, t)
	}
	rep.Tables = tables
	writeJSON(w, http.StatusOK, h.masker.MaskReport(rep))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to do
}
