package input

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hotkeyd/hotkeyd/internal/plural"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// MaxRejectLines is how many rejected records a TextReporter describes;
// the rest are only counted and summed up per reason by Summary.
const MaxRejectLines = 5

// TextReporter is the traffic.Reporter of a person reading whole inputs at
// a terminal (hotkeyd analyze): it counts rejected input, describes the
// first few rejections on a writer, and sums up the rest per reason, so
// that a person sees why lines were skipped without the terminal flooding.
// The rejections described are the first in input order (Order, then
// Positioned), whatever the order they were met in: inputs read in parts
// side by side describe the same ones as one reader would. It is safe for
// concurrent use. It is the readers' traffic.Masker too: the input they
// quote is masked as the report's keys are.
type TextReporter struct {
	w        io.Writer
	mask     traffic.Masker
	rejected atomic.Uint64

	mu      sync.Mutex
	order   map[string]int
	first   []rejection // the first MaxRejectLines, in input order
	reasons map[string]uint64
	ignored map[string]uint64 // lines by member name outside the format
}

// Positioned is implemented by the error of a rejected record that says
// where the record was: its input's name and its 1-based line or record
// number (jsonl.LineError, RecordError).
type Positioned interface {
	Position() (name string, n int64)
}

// RecordError is a rejected record of a whole input: where it was (line
// Line of the input, or its record Record when Line is 0) and why.
type RecordError struct {
	Name         string
	Line, Record int64
	Err          error
}

func (e *RecordError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %v", e.Name, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: record %d: %v", e.Name, e.Record, e.Err)
}

// Unwrap returns why.
func (e *RecordError) Unwrap() error { return e.Err }

// Position implements Positioned.
func (e *RecordError) Position() (string, int64) {
	if e.Line > 0 {
		return e.Name, e.Line
	}
	return e.Name, e.Record
}

// rejection is a rejection described, with its place: the rank of its
// input (Order), its name and its line or record; unplaced ones (errors
// that are not Positioned) rank after every placed one, by their text.
type rejection struct {
	input int
	name  string
	n     int64
	text  string
}

func compareRejections(a, b rejection) int {
	return cmp.Or(cmp.Compare(a.input, b.input), strings.Compare(a.name, b.name), cmp.Compare(a.n, b.n), strings.Compare(a.text, b.text))
}

// Order gives the names of the inputs in the order they are read, which
// the rejections described follow; inputs of other names come after
// them, by name.
func (r *TextReporter) Order(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.order = make(map[string]int, len(names))
	for i, n := range names {
		if _, ok := r.order[n]; !ok {
			r.order[n] = i
		}
	}
}

var _ traffic.FieldNoter = (*TextReporter)(nil)

// NewTextReporter returns a TextReporter writing to w; m masks the input
// the readers quote (nil shows it as it is).
func NewTextReporter(w io.Writer, m traffic.Masker) *TextReporter {
	return &TextReporter{w: w, mask: m, reasons: map[string]uint64{}, ignored: map[string]uint64{}}
}

// Mask implements traffic.Masker with the masker given to NewTextReporter.
func (r *TextReporter) Mask(s string) string {
	if r.mask == nil {
		return s
	}
	return r.mask.Mask(s)
}

// Reject implements traffic.Reporter: the rejection is described by
// Summary if it is among the first MaxRejectLines in input order.
func (r *TextReporter) Reject(source, reason string, err error) {
	r.rejected.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons[reason]++
	x := rejection{input: math.MaxInt, n: -1}
	var p Positioned
	if errors.As(err, &p) {
		var known bool
		x.name, x.n = p.Position()
		if x.input, known = r.order[x.name]; !known {
			x.input = len(r.order)
		}
	}
	if len(r.first) == MaxRejectLines && compareRejections(x, r.first[MaxRejectLines-1]) >= 0 {
		return // after every one described: its text is not needed
	}
	x.text = fmt.Sprintf("hotkeyd: skipped (%s): %v\n", reason, err)
	i, _ := slices.BinarySearchFunc(r.first, x, compareRejections)
	r.first = slices.Insert(r.first, i, x)
	r.first = r.first[:min(len(r.first), MaxRejectLines)]
}

// Error implements traffic.Reporter.
func (r *TextReporter) Error(source, reason string, err error) {
	fmt.Fprintf(r.w, "hotkeyd: %s: %s: %v\n", source, reason, err)
}

// Ignored implements traffic.FieldNoter: Summary names the members.
func (r *TextReporter) Ignored(source, field string, lines uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ignored[field] += lines
}

// maxIgnoredNames is how many names of ignored members Summary lists.
const maxIgnoredNames = 10

// Rejected returns the number of rejected records so far.
func (r *TextReporter) Rejected() uint64 { return r.rejected.Load() }

// Reason returns the records rejected for reason.
func (r *TextReporter) Reason(reason string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reasons[reason]
}

// Reasons returns the rejected records per reason, "bad_json 2,
// missing_pk 1", or "" when none was rejected.
func (r *TextReporter) Reasons() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reasonList()
}

func (r *TextReporter) reasonList() string {
	reasons := make([]string, 0, len(r.reasons))
	for reason, c := range r.reasons {
		reasons = append(reasons, fmt.Sprintf("%s %d", reason, c))
	}
	sort.Strings(reasons)
	return strings.Join(reasons, ", ")
}

// Summary describes the first rejected records in input order, prints the
// rejected records per reason when some were not described one by one,
// and the members outside the format that lines carried, most frequent
// first.
func (r *TextReporter) Summary() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.first {
		io.WriteString(r.w, x.text)
	}
	if n := r.rejected.Load(); n > uint64(len(r.first)) {
		fmt.Fprintf(r.w, "hotkeyd: skipped %d records in all: %s\n", n, r.reasonList())
	}
	if len(r.ignored) == 0 {
		return
	}
	names := make([]string, 0, len(r.ignored))
	for name := range r.ignored {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := r.ignored[names[i]], r.ignored[names[j]]
		return a > b || (a == b && names[i] < names[j])
	})
	var list []string
	for _, name := range names[:min(len(names), maxIgnoredNames)] {
		list = append(list, fmt.Sprintf("%s (%s)", traffic.Quote(r.mask, []byte(name)), plural.Count(r.ignored[name], "line")))
	}
	if more := len(names) - maxIgnoredNames; more > 0 {
		list = append(list, plural.Count(more, "other name"))
	}
	fmt.Fprintf(r.w, "hotkeyd: ignored fields outside the contract: %s\n", strings.Join(list, ", "))
}
