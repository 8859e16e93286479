// Package dashboards builds hotkeyd's Grafana dashboards from code and
// writes them as JSON (go generate ./dashboards): hotkeyd-overview.json for
// every watched table at once and hotkeyd-table.json to drill into one
// table. The JSON files are what users import; the tests check they match
// this code, lint them, and run every panel query against a real
// Prometheus scraping `hotkeyd demo`.
package dashboards

//go:generate go run ./internal/gendash -dir .

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Dashboard is the part of Grafana's dashboard JSON model hotkeyd uses.
type Dashboard struct {
	// UID is the stable identifier links and provisioning refer to.
	UID           string      `json:"uid"`
	Title         string      `json:"title"`
	Description   string      `json:"description"`
	Tags          []string    `json:"tags"`
	Timezone      string      `json:"timezone"`
	Editable      bool        `json:"editable"`
	GraphTooltip  int         `json:"graphTooltip"`
	SchemaVersion int         `json:"schemaVersion"`
	Version       int         `json:"version"`
	Refresh       string      `json:"refresh"`
	Time          TimeRange   `json:"time"`
	Templating    Templating  `json:"templating"`
	Annotations   Annotations `json:"annotations"`
	Links         []Link      `json:"links"`
	Panels        []Panel     `json:"panels"`
	LiveNow       bool        `json:"liveNow"`
	// ID is null, so that importing creates a new dashboard.
	ID         *int        `json:"id"`
	Timepicker *Timepicker `json:"timepicker,omitempty"`
}

// TimeRange is the dashboard's default time range.
type TimeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Timepicker lists the refresh intervals offered.
type Timepicker struct {
	RefreshIntervals []string `json:"refresh_intervals"`
}

// Templating holds the template variables.
type Templating struct {
	List []Variable `json:"list"`
}

// Variable is one template variable.
type Variable struct {
	Name        string      `json:"name"`
	Label       string      `json:"label"`
	Description string      `json:"description,omitempty"`
	Type        string      `json:"type"`
	Query       any         `json:"query"`
	Datasource  *Datasource `json:"datasource,omitempty"`
	Definition  string      `json:"definition,omitempty"`
	Regex       string      `json:"regex"`
	Refresh     int         `json:"refresh"`
	Multi       bool        `json:"multi"`
	IncludeAll  bool        `json:"includeAll"`
	AllValue    string      `json:"allValue,omitempty"`
	Current     any         `json:"current"`
	Options     []any       `json:"options"`
	Hide        int         `json:"hide"`
	Sort        int         `json:"sort"`
}

// VariableQuery is the query of a Prometheus query variable.
type VariableQuery struct {
	Query string `json:"query"`
	RefID string `json:"refId"`
}

// Annotations holds the dashboard's annotation queries.
type Annotations struct {
	List []any `json:"list"`
}

// Link is a dashboard link.
type Link struct {
	Title       string   `json:"title"`
	Type        string   `json:"type"`
	Tags        []string `json:"tags"`
	AsDropdown  bool     `json:"asDropdown"`
	IncludeVars bool     `json:"includeVars"`
	KeepTime    bool     `json:"keepTime"`
	TargetBlank bool     `json:"targetBlank"`
	Icon        string   `json:"icon"`
	URL         string   `json:"url"`
	Tooltip     string   `json:"tooltip"`
}

// Datasource refers to a data source, here always the ${datasource} variable.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Panel is one panel (or row) of a dashboard.
type Panel struct {
	ID              int              `json:"id"`
	Type            string           `json:"type"`
	Title           string           `json:"title"`
	Description     string           `json:"description,omitempty"`
	GridPos         GridPos          `json:"gridPos"`
	Datasource      *Datasource      `json:"datasource,omitempty"`
	Targets         []Target         `json:"targets,omitempty"`
	FieldConfig     *FieldConfig     `json:"fieldConfig,omitempty"`
	Options         map[string]any   `json:"options,omitempty"`
	Transformations []Transformation `json:"transformations,omitempty"`
	Collapsed       *bool            `json:"collapsed,omitempty"`
	Panels          []Panel          `json:"panels,omitempty"`
}

// GridPos places a panel on the 24-column grid.
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// Target is one Prometheus query of a panel.
type Target struct {
	RefID        string      `json:"refId"`
	Datasource   *Datasource `json:"datasource"`
	Expr         string      `json:"expr"`
	LegendFormat string      `json:"legendFormat,omitempty"`
	Instant      bool        `json:"instant"`
	Range        bool        `json:"range"`
	Format       string      `json:"format"`
	Interval     string      `json:"interval,omitempty"`
}

// FieldConfig sets units, ranges, thresholds and per-field overrides.
type FieldConfig struct {
	Defaults  FieldDefaults `json:"defaults"`
	Overrides []any         `json:"overrides"`
}

// FieldDefaults are the field settings every series gets.
type FieldDefaults struct {
	Unit       string         `json:"unit,omitempty"`
	Min        *float64       `json:"min,omitempty"`
	Max        *float64       `json:"max,omitempty"`
	Decimals   *int           `json:"decimals,omitempty"`
	Color      map[string]any `json:"color,omitempty"`
	Thresholds *Thresholds    `json:"thresholds,omitempty"`
	Custom     map[string]any `json:"custom,omitempty"`
	Links      []any          `json:"links,omitempty"`
}

// Thresholds colour values by step.
type Thresholds struct {
	Mode  string `json:"mode"`
	Steps []Step `json:"steps"`
}

// Step is one threshold step; Value nil is the base step.
type Step struct {
	Color string   `json:"color"`
	Value *float64 `json:"value"`
}

// Transformation is one Grafana data transformation.
type Transformation struct {
	ID      string         `json:"id"`
	Options map[string]any `json:"options"`
}

// Encode returns the dashboard as indented JSON with a trailing newline,
// the form the committed files have.
func (d Dashboard) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("encode dashboard %q: %w", d.UID, err)
	}
	return buf.Bytes(), nil
}

// Queries returns every PromQL expression of the dashboard: panel targets
// (rows' nested panels included) and query variables, each with where it
// comes from.
func (d Dashboard) Queries() []Query {
	var out []Query
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(VariableQuery); ok {
			out = append(out, Query{Where: "variable " + v.Name, Expr: q.Query, Variable: true})
		}
	}
	var walk func(ps []Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, Query{Where: fmt.Sprintf("panel %q target %s", p.Title, t.RefID), Panel: p.Title, Expr: t.Expr, Instant: t.Instant})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Query is one PromQL expression of a dashboard.
type Query struct {
	// Where names the panel and target, or the variable.
	Where string
	// Panel is the panel's title, empty for variables.
	Panel string
	// Expr is the expression, with template variables not substituted.
	Expr string
	// Instant is set for instant (table, bar gauge, stat) queries.
	Instant bool
	// Variable is set when Expr is a variable's query (label_values(...)).
	Variable bool
}

// All returns every dashboard by the name of its JSON file.
func All() map[string]Dashboard {
	return map[string]Dashboard{
		"hotkeyd-overview.json": Overview(),
		"hotkeyd-table.json":    Table(),
	}
}
