// Package strictyaml decodes a YAML configuration into Go values strictly,
// with errors written for the person editing the file: an unknown key is an
// error that suggests the closest known key, a wrong value says what was
// expected in YAML's words (a duration, a list), never with a Go type name,
// and every error names its key as a path into the file
// (sources[1].paths[0]).
//
// Struct fields are matched by their yaml tag (",inline" embeds, "-"
// skips); a key the file leaves out keeps the value the target held, so a
// caller sets its defaults first and decodes over them. A type that decodes
// itself (a union chosen by one of its keys) implements Unmarshaler.
package strictyaml

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Error is a configuration error at one key.
type Error struct {
	// Path is the key as a path into the file: detector.top,
	// sources[1].paths[0]; empty for the document itself.
	Path string
	// Msg says what is wrong.
	Msg string
	// Unknown is set when the key at Path is not a known key; Suggest is
	// then the known key it most likely misspells, if any.
	Unknown bool
	Suggest string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Unmarshaler is implemented by a type that decodes itself from its node.
// Errors it returns are placed under its path (see At).
type Unmarshaler interface {
	UnmarshalStrictYAML(n *yaml.Node) error
}

// At returns err placed under path: an *Error gets path prepended to its
// own, any other error becomes the message of an *Error at path; each of
// several errors joined (errors.Join) is placed so.
func At(path string, err error) error {
	if err == nil {
		return nil
	}
	if errs := List(err); len(errs) > 1 {
		placed := make([]error, len(errs))
		for i, e := range errs {
			placed[i] = At(path, e)
		}
		return errors.Join(placed...)
	}
	var e *Error
	if errors.As(err, &e) {
		return &Error{Path: Join(path, e.Path), Msg: e.Msg, Unknown: e.Unknown, Suggest: e.Suggest}
	}
	return &Error{Path: path, Msg: err.Error()}
}

// List returns the errors err holds, in order: those errors.Join (or
// any error with Unwrap() []error) joined, flattened, or err itself; nil
// for nil.
func List(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, List(e)...)
	}
	return out
}

// Join appends child (a key, or an index "[2]") to the path parent.
func Join(parent, child string) string {
	switch {
	case parent == "":
		return child
	case child == "":
		return parent
	case strings.HasPrefix(child, "["):
		return parent + child
	}
	return parent + "." + child
}

// Decode reads one YAML document from r into out, a pointer. An empty
// document leaves out as it is; a second document is an error.
func Decode(r io.Reader, out any) error {
	dec := yaml.NewDecoder(r)
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("more than one YAML document")
	}
	return DecodeNode(&doc, out)
}

// DecodeNode decodes n into out, a pointer. It decodes every key it can
// and returns every error it finds, joined (List), in the file's order: a
// key that cannot be decoded keeps its value, and the next is decoded.
func DecodeNode(n *yaml.Node, out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("strictyaml: decode into %T, want a non-nil pointer", out)
	}
	return decode(n, v.Elem())
}

var (
	unmarshalerType = reflect.TypeFor[Unmarshaler]()
	yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

func decode(n *yaml.Node, v reflect.Value) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return decode(n.Content[0], v)
	case yaml.AliasNode:
		return decode(n.Alias, v)
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // "key:" with nothing keeps the default
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshalerType) {
		return v.Addr().Interface().(Unmarshaler).UnmarshalStrictYAML(n)
	}
	if v.CanAddr() && v.Addr().Type().Implements(yamlUnmarshaler) {
		return decodeScalar(n, v)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return decode(n, v.Elem())
	case reflect.Struct:
		return decodeStruct(n, v)
	case reflect.Map:
		return decodeMap(n, v)
	case reflect.Slice:
		return decodeSlice(n, v)
	}
	return decodeScalar(n, v)
}

func decodeStruct(n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return &Error{Msg: "want " + want(v.Type()) + ", got " + got(n)}
	}
	fields := fieldsOf(v.Type())
	seen := map[string]int{}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		if err := once(seen, n.Content[i]); err != nil {
			errs = append(errs, err)
			continue
		}
		idx, ok := fields[key]
		if !ok {
			errs = append(errs, UnknownKey(key, Keys(v.Type())))
			continue
		}
		if err := decode(n.Content[i+1], v.FieldByIndex(idx)); err != nil {
			errs = append(errs, At(key, err))
		}
	}
	return errors.Join(errs...)
}

func decodeMap(n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return &Error{Msg: "want " + want(v.Type()) + ", got " + got(n)}
	}
	if v.Type().Key().Kind() != reflect.String {
		return decodeScalar(n, v)
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	seen := map[string]int{}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		if err := once(seen, n.Content[i]); err != nil {
			// The same name twice (a table under tables:, an index under
			// indexes:) would merge the second copy over the first.
			errs = append(errs, err)
			continue
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		if old := v.MapIndex(reflect.ValueOf(key).Convert(v.Type().Key())); old.IsValid() {
			elem.Set(old)
		}
		if err := decode(n.Content[i+1], elem); err != nil {
			errs = append(errs, At(key, err))
		}
		v.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), elem)
	}
	return errors.Join(errs...)
}

// once records the mapping key k in seen, by its line, and is the error
// naming both lines when the mapping holds it already.
func once(seen map[string]int, k *yaml.Node) error {
	if first, dup := seen[k.Value]; dup {
		return &Error{Path: k.Value, Msg: fmt.Sprintf("given twice (lines %d and %d)", first, k.Line)}
	}
	seen[k.Value] = k.Line
	return nil
}

func decodeSlice(n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.SequenceNode {
		return &Error{Msg: "want " + want(v.Type()) + ", got " + got(n)}
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	var errs []error
	for i, item := range n.Content {
		if err := decode(item, s.Index(i)); err != nil {
			errs = append(errs, At(fmt.Sprintf("[%d]", i), err))
		}
	}
	v.Set(s)
	return errors.Join(errs...)
}

// decodeScalar lets yaml.v3 decode a value, and words its errors without
// Go type names.
func decodeScalar(n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.ScalarNode && !v.Addr().Type().Implements(yamlUnmarshaler) {
		return &Error{Msg: "want " + want(v.Type()) + ", got " + got(n)}
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Type() != durationType && n.ShortTag() != "!!int" {
			// yaml.v3 would truncate 1.5 to 1.
			return &Error{Msg: fmt.Sprintf("%s is not %s", got(n), want(v.Type()))}
		}
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) || n.Kind != yaml.ScalarNode {
			return &Error{Msg: fmt.Sprintf("%s is not %s", got(n), want(v.Type()))}
		}
		return &Error{Msg: err.Error()}
	}
	return nil
}

// want describes what a value of type t looks like in YAML.
func want(t reflect.Type) string {
	if t == durationType {
		return "a duration such as 90s, 5m or 1h30m"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "a mapping (key: value)"
	case reflect.Pointer:
		return want(t.Elem())
	}
	return "another kind of value"
}

// got describes the node the file holds.
func got(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return fmt.Sprintf("%q", n.Value)
}

// UnknownKey is the error for key, unknown among known: it suggests the
// closest known key, or lists them all when none is close.
func UnknownKey(key string, known []string) *Error {
	if best := closest(key, known); best != "" {
		return &Error{Path: key, Msg: "unknown key (did you mean " + best + "?)", Unknown: true, Suggest: best}
	}
	return &Error{Path: key, Msg: "unknown key (known keys: " + strings.Join(known, ", ") + ")", Unknown: true}
}

// closest returns the known key nearest to key by edit distance, when it is
// near enough to be a typo (at most a third of its letters differ) or
// shares its first word (hold_for and hold, min_rate and min_events);
// else "".
func closest(key string, known []string) string {
	best, bestDist := "", len(key)/3+1
	for _, k := range known {
		if d := distance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return best
	}
	if word, _, ok := strings.Cut(key, "_"); ok && len(word) >= 3 {
		for _, k := range known {
			if k == word || strings.HasPrefix(k, word+"_") {
				return k
			}
		}
	}
	return ""
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Keys returns the YAML keys of the struct type t (or pointer to one),
// sorted: what a file may say for a value of that type.
func Keys(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	keys := mapKeys(fieldsOf(t))
	sort.Strings(keys)
	return keys
}

// fieldsOf maps the YAML keys of a struct type to their field indexes,
// following ",inline" embedded structs.
func fieldsOf(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Struct {
			for k, idx := range fieldsOf(f.Type) {
				out[k] = append([]int{i}, idx...)
			}
			continue
		}
		if tag == "" {
			continue // only tagged fields are keys of the file
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = []int{i}
	}
	return out
}

func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// InFileOrder sorts errors whose message starts with a key path ("PATH:
// ...", as *Error and the checks that name their key write them) by where
// that key is in the YAML document data: the order a person reads the
// file in. A key the file does not hold (a required key left out) sorts
// at its nearest enclosing key; errors of no key keep their place first.
func InFileOrder(errs []error, data []byte) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil {
		return
	}
	lines := map[string]int{}
	var walk func(path string, n *yaml.Node)
	walk = func(path string, n *yaml.Node) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(path, c)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := Join(path, n.Content[i].Value)
				if _, seen := lines[p]; !seen {
					lines[p] = n.Content[i].Line
				}
				walk(p, n.Content[i+1])
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := Join(path, fmt.Sprintf("[%d]", i))
				lines[p] = c.Line
				walk(p, c)
			}
		}
	}
	walk("", &doc)
	line := func(err error) int {
		path, _, ok := strings.Cut(err.Error(), ": ")
		for ok && path != "" {
			if l, found := lines[path]; found {
				return l
			}
			cut := strings.LastIndexAny(path, ".[")
			if cut < 0 {
				break
			}
			path = path[:cut]
		}
		return 0
	}
	sort.SliceStable(errs, func(i, j int) bool { return line(errs[i]) < line(errs[j]) })
}
