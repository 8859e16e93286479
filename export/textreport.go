package export

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/plural"
)

// WriteTextReport prints a report for a person at a terminal: per table a
// header line, its classes' rates and peaks, an aligned table of its top
// keys per class, then one block per diagnosis (cause, severity, why, the
// one fix, its after-state and what it explains), why the table is quiet
// when it is, and the evidence: the findings with what led to each. The
// threshold is the one the report was judged by (its Settings).
func WriteTextReport(w io.Writer, r report.Report) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "%s %s (%s rejected) from %s to %s (%s); a key is hot at %.0f%% of its table's units of a class\n",
		groupDigits(r.Events), plural.Noun(r.Events, "event"), groupDigits(r.Rejected), fmtTime(r.Start), fmtTime(r.End), fmtSpanOf(r.Start, r.End), r.Settings.Threshold*100)
	if b := r.BadTime; b != nil {
		fmt.Fprintf(ew, "bad_time: %s %s refused for %s time%s\n", groupDigits(b.Events), plural.Noun(b.Events, "event"), plural.Noun(b.Events, "its", "their"), badTimeWhy(b))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(ew, "note: %s\n", n)
	}
	if len(r.Tables) == 0 {
		fmt.Fprintln(ew, "\nno events")
	}
	for _, t := range r.Tables {
		writeTable(ew, t)
	}
	return ew.err
}

// writeTable prints one table's or index's part of the report.
func writeTable(w io.Writer, t report.TableReport) {
	name := t.Table
	if t.Index != "" {
		name += " (index " + t.Index + ")"
	}
	fmt.Fprintf(w, "\n%s: %s %s, %s RCU, %s WCU, ~%s distinct partition %s\n",
		name, groupDigits(t.Events), plural.Noun(t.Events, "event"), fmtUnits(t.ReadUnits), fmtUnits(t.WriteUnits),
		groupDigits(t.DistinctPartitionKeys), plural.Noun(t.DistinctPartitionKeys, "key"))
	var rates []string
	for _, c := range t.Classes {
		if c.Units > 0 {
			unit := unitOf(c.Class)
			rates = append(rates, fmt.Sprintf("%ss %s %s/s, peak %s %s/s", c.Class, fmtUnits(c.UnitsPerSecond), unit, fmtUnits(c.PeakUnitsPerSecond), unit))
		}
	}
	if len(rates) > 0 {
		fmt.Fprintf(w, "  %s\n", strings.Join(rates, "; "))
	}
	if len(t.TopKeys) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  CLASS\tUNITS\tSHARE\tPEAK/S\t  KEY")
		for _, k := range t.TopKeys {
			fmt.Fprintf(tw, "  %s\t%s\t%.1f%%\t%s\t  %s\n", k.Class, fmtUnits(k.Units), k.Share*100, fmtUnits(k.PeakUnitsPerSecond), keyWithText(k.Key, k.KeyText))
		}
		tw.Flush()
	}
	if len(t.ThrottledKeys) > 0 {
		fmt.Fprintln(w, "  throttled:")
		for _, k := range t.ThrottledKeys {
			fmt.Fprintf(w, "    %s  %s %s\n", keyWithText(k.Key, k.KeyText), throttledCount(k), plural.Noun(max(k.Count, k.CountMax), "call"))
		}
		if t.ThrottledBound > 0 {
			fmt.Fprintf(w, "    (every other key at most %s)\n", groupDigits(t.ThrottledBound))
		}
	}
	writeForecasts(w, t)
	writeIncidents(w, t)
	if len(t.Diagnoses) == 0 {
		fmt.Fprintln(w, "  no diagnoses")
	} else {
		fmt.Fprintln(w, "  diagnoses:")
	}
	for i, d := range t.Diagnoses {
		writeDiagnosis(w, i+1, d)
	}
	if q := t.Quiet; q != nil {
		fmt.Fprintf(w, "  quiet (%s): %s\n", q.Reason, q.Text)
	}
	if len(t.Findings) == 0 {
		return
	}
	fmt.Fprintln(w, "  evidence:")
	for _, f := range t.Findings {
		fmt.Fprintf(w, "  - %s\n", findingLine(f))
		if f.Evidence != nil && f.Evidence.Summary != "" {
			fmt.Fprintf(w, "    %s\n", f.Evidence.Summary)
		}
	}
}

// writeDiagnosis prints one diagnosis's block.
func writeDiagnosis(w io.Writer, n int, d report.Diagnosis) {
	keys := make([]string, len(d.Keys))
	for i, k := range d.Keys {
		keys[i] = printable(k)
	}
	what := strings.Join(keys, ", ")
	if cp := d.Capacity; cp != nil {
		limit := map[report.CapacityLimit]string{
			report.LimitProvisioned: "provisioned capacity", report.LimitAccount: "account quota",
			report.LimitOnDemandMax: "on-demand maximum",
		}[cp.Limit]
		if limit == "" {
			limit = "capacity (no reason: inferred)"
		}
		what = fmt.Sprintf("%s of the %s, %.1f%% of calls refused", limit, cp.Resource, cp.ThrottledShare*100)
	}
	fmt.Fprintf(w, "  %d. %s [%s] %s (%s)\n", n, d.Cause, d.Severity, what, d.Class)
	if d.Summary != "" {
		fmt.Fprintf(w, "     %s\n", d.Summary)
	}
	fix := string(d.Fix.Kind)
	if d.Fix.SuffixCount > 0 {
		fix += fmt.Sprintf(", %d keys", d.Fix.SuffixCount)
	}
	fmt.Fprintf(w, "     fix (%s): %s\n", fix, d.Fix.Text)
	if d.Fix.Example != "" {
		fmt.Fprintf(w, "     e.g. %s\n", d.Fix.Example)
	}
	if d.After != nil {
		fmt.Fprintf(w, "     after: %s\n", d.After.Summary)
	}
	var ex []string
	for _, e := range d.Explains {
		s := string(e.Kind)
		if e.Key != "" {
			s += " " + printable(e.Key)
		}
		if e.Class != "" {
			s += " (" + e.Class + ")"
		}
		ex = append(ex, s)
	}
	fmt.Fprintf(w, "     explains: %s\n", strings.Join(ex, ", "))
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
	unit := unitOf(f.Class)
	if f.UnitsPerSecond > 0 {
		parts = append(parts, fmt.Sprintf("%s %s/s", fmtUnits(f.UnitsPerSecond), unit))
	}
	if f.PeakUnitsPerSecond > 0 {
		parts = append(parts, fmt.Sprintf("peak %s %s/s", fmtUnits(f.PeakUnitsPerSecond), unit))
	}
	if len(parts) > 0 {
		b.WriteString(": " + strings.Join(parts, ", "))
	}
	return b.String()
}

// unitOf names the units of a class: RCU, WCU, or units.
func unitOf(class string) string {
	switch class {
	case "read":
		return "RCU"
	case "write":
		return "WCU"
	}
	return "units"
}

// printable quotes a key that would garble the table (spaces, control
// characters, bidirectional overrides), and leaves the usual ones
// (USER#42) alone.
// keyWithText is a key as the report prints it, followed by the text a
// binary key's bytes hold, when they do (report.KeyText).
func keyWithText(key, text string) string {
	if text == "" {
		return printable(key)
	}
	return printable(key) + " (text " + printable(text) + ")"
}

func printable(s string) string {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '\uFFFD' || !strconv.IsPrint(r) {
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

// badTimeWhy says why events were refused for their time.
func badTimeWhy(b *report.BadTime) string {
	var why []string
	if b.Refused > 0 {
		why = append(why, groupDigits(b.Refused)+" unreadable, before 2012 or over a day after the clock")
	}
	if b.Outliers > 0 {
		o := groupDigits(b.Outliers) + " far from the rest of the input"
		if b.OutliersFrom != nil && b.OutliersTo != nil {
			o += " (" + fmtTime(*b.OutliersFrom) + " to " + fmtTime(*b.OutliersTo) + "), left out of the window"
		}
		why = append(why, o)
	}
	if len(why) == 0 {
		return ""
	}
	return ": " + strings.Join(why, "; ")
}

// fmtSpanOf is fmtSpan of the time from start to end, which a
// time.Duration holds only up to 292 years.
func fmtSpanOf(start, end time.Time) string {
	if d := end.Sub(start); d < 48*time.Hour {
		return fmtSpan(d)
	}
	hours := (end.Unix() - start.Unix() + 1800) / 3600
	return fmt.Sprintf("%dd %dh", hours/24, hours%24)
}

func fmtSpan(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.String()
	case d >= 48*time.Hour:
		// Rounded to the hour first: 2d 23h 45m is 3d 0h, not 2d 24h.
		hours := (d + 30*time.Minute) / time.Hour
		if d > math.MaxInt64-30*time.Minute {
			hours = d / time.Hour
		}
		return fmt.Sprintf("%dd %dh", hours/24, hours%24)
	}
	return d.Round(time.Second).String()
}

// errWriter keeps the first write error so the report code can print
// without checking every call. It also escapes what a terminal would act
// on rather than print, wherever it comes from: keys sit in the key
// column (quoted by printable) but also inside the diagnoses' sentences,
// fixes and examples, and a key holding ESC, BEL, CR or U+202E must not
// clear the screen, retitle the terminal or reverse a line. Control
// characters but the newline, invalid UTF-8 and the characters Go does
// not call printable (format characters such as bidirectional overrides)
// are written as Go escapes (\x1b, \r, \u202e), as %q writes them.
type errWriter struct {
	w   io.Writer
	err error
	buf []byte
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	out := p
	if i := firstUnsafe(p); i >= 0 {
		e.buf = escapeUnsafe(append(e.buf[:0], p[:i]...), p[i:])
		out = e.buf
	}
	_, err := e.w.Write(out)
	e.err = err
	return len(p), err
}

// firstUnsafe returns the index of the first byte of p that escapeUnsafe
// would change, or -1.
func firstUnsafe(p []byte) int {
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			if (c < ' ' && c != '\n') || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if (r == utf8.RuneError && size == 1) || !strconv.IsPrint(r) {
			return i
		}
		i += size
	}
	return -1
}

// escapeUnsafe appends p to dst with every control character but the
// newline, invalid byte and unprintable character escaped.
func escapeUnsafe(dst, p []byte) []byte {
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		switch {
		case r == '\n':
			dst = append(dst, '\n')
		case r == utf8.RuneError && size == 1:
			dst = fmt.Appendf(dst, `\x%02x`, p[0])
		case r < ' ' || r == 0x7f || !strconv.IsPrint(r):
			q := strconv.QuoteRune(r)
			dst = append(dst, q[1:len(q)-1]...)
		default:
			dst = append(dst, p[:size]...)
		}
		p = p[size:]
	}
	return dst
}

// throttledCount writes a throttled key's count: exact, or the bounds it
// is known within ("1 900 to 2 010").
func throttledCount(k report.ThrottledKey) string {
	if k.CountMax > k.Count {
		return groupDigits(k.Count) + " to " + groupDigits(k.CountMax)
	}
	return groupDigits(k.Count)
}
