package export

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// tableSeries is one table's series as Gather keeps them: per family, in
// the order a registry sorts them.
type tableSeries struct {
	rev, top uint64
	fams     [numFamilies][]*dto.Metric
}

// Gather returns the Collector's metric families, as a registry would
// gather it: the same series, labels sorted by name, each family's
// series sorted by their label values. A table whose report kept its
// revision since the last Gather keeps its series, and when no table
// changed the families are the ones made then: a scrape of idle tables
// builds, checks and sorts nothing again. The families returned are the
// caller's (their series are shared and must not be modified). It is safe
// for concurrent use.
func (c *Collector) Gather() ([]*dto.MetricFamily, error) {
	st := c.live.Load()
	if st == nil {
		return nil, nil
	}
	c.mu.Lock()
	if st != c.state {
		c.refresh(st)
	}
	out := make([]*dto.MetricFamily, 0, numFamilies+1)
	for _, mf := range c.merged {
		if mf != nil && len(mf.Metric) > 0 {
			cp := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Metric: slices.Clone(mf.Metric)}
			out = append(out, cp)
		}
	}
	c.mu.Unlock()
	out = append(out, lastEvaluation(st), partitionLimit(st))
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// partitionLimit is the family of hotkeyd_partition_limit_units_per_second.
func partitionLimit(st *State) *dto.MetricFamily {
	var limits []*dto.Metric
	for _, l := range partitionLimits(st) {
		limits = append(limits, &dto.Metric{Label: []*dto.LabelPair{{Name: ptr("class"), Value: ptr(l.class)}}, Gauge: &dto.Gauge{Value: ptr(l.limit)}})
	}
	return gauge(partitionLimitName, partitionLimitHelp, limits...)
}

// lastEvaluation is the family of hotkeyd_last_evaluation_timestamp_seconds.
func lastEvaluation(st *State) *dto.MetricFamily {
	return gauge(lastEvaluationName, lastEvaluationHelp, &dto.Metric{Gauge: &dto.Gauge{Value: ptr(float64(st.Updated.UnixNano()) / 1e9)}})
}

// refresh makes the series of st's tables whose revision changed (or is
// unknown), drops those of tables gone, and merges the families again if
// anything changed. Called with c.mu held.
func (c *Collector) refresh(st *State) {
	changed := c.state == nil
	seen := make(map[string]struct{}, len(st.Report.Tables))
	for i := range st.Report.Tables {
		t := &st.Report.Tables[i]
		label := TableLabel(t.Table, t.Index)
		seen[label] = struct{}{}
		rev := uint64(0)
		if st.Revisions != nil {
			rev = st.Revisions[i]
		}
		// The keys a class exports are the report's settings' top, which
		// a reload changes without changing the tables' revisions.
		top := st.Report.Settings.Top
		if ts := c.tables[label]; ts != nil && rev != 0 && ts.rev == rev && ts.top == uint64(top) {
			continue
		}
		c.tables[label] = c.seriesOf(t, rev, top)
		changed = true
	}
	for label := range c.tables {
		if _, ok := seen[label]; !ok {
			delete(c.tables, label)
			changed = true
		}
	}
	c.state = st
	if !changed {
		return
	}
	for i, f := range families {
		var ms []*dto.Metric
		for _, ts := range c.tables {
			ms = append(ms, ts.fams[i]...)
		}
		slices.SortFunc(ms, compareSeries)
		c.merged[i] = gauge(f.name, f.help, ms...)
	}
}

// seriesOf builds a table's series. Label pairs are shared: the table's
// by all of its series, a key's by its three.
func (c *Collector) seriesOf(t *report.TableReport, rev uint64, top int) *tableSeries {
	ts := &tableSeries{rev: rev, top: uint64(top)}
	pairs := map[*string]map[string]*dto.LabelPair{}
	pair := func(name *string, value string) *dto.LabelPair {
		byValue := pairs[name]
		if byValue == nil {
			byValue = map[string]*dto.LabelPair{}
			pairs[name] = byValue
		}
		p := byValue[value]
		if p == nil {
			p = &dto.LabelPair{Name: name, Value: &value}
			byValue[value] = p
		}
		return p
	}
	c.buildTable(func(f *family, v float64, labels ...string) {
		m := &dto.Metric{Label: make([]*dto.LabelPair, len(labels)), Gauge: &dto.Gauge{Value: &v}}
		for i, j := range f.order {
			m.Label[i] = pair(f.labels[j], labels[j])
		}
		ts.fams[f.index] = append(ts.fams[f.index], m)
	}, labelDeduper{}, t, top)
	for i := range ts.fams {
		slices.SortFunc(ts.fams[i], compareSeries)
	}
	return ts
}

// compareSeries orders series of one family by their label values, label
// by label in the order of the labels' names: a registry's order.
func compareSeries(a, b *dto.Metric) int {
	for i := range min(len(a.Label), len(b.Label)) {
		if c := strings.Compare(a.Label[i].GetValue(), b.Label[i].GetValue()); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a.Label), len(b.Label))
}

func gauge(name, help string, ms ...*dto.Metric) *dto.MetricFamily {
	return &dto.MetricFamily{Name: &name, Help: &help, Type: dto.MetricType_GAUGE.Enum(), Metric: ms}
}

func ptr[T any](v T) *T { return &v }

// Gatherers returns a Gatherer of reg's families and the Collector's
// (Collector.Gather), sorted by name: what the daemon serves at /metrics.
// The Collector is not registered in reg; a family of the same name in
// both is an error.
func Gatherers(reg prometheus.Gatherer, c *Collector) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := reg.Gather()
		own, oerr := c.Gather()
		if oerr != nil {
			return mfs, oerr
		}
		names := make(map[string]struct{}, len(mfs))
		for _, mf := range mfs {
			names[mf.GetName()] = struct{}{}
		}
		for _, mf := range own {
			if _, dup := names[mf.GetName()]; dup {
				return mfs, fmt.Errorf("metric family %s gathered twice", mf.GetName())
			}
		}
		mfs = append(mfs, own...)
		slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
		return mfs, err
	})
}
