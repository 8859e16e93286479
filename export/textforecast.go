package export

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// writeForecasts prints a table's forecasts (each judged key's headroom,
// trend and time to the ceiling) and its 10× / 100× view.
func writeForecasts(w io.Writer, t report.TableReport) {
	if len(t.Forecasts) > 0 {
		// One note shared by every key (a short input) is said once.
		shared := t.Forecasts[0].Note
		for _, f := range t.Forecasts {
			if f.Note != shared || f.TrendPerDay != nil {
				shared = ""
			}
		}
		fmt.Fprintln(w, "  forecasts (headroom: the growth of today's traffic a key takes before it throttles):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "    CLASS\tPEAK/S\tHEADROOM\tTREND/DAY\tCEILING AT\tR²\tKEY")
		for _, f := range t.Forecasts {
			trend, at, note, r2 := "-", "-", "", "-"
			if f.TrendPerDay != nil || f.Confidence != 0 {
				// A forecast made without a fit (no traffic, a span too
				// short) has no R² to show, not one of 0.
				r2 = fmt.Sprintf("%.2f", f.Confidence)
			}
			if f.TrendPerDay != nil {
				trend = fmt.Sprintf("%+.4g (%s)", *f.TrendPerDay, f.Growth)
			}
			if f.ReachesCeilingAt != nil {
				at = f.ReachesCeilingAt.UTC().Format(time.RFC3339)
			}
			if shared == "" && f.Note != "" {
				note = "  (" + f.Note + ")"
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s×\t%s\t%s\t%s\t%s%s\n", f.Class, fmtUnits(f.PeakUnitsPerSecond), fmtUnits(f.Headroom), trend, at, r2, printable(f.Key), note)
		}
		tw.Flush()
		if shared != "" {
			fmt.Fprintf(w, "    no trend: %s\n", shared)
		}
	}
	for _, factor := range []int{10, 100} {
		var keys []string
		for _, k := range t.Scale {
			if k.Factor != factor {
				continue
			}
			fix := string(k.Fix.Kind)
			if k.Fix.SuffixCount > 0 {
				fix += fmt.Sprintf(" over %d keys", k.Fix.SuffixCount)
			}
			keys = append(keys, fmt.Sprintf("%s (%s, %s %s/s): %s", printable(k.Key), k.Class, fmtUnits(k.PeakUnitsPerSecond), unitOf(k.Class), fix))
		}
		if len(keys) > 0 {
			fmt.Fprintf(w, "  throttles at %d× today's traffic: %s\n", factor, strings.Join(keys, "; "))
		}
	}
}
