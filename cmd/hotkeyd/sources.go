package main

import (
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/ingest/streams"
	"github.com/hotkeyd/hotkeyd/internal/strictyaml"
)

// sourceTypes are the types of the sources list, in the order the errors
// name them. A new reader is one entry here: its package owns its Config
// (yaml keys, defaults, Validate) and its constructor.
var sourceTypes = []sourceType{
	// DynamoDB Streams with the SDK's default credential chain; one
	// checkpoint file per shard in checkpoint_dir, or, with lease_table,
	// only the shards this replica holds the lease of.
	source("dynamodb-streams", streams.DefaultConfig, func(c *streams.Config, d sourceDeps) (ingest.Source, error) {
		return streams.New(*c, d.log, d.reporter, d.reg)
	}),
	// A CloudTrail delivery folder; the files read are listed in
	// checkpoint_dir so that a restart does not count them again.
	source("cloudtrail", cloudtrail.DefaultConfig, newCloudTrail),
	// JSON-lines access logs, followed like tail -F, or stdin.
	source("jsonl", jsonl.DefaultConfig, func(c *jsonl.Config, d sourceDeps) (ingest.Source, error) {
		cfg := *c
		cfg.Reporter, cfg.Stdin = d.reporter, d.stdin
		return jsonl.New(cfg, d.log)
	}),
}

// sourceType is one type of the sources list: a fresh reader config with
// its defaults, and the constructor of the reader.
type sourceType struct {
	name   string
	config func() sourceSettings
	build  func(sourceSettings, sourceDeps) (ingest.Source, error)
}

// source makes the sourceType of a reader from its typed defaults and
// constructor.
func source[C any, P interface {
	*C
	sourceSettings
}](name string, defaults func() C, build func(*C, sourceDeps) (ingest.Source, error)) sourceType {
	return sourceType{
		name:   name,
		config: func() sourceSettings { c := defaults(); return P(&c) },
		build: func(s sourceSettings, d sourceDeps) (ingest.Source, error) {
			return build((*C)(s.(P)), d)
		},
	}
}

// sourceDeps are what the source constructors may need.
type sourceDeps struct {
	log      *zap.Logger
	reporter ingest.Reporter
	reg      prometheus.Registerer
	// tables are the key schemas of the config file (CloudTrail).
	tables map[string]ingest.KeySchema
	// stdin is the process's standard input, for a jsonl source on "-".
	stdin io.Reader
}

// lookupSourceType returns the type called name, or an error at the key
// type naming the types there are.
func lookupSourceType(name string) (sourceType, error) {
	names := make([]string, len(sourceTypes))
	for i, st := range sourceTypes {
		if st.name == name {
			return st, nil
		}
		names[i] = st.name
	}
	list := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	if name == "" {
		return sourceType{}, &strictyaml.Error{Path: "type", Msg: "required (" + list + ")"}
	}
	return sourceType{}, &strictyaml.Error{Path: "type", Msg: fmt.Sprintf("unknown source type %q (want %s)", name, list)}
}

// usedByAnotherType reports whether key is a key of some source type.
func usedByAnotherType(key string) bool {
	for _, st := range sourceTypes {
		if slices.Contains(strictyaml.Keys(reflect.TypeOf(st.config())), key) {
			return true
		}
	}
	return false
}

// newSource builds the reader of one sources entry.
func newSource(sc SourceConfig, d sourceDeps) (ingest.Source, error) {
	st, err := lookupSourceType(sc.Type)
	if err != nil {
		return nil, err
	}
	return st.build(sc.Settings, d)
}

// newCloudTrail builds a CloudTrail reader with the file's key schemas and
// registers its own metrics (files read, failed calls...), labelled by its
// paths so that several cloudtrail sources can coexist.
func newCloudTrail(c *cloudtrail.Config, d sourceDeps) (ingest.Source, error) {
	cfg := *c
	cfg.Tables = d.tables
	src, err := cloudtrail.New(cfg, d.log, d.reporter)
	if err != nil {
		return nil, err
	}
	if d.reg != nil {
		reg := prometheus.WrapRegistererWith(prometheus.Labels{"paths": strings.Join(cfg.Paths, ",")}, d.reg)
		if err := reg.Register(src); err != nil {
			return nil, fmt.Errorf("register cloudtrail metrics: %w", err)
		}
	}
	return src, nil
}
