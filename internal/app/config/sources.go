package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/ingest/kinesis"
	"github.com/hotkeyd/hotkeyd/ingest/streams"
	"github.com/hotkeyd/hotkeyd/internal/strictyaml"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// sourceTypes are the types of the sources list, in the order errors name
// them, each with a fresh reader config holding its defaults. A new reader
// is one entry here; its package owns the rest (SourceSettings).
var sourceTypes = []struct {
	name     string
	settings func() SourceSettings
}{
	{"dynamodb-streams", func() SourceSettings { c := streams.DefaultConfig(); return &c }},
	{"kinesis", func() SourceSettings { c := kinesis.DefaultConfig(); return &c }},
	{"cloudtrail", func() SourceSettings { c := cloudtrail.DefaultConfig(); return &c }},
	{"jsonl", func() SourceSettings { c := jsonl.DefaultConfig(); return &c }},
}

// SourceSettings is a reader's Config as its package declares it: its yaml
// keys, its defaults (its DefaultConfig), its checks and its constructor.
type SourceSettings interface {
	// Validate returns an error naming the first bad key (paths[1]: ...).
	Validate() error
	// NewSource builds the reader; it starts nothing.
	NewSource(ingest.Env) (traffic.Source, error)
}

// Source is one entry of the sources list: its type, and the settings of
// that type's reader, decoded strictly from the entry's other keys.
type Source struct {
	// Type is the name of one of the source types.
	Type string
	// Settings points to the reader's Config: its defaults, then what the
	// entry says.
	Settings SourceSettings
}

// UnmarshalStrictYAML decodes type first, then the other keys into that
// type's reader config. A key of another type is "not used by" this one.
func (s *Source) UnmarshalStrictYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return strictyaml.DecodeNode(n, &struct{}{}) // says a mapping was wanted
	}
	rest := *n
	rest.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "type" {
			if err := strictyaml.DecodeNode(n.Content[i+1], &s.Type); err != nil {
				return strictyaml.At("type", err)
			}
			continue
		}
		rest.Content = append(rest.Content, n.Content[i], n.Content[i+1])
	}
	names := make([]string, len(sourceTypes))
	for i, st := range sourceTypes {
		if names[i] = st.name; st.name == s.Type {
			s.Settings = st.settings()
		}
	}
	list := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	switch {
	case s.Type == "":
		return &strictyaml.Error{Path: "type", Msg: "required (" + list + ")"}
	case s.Settings == nil:
		// Its other keys cannot be checked without a type.
		return &strictyaml.Error{Path: "type", Msg: fmt.Sprintf("unknown source type %q (want %s)", s.Type, list)}
	}
	errs := strictyaml.List(strictyaml.DecodeNode(&rest, s.Settings))
	for i, err := range errs {
		var e *strictyaml.Error
		if errors.As(err, &e) && e.Unknown && !strings.ContainsAny(e.Path, ".[") && usedByAnotherType(e.Path) {
			errs[i] = &strictyaml.Error{Path: e.Path, Msg: "not used by type " + s.Type}
		}
	}
	return errors.Join(errs...)
}

// usedByAnotherType reports whether key is a key of some source type.
func usedByAnotherType(key string) bool {
	return slices.ContainsFunc(sourceTypes, func(st struct {
		name     string
		settings func() SourceSettings
	}) bool {
		return slices.Contains(strictyaml.Keys(reflect.TypeOf(st.settings())), key)
	})
}

// JSONLFields returns the field names of the first jsonl source: analyze
// reads the same logs the daemon follows.
func (c Config) JSONLFields() jsonl.Fields {
	for _, s := range c.Sources {
		if jc, ok := s.Settings.(*jsonl.Config); ok {
			return jc.Fields
		}
	}
	return jsonl.Fields{}
}
