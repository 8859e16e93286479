package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/strictyaml"
)

// keyPaths returns the YAML keys of struct type t, nested ones as
// "parent.child": the keys of structs and of maps of structs under their
// parent; durations and types that decode themselves are leaves.
func keyPaths(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		if strings.Contains(","+opts+",", ",inline,") {
			out = append(out, keyPaths(ft)...)
			continue
		}
		if f.Tag.Get("yaml") == "" {
			continue
		}
		out = append(out, name)
		if ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		self := reflect.PointerTo(ft).Implements(reflect.TypeFor[strictyaml.Unmarshaler]())
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Duration]() && !self {
			for _, k := range keyPaths(ft) {
				out = append(out, name+"."+k)
			}
		}
	}
	return out
}

// listed reports whether the last part of a key path is written as a key
// in block, commented out or not, on its own line or in a flow mapping.
func listed(block, path string) bool {
	key := path[strings.LastIndex(path, ".")+1:]
	return regexp.MustCompile(`(?m)(^|[\s{,#])` + regexp.QuoteMeta(key) + `:`).MatchString(block)
}

// TestExampleListsEveryKey holds hotkeyd.example.yaml to what the README
// says of it: it lists every key the file accepts, each source type's in
// an entry of that type, commented out where it has no sensible value.
func TestExampleListsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../../../hotkeyd.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	// The file is valid as it is.
	if _, err := Parse(strings.NewReader(text)); err != nil {
		t.Fatalf("hotkeyd.example.yaml: %v", err)
	}
	// Top level and detector: keys outside the sources list.
	before, sources, _ := strings.Cut(text, "\nsources:\n")
	rest := ""
	if i := regexp.MustCompile(`(?m)^\S`).FindStringIndex(sources); i != nil {
		sources, rest = sources[:i[0]], sources[i[0]:]
	}
	top := before + rest
	for _, path := range keyPaths(reflect.TypeFor[Config]()) {
		if path == "sources" || strings.HasPrefix(path, "sources.") {
			continue
		}
		if !listed(top, path) {
			t.Errorf("hotkeyd.example.yaml does not list %s", path)
		}
	}
	// Each source type: the keys of its entries.
	entry := regexp.MustCompile(`(?m)^\s*-\s*type:\s*(\S+)`)
	blocks := map[string]string{}
	marks := entry.FindAllStringSubmatchIndex(sources, -1)
	for i, m := range marks {
		end := len(sources)
		if i+1 < len(marks) {
			end = marks[i+1][0]
		}
		typ := sources[m[2]:m[3]]
		blocks[typ] += sources[m[0]:end]
	}
	for _, st := range sourceTypes {
		block, ok := blocks[st.name]
		if !ok {
			t.Errorf("hotkeyd.example.yaml has no source of type %s", st.name)
			continue
		}
		for _, path := range keyPaths(reflect.TypeOf(st.settings())) {
			if !listed(block, path) {
				t.Errorf("hotkeyd.example.yaml does not list %s in its %s source", path, st.name)
			}
		}
	}
}
