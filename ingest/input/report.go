package input

import (
	"fmt"
	"io"
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
// It is safe for concurrent use. It is the readers' traffic.Masker too:
// the input they quote is masked as the report's keys are.
type TextReporter struct {
	w        io.Writer
	mask     traffic.Masker
	rejected atomic.Uint64

	mu      sync.Mutex
	printed int
	reasons map[string]uint64
	ignored map[string]uint64 // lines by member name outside the format
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

// Reject implements traffic.Reporter.
func (r *TextReporter) Reject(source, reason string, err error) {
	r.rejected.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons[reason]++
	if r.printed < MaxRejectLines {
		r.printed++
		fmt.Fprintf(r.w, "hotkeyd: skipped (%s): %v\n", reason, err)
	}
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

// Summary prints the rejected records per reason when some were not
// described one by one, and the members outside the format that lines
// carried, most frequent first.
func (r *TextReporter) Summary() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.rejected.Load(); n > uint64(r.printed) {
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
