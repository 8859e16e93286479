package export

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// WriteTextReport prints a report for a person at a terminal: per table a
// header line, an aligned table of its top keys per class, then its
// findings with their advice.
func WriteTextReport(w io.Writer, r report.Report, threshold float64) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "%s events (%s rejected) from %s to %s (%s); a key is hot at %.0f%% of its table's units of a class\n",
		groupDigits(r.Events), groupDigits(r.Rejected), fmtTime(r.Start), fmtTime(r.End), fmtSpan(r.End.Sub(r.Start)), threshold*100)
	for _, n := range r.Notes {
		fmt.Fprintf(ew, "note: %s\n", n)
	}
	if len(r.Tables) == 0 {
		fmt.Fprintln(ew, "\nno events")
	}
	for _, t := range r.Tables {
		name := t.Table
		if t.Index != "" {
			name += " (index " + t.Index + ")"
		}
		fmt.Fprintf(ew, "\n%s: %s events, %s RCU, %s WCU, ~%s distinct partition keys\n",
			name, groupDigits(t.Events), fmtUnits(t.ReadUnits), fmtUnits(t.WriteUnits), groupDigits(t.DistinctPartitionKeys))
		if len(t.TopKeys) > 0 {
			tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "  CLASS\tUNITS\tSHARE\t  KEY")
			for _, k := range t.TopKeys {
				fmt.Fprintf(tw, "  %s\t%s\t%.1f%%\t  %s\n", k.Class, fmtUnits(k.Units), k.Share*100, printable(k.Key))
			}
			tw.Flush()
		}
		if len(t.ThrottledKeys) > 0 {
			fmt.Fprintln(ew, "  throttled:")
			for _, k := range t.ThrottledKeys {
				fmt.Fprintf(ew, "    %s  %s calls\n", printable(k.Key), groupDigits(k.Count))
			}
		}
		if len(t.Findings) == 0 {
			fmt.Fprintln(ew, "  no findings")
			continue
		}
		fmt.Fprintln(ew, "  findings:")
		for _, f := range t.Findings {
			fmt.Fprintf(ew, "  - %s\n", findingLine(f))
			if rec := f.Recommendation; rec != nil {
				fmt.Fprintf(ew, "    fix (%s): %s\n", rec.Kind, rec.Text)
				if rec.Example != "" {
					fmt.Fprintf(ew, "    e.g. %s\n", rec.Example)
				}
			}
		}
	}
	return ew.err
}

// findingLine describes a finding in one line.
func findingLine(f report.Finding) string {
	var b strings.Builder
	b.WriteString(string(f.Kind))
	if f.Severity != "" {
		b.WriteString(" [" + string(f.Severity) + "]")
	}
	if f.Key != "" {
		b.WriteString(" " + printable(f.Key))
	}
	if f.Class != "" {
		b.WriteString(" (" + f.Class + ")")
	}
	var parts []string
	if f.Share > 0 {
		parts = append(parts, fmt.Sprintf("%.1f%% of the units", f.Share*100))
	}
	if f.UnitsPerSecond > 0 {
		unit := "units/s"
		switch f.Class {
		case "read":
			unit = "RCU/s"
		case "write":
			unit = "WCU/s"
		}
		parts = append(parts, fmt.Sprintf("%s %s", fmtUnits(f.UnitsPerSecond), unit))
	}
	if len(parts) > 0 {
		b.WriteString(": " + strings.Join(parts, ", "))
	}
	return b.String()
}

// printable quotes a key that would garble the table (spaces, control
// characters), and leaves the usual ones (USER#42) alone.
func printable(s string) string {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '\uFFFD' {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}

func fmtUnits(u float64) string {
	if u == float64(int64(u)) && u < 1e15 {
		return groupDigits(uint64(u))
	}
	if u >= 100 {
		return groupDigits(uint64(u + 0.5))
	}
	return fmt.Sprintf("%.2f", u)
}

// groupDigits prints 1234567 as 1,234,567.
func groupDigits(n uint64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func fmtSpan(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.String()
	case d >= 48*time.Hour:
		days := d / (24 * time.Hour)
		return fmt.Sprintf("%dd %dh", days, (d-days*24*time.Hour+30*time.Minute)/time.Hour)
	}
	return d.Round(time.Second).String()
}

// errWriter keeps the first write error so the report code can print
// without checking every call.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
