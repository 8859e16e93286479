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

// renamedKeys is implemented by a reader's Config some of whose keys
// were renamed: it maps each former key to its key now.
type renamedKeys interface{ RenamedKeys() map[string]string }

// formerKeys are the former keys a file gave: a line for
// Config.Deprecated each, and each key's path as the file writes it by
// its path now, for the checks' errors to name.
type formerKeys struct {
	notes []string
	paths map[string]string
}

// renameFormerKeys returns the document's mapping n with the former keys
// of each sources entry under their keys now (RenamedKeys of the entry's
// type), and what it renamed. An entry that gives both a former key and
// its key now is an error at the former key, which is then left out.
func renameFormerKeys(n *yaml.Node) (*yaml.Node, formerKeys, error) {
	var former formerKeys
	list := mappingValue(n, "sources")
	if list == nil || list.Kind != yaml.SequenceNode {
		return n, former, nil
	}
	var errs []error
	out := *list
	out.Content = slices.Clone(list.Content)
	for i, entry := range list.Content {
		renamed := renamedOf(entry)
		if len(renamed) == 0 {
			continue
		}
		e := *entry
		e.Content = nil
		for k := 0; k+1 < len(entry.Content); k += 2 {
			key, val := entry.Content[k], entry.Content[k+1]
			now, ok := renamed[key.Value]
			if !ok {
				e.Content = append(e.Content, key, val)
				continue
			}
			path := fmt.Sprintf("sources[%d].%s", i, key.Value)
			if mappingValue(entry, now) != nil {
				errs = append(errs, &strictyaml.Error{Path: path, Msg: "the former name of " + now + "; set " + now + " only"})
				continue
			}
			renamedKey := *key
			renamedKey.Value = now
			e.Content = append(e.Content, &renamedKey, val)
			former.notes = append(former.notes, fmt.Sprintf("%s: read as %s, its name now: write that instead", path, now))
			if former.paths == nil {
				former.paths = map[string]string{}
			}
			former.paths[fmt.Sprintf("sources[%d].%s", i, now)] = path
		}
		out.Content[i] = &e
	}
	return replaceValue(n, "sources", &out), former, errors.Join(errs...)
}

// inFileTerms returns err, a check's error naming its key first, with the
// key as the file writes it when the file gave it under a former name.
func (f formerKeys) inFileTerms(err error) error {
	key, msg, ok := strings.Cut(err.Error(), ": ")
	if written, renamed := f.paths[key]; ok && renamed {
		return fmt.Errorf("%s: %s", written, msg)
	}
	return err
}

// renamedOf returns the renamed keys of a sources entry's type, nil for
// none (or no known type: decoding says so).
func renamedOf(entry *yaml.Node) map[string]string {
	typ := mappingValue(entry, "type")
	if typ == nil || typ.Kind != yaml.ScalarNode {
		return nil
	}
	for _, st := range sourceTypes {
		if st.name != typ.Value {
			continue
		}
		if r, ok := st.settings().(renamedKeys); ok {
			return r.RenamedKeys()
		}
	}
	return nil
}
