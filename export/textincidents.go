package export

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// writeIncidents prints a table's incidents (hotkeyd analyze), one line
// each, oldest first: when it ran, its highest severity, cause, class,
// peak and keys; "open" when the input ended before it cleared.
func writeIncidents(w io.Writer, t report.TableReport) {
	if len(t.Incidents) == 0 {
		return
	}
	fmt.Fprintln(w, "  incidents (the diagnoses the live detector would have raised, in event time):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "    START\tEND\tSEVERITY\tCAUSE\tCLASS\tPEAK/S\tKEYS")
	for _, inc := range t.Incidents {
		end := "open"
		if inc.End != nil {
			end = inc.End.UTC().Format(time.RFC3339) + " (" + inc.End.Sub(inc.Start).String() + ")"
		}
		keys := make([]string, len(inc.Keys))
		for i, k := range inc.Keys {
			keys[i] = printable(k)
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\t%s %s\t%s\n", inc.Start.UTC().Format(time.RFC3339), end, inc.Severity, inc.Cause, inc.Class,
			fmtUnits(inc.Peak), unitOf(inc.Class), strings.Join(keys, ", "))
	}
	tw.Flush()
}
