package dashboards

import "strings"

// ds is the panel and query datasource: the dashboard's datasource variable,
// so that the dashboards import into any Grafana with any Prometheus.
var ds = &Datasource{Type: "prometheus", UID: "${datasource}"}

// sel returns a label selector restricted to the chosen jobs and instances
// plus the given matchers, e.g. sel(`table="$table"`).
func sel(matchers ...string) string {
	return "{" + strings.Join(append([]string{`job=~"$job"`, `instance=~"$instance"`}, matchers...), ", ") + "}"
}

func f(v float64) *float64 { return &v }

func thresholds(base string, steps ...any) *Thresholds {
	t := &Thresholds{Mode: "absolute", Steps: []Step{{Color: base}}}
	for i := 0; i+1 < len(steps); i += 2 {
		t.Steps = append(t.Steps, Step{Color: steps[i+1].(string), Value: f(steps[i].(float64))})
	}
	return t
}

// layout places panels left to right, wrapping at 24 columns.
type layout struct{ x, y, rowH, id int }

func (l *layout) next(w, h int) GridPos {
	if l.x+w > 24 {
		l.x, l.y, l.rowH = 0, l.y+l.rowH, 0
	}
	g := GridPos{H: h, W: w, X: l.x, Y: l.y}
	l.x += w
	l.rowH = max(l.rowH, h)
	return g
}

func (l *layout) row(title string) Panel {
	if l.x != 0 {
		l.x, l.y, l.rowH = 0, l.y+l.rowH, 0
	}
	l.id++
	collapsed := false
	p := Panel{ID: l.id, Type: "row", Title: title, GridPos: GridPos{H: 1, W: 24, X: 0, Y: l.y}, Collapsed: &collapsed}
	l.y++
	return p
}

func (l *layout) panel(typ, title, description string, w, h int, targets ...Target) Panel {
	l.id++
	for i := range targets {
		targets[i].RefID = string(rune('A' + i))
		targets[i].Datasource = ds
		if targets[i].Format == "" {
			targets[i].Format = "time_series"
		}
		if !targets[i].Instant {
			targets[i].Range = true
		}
	}
	return Panel{ID: l.id, Type: typ, Title: title, Description: description, GridPos: l.next(w, h), Datasource: ds, Targets: targets}
}

// timeSeries is a time series panel with a unit.
func (l *layout) timeSeries(title, description, unit string, w, h int, targets ...Target) Panel {
	p := l.panel("timeseries", title, description, w, h, targets...)
	p.FieldConfig = &FieldConfig{Defaults: FieldDefaults{
		Unit:       unit,
		Color:      map[string]any{"mode": "palette-classic"},
		Custom:     map[string]any{"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never", "spanNulls": false},
		Thresholds: thresholds("green"),
	}, Overrides: []any{}}
	p.Options = map[string]any{
		"legend":  map[string]any{"displayMode": "table", "placement": "right", "showLegend": true, "calcs": []string{"lastNotNull", "max"}},
		"tooltip": map[string]any{"mode": "multi", "sort": "desc"},
	}
	return p
}

// heatmap is a heatmap panel of the series of one query, one row per
// series (named by its legend), a cell per step coloured by its value
// from 0 to 1: the series are the rows as they are, not counted into
// buckets (calculate off).
func (l *layout) heatmap(title, description, unit string, w, h int, target Target) Panel {
	p := l.panel("heatmap", title, description, w, h, target)
	p.FieldConfig = &FieldConfig{Defaults: FieldDefaults{Unit: unit, Thresholds: thresholds("green")}, Overrides: []any{}}
	p.Options = map[string]any{
		"calculate":  false,
		"cellGap":    1,
		"cellValues": map[string]any{"unit": unit},
		"color":      map[string]any{"mode": "scheme", "scheme": "Oranges", "scale": "linear", "steps": 64, "min": 0, "max": 1, "reverse": false},
		"yAxis":      map[string]any{"axisPlacement": "left", "reverse": false},
		"rowsFrame":  map[string]any{"layout": "auto"},
		"legend":     map[string]any{"show": true},
		"tooltip":    map[string]any{"mode": "single", "yHistogram": false, "showColorScale": true},
	}
	return p
}

// stat is a single-number panel of an instant query.
func (l *layout) stat(title, description, unit, expr string, w, h int, th *Thresholds) Panel {
	p := l.panel("stat", title, description, w, h, Target{Expr: expr, Instant: true})
	if th == nil {
		th = thresholds("blue")
	}
	p.FieldConfig = &FieldConfig{Defaults: FieldDefaults{Unit: unit, Thresholds: th, Color: map[string]any{"mode": "thresholds"}}, Overrides: []any{}}
	p.Options = map[string]any{
		"reduceOptions": map[string]any{"calcs": []string{"lastNotNull"}, "fields": "", "values": false},
		"colorMode":     "value", "graphMode": "none", "textMode": "auto", "justifyMode": "auto", "orientation": "auto",
	}
	return p
}

// shareBarGauge shows the top keys' shares now, one bar per key.
func (l *layout) shareBarGauge(title, description, expr, legend string, w, h int) Panel {
	p := l.panel("bargauge", title, description, w, h, Target{Expr: expr, Instant: true, LegendFormat: legend})
	p.FieldConfig = &FieldConfig{Defaults: FieldDefaults{
		Unit: "percentunit", Min: f(0), Max: f(1),
		Color:      map[string]any{"mode": "thresholds"},
		Thresholds: thresholds("green", 0.10, "orange", 0.25, "red"),
	}, Overrides: []any{}}
	p.Options = map[string]any{
		"orientation":   "horizontal",
		"displayMode":   "gradient",
		"showUnfilled":  true,
		"valueMode":     "color",
		"namePlacement": "left",
		"reduceOptions": map[string]any{"calcs": []string{"lastNotNull"}, "fields": "", "values": false},
	}
	return p
}

// ofCeiling is the expression of a per-class rate metric as a fraction of
// one DynamoDB partition's ceiling for its class as each instance is
// configured (hotkeyd_partition_limit_units_per_second: write_limit,
// 1000 WCU/s, and read_limit, 3000 RCU/s, unless set), aggregated by the
// given labels: what hotkeyd's severities are judged on (warning from
// 0.5, critical from 0.8 with the default settings).
func ofCeiling(agg, metric string, matchers ...string) string {
	return "max by (" + agg + ") (" + metric + sel(matchers...) +
		" / on (job, instance, class) group_left hotkeyd_partition_limit_units_per_second" + sel() + ")"
}

// ceilingThresholds colour a fraction of the partition ceiling as the
// detector's default severities do.
func ceilingThresholds() *Thresholds { return thresholds("green", 0.5, "orange", 0.8, "red") }

// ceilingBarGauge shows keys' busiest second against the ceiling now.
func (l *layout) ceilingBarGauge(title, description, expr, legend string, w, h int) Panel {
	p := l.shareBarGauge(title, description, expr, legend, w, h)
	p.FieldConfig.Defaults.Max = f(1.2)
	p.FieldConfig.Defaults.Thresholds = ceilingThresholds()
	return p
}

// findingsTable lists the series of hotkeyd_diagnosis or hotkeyd_hot_key
// with their labels as columns.
func (l *layout) findingsTable(title, description, expr string, columns []string, w, h int) Panel {
	p := l.panel("table", title, description, w, h, Target{Expr: expr, Instant: true, Format: "table"})
	exclude := map[string]bool{"Time": true, "Value": true}
	index := map[string]int{}
	rename := map[string]string{}
	for i, c := range columns {
		index[c] = i
		rename[c] = strings.ToUpper(c[:1]) + strings.ReplaceAll(c[1:], "_", " ")
	}
	p.Transformations = []Transformation{{ID: "organize", Options: map[string]any{
		"excludeByName": exclude,
		"indexByName":   index,
		"renameByName":  rename,
	}}}
	p.FieldConfig = &FieldConfig{Defaults: FieldDefaults{
		Custom:     map[string]any{"align": "auto", "cellOptions": map[string]any{"type": "auto"}, "filterable": true},
		Thresholds: thresholds("green"),
		Color:      map[string]any{"mode": "thresholds"},
	}, Overrides: []any{}}
	p.Options = map[string]any{"showHeader": true, "cellHeight": "sm", "footer": map[string]any{"show": false}}
	return p
}

// variables returns the datasource, job and instance variables every
// hotkeyd dashboard has, followed by extra.
func variables(extra ...Variable) Templating {
	list := []Variable{
		{
			Name: "datasource", Label: "Data source", Type: "datasource", Query: "prometheus",
			Current: map[string]any{}, Options: []any{}, Refresh: 1,
		},
		queryVariable("job", "Job", `label_values(hotkeyd_build_info, job)`, true),
		queryVariable("instance", "Instance", `label_values(hotkeyd_build_info{job=~"$job"}, instance)`, true),
	}
	return Templating{List: append(list, extra...)}
}

func queryVariable(name, label, query string, all bool) Variable {
	v := Variable{
		Name: name, Label: label, Type: "query", Datasource: ds,
		Query:      VariableQuery{Query: query, RefID: "PrometheusVariableQueryEditor-VariableQuery"},
		Definition: query, Refresh: 2, Sort: 1, Multi: all, IncludeAll: all,
		Current: map[string]any{}, Options: []any{},
	}
	if all {
		v.AllValue = ".*"
		v.Current = map[string]any{"selected": true, "text": []string{"All"}, "value": []string{"$__all"}}
	}
	return v
}

func newDashboard(uid, title, description string, tmpl Templating, panels []Panel) Dashboard {
	return Dashboard{
		UID: uid, Title: title, Description: description,
		Tags:     []string{"hotkeyd", "dynamodb"},
		Timezone: "browser", Editable: true, GraphTooltip: 1,
		SchemaVersion: 39, Version: 1, Refresh: "30s",
		Time:       TimeRange{From: "now-1h", To: "now"},
		Templating: tmpl,
		Annotations: Annotations{List: []any{map[string]any{
			"builtIn": 1, "datasource": map[string]any{"type": "grafana", "uid": "-- Grafana --"},
			"enable": true, "hide": true, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard",
		}}},
		Links: []Link{{
			Title: "hotkeyd dashboards", Type: "dashboards", Tags: []string{"hotkeyd"},
			AsDropdown: true, IncludeVars: true, KeepTime: true, Icon: "external link",
		}},
		Panels: panels,
	}
}
