// Package review is `hotkeyd report`: the daily and weekly review of a
// history database (package history), in text or JSON, for a person or
// cron. Per table and index over the span asked: the keys by their peak
// share of a cell, the incidents, and the findings that persisted. It
// reads the database read-only, so it runs beside the daemon that writes
// it.
package review

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history"
)

// Config is one review.
type Config struct {
	// Dir is the history's directory (--history.path).
	Dir string
	// Since is the span reviewed, up to Now.
	Since time.Duration
	Now   time.Time
	// Table keeps one table (and its indexes) when not empty.
	Table string
	// Format is "text" or "json".
	Format string
	// Masker masks the keys as the daemon does; nil shows them.
	Masker *export.KeyMasker
	Out    io.Writer
}

// topKeys is how many keys by peak share a table's review lists.
const topKeys = 10

// Persist says which findings persisted: a diagnosis (cause, class, key)
// open PersistOpen in all over the span, or raised PersistTimes times.
const (
	PersistOpen  = 30 * time.Minute
	PersistTimes = 3
)

// Review is the JSON of `hotkeyd report --format json`.
type Review struct {
	From   time.Time     `json:"from"`
	To     time.Time     `json:"to"`
	Path   string        `json:"path"`
	Tables []TableReview `json:"tables"`
}

// TableReview is one table's or index's review.
type TableReview struct {
	Table string `json:"table"`
	Index string `json:"index"`
	// StepSeconds is the resolution the keys were read at.
	StepSeconds int64              `json:"step_seconds"`
	Keys        []KeyPeak          `json:"keys"`
	Incidents   []history.Incident `json:"incidents"`
	Persisted   []Persisted        `json:"persisted"`
}

// KeyPeak is a key's highest share of a cell of its class over the span.
type KeyPeak struct {
	Key   string `json:"key"`
	Class string `json:"class"`
	// PeakShare is its highest share of a cell, At that cell's start.
	PeakShare float64   `json:"peak_share"`
	At        time.Time `json:"at"`
	// BusiestSecond is its busiest second over the span, against the
	// partition Ceiling of its class.
	BusiestSecond float64 `json:"busiest_second_units"`
	Ceiling       float64 `json:"ceiling_units_per_second"`
}

// Persisted is a diagnosis raised again and again, or open long.
type Persisted struct {
	Cause string `json:"cause"`
	Class string `json:"class"`
	Key   string `json:"key"`
	Times int    `json:"times"`
	// OpenSeconds is its incidents' time open within the span.
	OpenSeconds int64 `json:"open_seconds"`
}

// Run reads the database and writes the review.
func Run(ctx context.Context, cfg Config) error {
	r, err := history.OpenReader(ctx, cfg.Dir)
	if err != nil {
		return err
	}
	defer r.Close()
	rv, err := build(ctx, r, cfg)
	if err != nil {
		return err
	}
	if cfg.Format == "json" {
		enc := json.NewEncoder(cfg.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rv)
	}
	return writeText(cfg.Out, rv, cfg.Since)
}

// build reads every table's review.
func build(ctx context.Context, r *history.Reader, cfg Config) (Review, error) {
	to := cfg.Now.UTC().Truncate(time.Second)
	from := to.Add(-cfg.Since)
	rv := Review{From: from, To: to, Path: cfg.Dir + "/" + history.FileName, Tables: []TableReview{}}
	entries, err := r.Tables(ctx, from, to)
	if err != nil {
		return rv, err
	}
	incs, err := r.Incidents(ctx, from, to, cfg.Table)
	if err != nil {
		return rv, err
	}
	for _, e := range entries {
		if cfg.Table != "" && e.Table != cfg.Table {
			continue
		}
		a, err := r.Cells(ctx, history.Query{Table: e.Table, Index: e.Index, From: from, To: to})
		if err != nil {
			return rv, err
		}
		tr := TableReview{Table: e.Table, Index: e.Index, StepSeconds: a.StepSeconds, Keys: peaks(a), Incidents: []history.Incident{}}
		for _, inc := range incs {
			if inc.Table == e.Table && inc.Index == e.Index {
				tr.Incidents = append(tr.Incidents, cfg.Masker.MaskIncident(inc))
			}
		}
		tr.Persisted = persisted(tr.Incidents, from, to)
		for i := range tr.Keys {
			tr.Keys[i].Key = cfg.Masker.Mask(tr.Keys[i].Key)
		}
		rv.Tables = append(rv.Tables, tr)
	}
	return rv, nil
}

// peaks ranks the keys by their highest share of a cell.
func peaks(a history.Answer) []KeyPeak {
	byKey := map[[2]string]*KeyPeak{}
	for _, s := range a.Series {
		for _, c := range s.Cells {
			for _, k := range c.Keys {
				id := [2]string{s.Class, k.Key}
				p := byKey[id]
				if p == nil {
					p = &KeyPeak{Key: k.Key, Class: s.Class, Ceiling: s.Ceiling}
					byKey[id] = p
				}
				if k.Share > p.PeakShare {
					p.PeakShare, p.At = k.Share, c.Start
				}
				p.BusiestSecond = max(p.BusiestSecond, k.BusiestSecond)
			}
		}
	}
	out := make([]KeyPeak, 0, len(byKey))
	for _, p := range byKey {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(x, y KeyPeak) int {
		if c := cmp.Compare(y.PeakShare, x.PeakShare); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(x.Class, y.Class), cmp.Compare(x.Key, y.Key))
	})
	return out[:min(len(out), topKeys)]
}

// persisted finds the diagnoses raised PersistTimes times or more, or
// open PersistOpen or more in all, within [from, to).
func persisted(incs []history.Incident, from, to time.Time) []Persisted {
	byID := map[[3]string]*Persisted{}
	var order [][3]string
	for _, inc := range incs {
		key := ""
		if len(inc.Keys) > 0 {
			key = inc.Keys[0]
		}
		id := [3]string{inc.Cause, inc.Class, key}
		p := byID[id]
		if p == nil {
			p = &Persisted{Cause: inc.Cause, Class: inc.Class, Key: key}
			byID[id] = p
			order = append(order, id)
		}
		end := to
		if inc.End != nil && inc.End.Before(to) {
			end = *inc.End
		}
		start := inc.Start
		if start.Before(from) {
			start = from
		}
		p.Times++
		p.OpenSeconds += int64(end.Sub(start) / time.Second)
	}
	out := []Persisted{}
	for _, id := range order {
		if p := byID[id]; p.Times >= PersistTimes || time.Duration(p.OpenSeconds)*time.Second >= PersistOpen {
			out = append(out, *p)
		}
	}
	return out
}

// writeText writes the review for a person.
func writeText(w io.Writer, rv Review, since time.Duration) error {
	p := &printer{w: w}
	p.f("hotkeyd report: %s to %s (%s), from %s\n", rv.From.Format(time.RFC3339), rv.To.Format(time.RFC3339), since, rv.Path)
	if len(rv.Tables) == 0 {
		p.f("\nno traffic recorded in this span\n")
	}
	for _, t := range rv.Tables {
		name := t.Table
		if t.Index != "" {
			name += " / index " + t.Index
		}
		p.f("\n%s\n  keys by peak share (%s cells):\n", name, time.Duration(t.StepSeconds)*time.Second)
		for _, k := range t.Keys {
			p.f("    %-28s %-5s peak share %5.1f%% at %s, busiest second %.0f units (%.0f%% of a partition)\n",
				k.Key, k.Class, 100*k.PeakShare, k.At.Format(time.RFC3339), k.BusiestSecond, 100*k.BusiestSecond/k.Ceiling)
		}
		p.f("  incidents: %d\n", len(t.Incidents))
		for _, inc := range t.Incidents {
			end := "open"
			if inc.End != nil {
				end = inc.End.Format(time.RFC3339)
			}
			p.f("    %s to %s  %-8s %-16s %-5s %v  peak %.0f/s  fix: %s\n", inc.Start.Format(time.RFC3339), end, inc.Severity, inc.Cause, inc.Class, inc.Keys, inc.Peak, inc.FixKind)
		}
		p.f("  persisted: %d\n", len(t.Persisted))
		for _, ps := range t.Persisted {
			p.f("    %s %s %s: raised %d times, open %s in all\n", ps.Cause, ps.Class, ps.Key, ps.Times, time.Duration(ps.OpenSeconds)*time.Second)
		}
	}
	return p.err
}

// printer writes until the first error, which it keeps.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
