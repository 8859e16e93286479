package strictyaml

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type inner struct {
	Name  string        `yaml:"name"`
	Every time.Duration `yaml:"every"`
}

type embedded struct {
	Extra string `yaml:"extra"`
}

type doc struct {
	embedded `yaml:",inline"`
	Window   time.Duration    `yaml:"window"`
	Share    float64          `yaml:"share"`
	Count    int              `yaml:"count"`
	On       bool             `yaml:"on"`
	Paths    []string         `yaml:"paths"`
	Items    []inner          `yaml:"items"`
	Tables   map[string]inner `yaml:"tables"`
	Hidden   string           `yaml:"-"`
	Untagged string
}

func TestDecodeErrors(t *testing.T) {
	for in, want := range map[string]string{
		"windw: 1s\n":                    "windw: unknown key (did you mean window?)",
		"zzz: 1\n":                       "zzz: unknown key (known keys: count, extra, items, on, paths, share, tables, window)",
		"hidden: x\n":                    "hidden: unknown key (known keys: count, extra, items, on, paths, share, tables, window)",
		"window: sixty\n":                `window: "sixty" is not a duration such as 90s, 5m or 1h30m`,
		"share: half\n":                  `share: "half" is not a number`,
		"count: 1.5\n":                   `count: "1.5" is not a whole number`,
		"on: maybe\n":                    `on: "maybe" is not true or false`,
		"paths: a.log\n":                 `paths: want a list, got "a.log"`,
		"paths: [a, [b]]\n":              "paths[1]: want a string, got a list",
		"items: [{name: a}, {nme: b}]\n": "items[1].nme: unknown key (did you mean name?)",
		"items: [{every: soon}]\n":       `items[0].every: "soon" is not a duration such as 90s, 5m or 1h30m`,
		"tables: {orders: {every: x}}\n": `tables.orders.every: "x" is not a duration such as 90s, 5m or 1h30m`,
		"tables: [a]\n":                  "tables: want a mapping (key: value), got a list",
		"- a\n":                          "want a mapping (key: value), got a list",
		"count: 1\ncount: 2\n":           "count: given twice (lines 1 and 2)",
		"tables: {orders: {name: a}, orders: {every: 1s}}\n": "tables.orders: given twice (lines 1 and 1)",
		"a: 1\n---\nb: 2\n": "more than one YAML document",
	} {
		var d doc
		err := Decode(strings.NewReader(in), &d)
		if err == nil || err.Error() != want {
			t.Errorf("Decode(%q)\n got: %v\nwant: %s", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "time.") || strings.Contains(err.Error(), "strictyaml.") || strings.Contains(err.Error(), "float64") {
			t.Errorf("Decode(%q): error shows a Go type: %v", in, err)
		}
	}
}

func TestDecodeKeepsDefaults(t *testing.T) {
	d := doc{Window: time.Minute, Share: 0.1, Tables: map[string]inner{"orders": {Name: "o", Every: time.Second}}}
	in := "share: 0.2\nextra: x\npaths: [a, b]\ntables: {orders: {name: p}, users: {every: 2s}}\nitems: [{name: i}]\non:\n"
	if err := Decode(strings.NewReader(in), &d); err != nil {
		t.Fatal(err)
	}
	want := doc{
		embedded: embedded{Extra: "x"}, Window: time.Minute, Share: 0.2, Paths: []string{"a", "b"},
		Items:  []inner{{Name: "i"}},
		Tables: map[string]inner{"orders": {Name: "p", Every: time.Second}, "users": {Every: 2 * time.Second}},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got %+v\nwant %+v", d, want)
	}
	var empty doc
	if err := Decode(strings.NewReader("# nothing\n"), &empty); err != nil || !reflect.DeepEqual(empty, doc{}) {
		t.Errorf("empty document: %+v, %v", empty, err)
	}
}

// union picks its settings by its kind key, as the sources list does.
type union struct {
	Kind string
	Rest inner
}

func (u *union) UnmarshalStrictYAML(n *yaml.Node) error {
	if err := DecodeNode(n.Content[1], &u.Kind); err != nil {
		return At("kind", err)
	}
	rest := *n
	rest.Content = n.Content[2:]
	return DecodeNode(&rest, &u.Rest)
}

func TestUnmarshalerErrorsGetTheirPath(t *testing.T) {
	var out struct {
		List []union `yaml:"list"`
	}
	err := Decode(strings.NewReader("list:\n  - {kind: a, name: x}\n  - {kind: b, nam: y}\n"), &out)
	var e *Error
	if !errors.As(err, &e) || e.Path != "list[1].nam" || !e.Unknown {
		t.Fatalf("error %#v, want an unknown key at list[1].nam", err)
	}
	if err := Decode(strings.NewReader("list: [{kind: a, name: x}]\n"), &out); err != nil || out.List[0] != (union{Kind: "a", Rest: inner{Name: "x"}}) {
		t.Errorf("decoded %+v, %v", out.List, err)
	}
}

func TestJoinAndAt(t *testing.T) {
	for _, c := range [][3]string{{"", "a", "a"}, {"a", "", "a"}, {"a", "b", "a.b"}, {"a", "[1]", "a[1]"}} {
		if got := Join(c[0], c[1]); got != c[2] {
			t.Errorf("Join(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
	if got := At("sources[0]", errors.New("boom")).Error(); got != "sources[0]: boom" {
		t.Errorf("At plain error: %s", got)
	}
	if At("x", nil) != nil {
		t.Error("At(nil) is not nil")
	}
}

// TestDecodeEveryError: decoding goes on past a bad key and returns every
// error, each at its path; the keys that decode are set; InFileOrder puts
// them, and errors of checks made afterwards, in the order of their keys
// in the file, a key left out at its nearest enclosing key.
func TestDecodeEveryError(t *testing.T) {
	in := `share: 0.5
items:
  - name: a
    every: soon
    nam: b
  - {name: c, every: 2s}
windw: 1s
count: 1.5
paths: x
tables:
  t1: {every: never}
`
	var d doc
	err := Decode(strings.NewReader(in), &d)
	errs := List(err)
	errs = append(errs, errors.New("items[1].name: a check after decoding"), errors.New("tables.t1.name: required"),
		errors.New("of no key"))
	InFileOrder(errs, []byte(in))
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		"of no key",
		`items[0].every: "soon" is not a duration such as 90s, 5m or 1h30m`,
		"items[0].nam: unknown key (did you mean name?)",
		"items[1].name: a check after decoding",
		"windw: unknown key (did you mean window?)",
		`count: "1.5" is not a whole number`,
		`paths: want a list, got "x"`,
		`tables.t1.every: "never" is not a duration such as 90s, 5m or 1h30m`,
		"tables.t1.name: required", // at t1's line, as every is: in the order given
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d.Share != 0.5 || len(d.Items) != 2 || d.Items[1].Every != 2*time.Second || d.Items[0].Name != "a" {
		t.Errorf("the good keys were not all decoded: %+v", d)
	}
}
