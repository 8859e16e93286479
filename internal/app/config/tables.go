package config

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hotkeyd/hotkeyd/internal/strictyaml"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Table is an entry of the tables section: a table's key attributes, for
// sources whose records do not say which attribute is the partition key
// (CloudTrail), and its secondary indexes, for sources that count the
// writes of an index from item images (stream records, whose readers also
// learn the indexes with DescribeTable: an index declared here overrides
// the one of that name DescribeTable tells). An entry named TABLE/INDEX
// gives an index's key attributes alone (CloudTrail's Query of an index).
type Table struct {
	PartitionKey string           `yaml:"partition_key"`
	SortKey      string           `yaml:"sort_key"`
	Indexes      map[string]Index `yaml:"indexes"`
}

// Index is one secondary index of a table entry:
//
//	indexes:
//	  by-status: {partition_key: status, sort_key: created, projection: KEYS_ONLY}
//	  by-customer: {partition_key: customer, projection: [total, status]}
//	  by-date: {local: true, sort_key: created, projection: ALL}
type Index struct {
	// PartitionKey is the index's partition key; a local index's is its
	// table's (and may be left out).
	PartitionKey string `yaml:"partition_key"`
	SortKey      string `yaml:"sort_key"`
	// Local marks a local secondary index.
	Local bool `yaml:"local"`
	// Projection is ALL, KEYS_ONLY or the list of non-key attributes an
	// INCLUDE projection copies.
	Projection Projection `yaml:"projection"`
}

// Projection is an index's projection as the file writes it: ALL,
// KEYS_ONLY, or a list of attributes (INCLUDE).
type Projection traffic.Projection

// UnmarshalStrictYAML reads ALL, KEYS_ONLY or a list of attribute names.
func (p *Projection) UnmarshalStrictYAML(n *yaml.Node) error {
	const want = "ALL, KEYS_ONLY or a list of the attributes to INCLUDE"
	switch n.Kind {
	case yaml.ScalarNode:
		switch t := traffic.ProjectionType(n.Value); t {
		case traffic.ProjectAll, traffic.ProjectKeysOnly:
			*p = Projection{Type: t}
			return nil
		case traffic.ProjectInclude:
			return errors.New("INCLUDE: list the attributes to include instead ([total, status])")
		}
		return fmt.Errorf("unknown projection %q (want %s)", n.Value, want)
	case yaml.SequenceNode:
		var attrs []string
		if err := strictyaml.DecodeNode(n, &attrs); err != nil {
			return err
		}
		seen := make(map[string]bool, len(attrs))
		for i, a := range attrs {
			if a == "" {
				return &strictyaml.Error{Path: fmt.Sprintf("[%d]", i), Msg: "empty attribute name"}
			}
			if seen[a] {
				return &strictyaml.Error{Path: fmt.Sprintf("[%d]", i), Msg: fmt.Sprintf("attribute %q given twice", a)}
			}
			seen[a] = true
		}
		if len(attrs) == 0 {
			return fmt.Errorf("empty list: give the attributes to INCLUDE, or KEYS_ONLY")
		}
		*p = Projection{Type: traffic.ProjectInclude, Attributes: attrs}
		return nil
	}
	return fmt.Errorf("want %s", want)
}

// validateTables checks the tables section, naming the bad key as a path
// (tables.orders.indexes.by-status.projection).
func validateTables(tables map[string]Table) error {
	names := make([]string, 0, len(tables))
	for name := range tables {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		if name == "" {
			errs = append(errs, errors.New("tables: empty table name"))
			continue
		}
		table, index, isIndex := strings.Cut(name, "/")
		for _, n := range []string{table, index} {
			if n == index && !isIndex {
				continue
			}
			if err := traffic.CheckName("table or index", n); err != nil {
				errs = append(errs, fmt.Errorf("tables.%s: %s", name, err.Detail))
				break
			}
		}
		t := tables[name]
		if t.PartitionKey == "" {
			errs = append(errs, fmt.Errorf("tables.%s.partition_key: required", name))
		}
		if isIndex && len(t.Indexes) > 0 {
			errs = append(errs, fmt.Errorf("tables.%s.indexes: only a table has indexes (%s names the index %s of table %s)", name, name, index, table))
		}
		errs = append(errs, validateIndexes(name, t), indexBounds(name, t))
		// An index given both ways must be given alike.
		if isIndex {
			if ix, ok := tables[table].Indexes[index]; ok && (ix.partitionKey(tables[table]) != t.PartitionKey || ix.SortKey != t.SortKey) {
				errs = append(errs, fmt.Errorf("tables.%s: the key differs from tables.%s.indexes.%s's", name, table, index))
			}
		}
	}
	return errors.Join(errs...)
}

func validateIndexes(table string, t Table) error {
	names := make([]string, 0, len(t.Indexes))
	for name := range t.Indexes {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		at := fmt.Sprintf("tables.%s.indexes.%s", table, name)
		if err := traffic.CheckName("index", name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s", at, err.Detail))
		}
		ix := t.Indexes[name]
		switch {
		case ix.Local && ix.PartitionKey != "" && ix.PartitionKey != t.PartitionKey:
			errs = append(errs, fmt.Errorf("%s.partition_key: a local index's partition key is its table's, %q (leave it out)", at, t.PartitionKey))
		case ix.Local && ix.SortKey == "":
			errs = append(errs, fmt.Errorf("%s.sort_key: required for a local index", at))
		case !ix.Local && ix.PartitionKey == "":
			errs = append(errs, fmt.Errorf("%s.partition_key: required (or local: true for a local index)", at))
		}
		if ix.Projection.Type == "" {
			errs = append(errs, fmt.Errorf("%s.projection: required (ALL, KEYS_ONLY or a list of the attributes to INCLUDE)", at))
		}
	}
	return errors.Join(errs...)
}

// indexBounds checks a table's indexes against DynamoDB's bounds
// (traffic.MaxGlobalIndexes, MaxLocalIndexes, MaxProjectedAttributes: its
// service quotas,
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-secondary-indexes).
func indexBounds(table string, t Table) error {
	var global, local, attrs int
	for _, ix := range t.Indexes {
		if ix.Local {
			local++
		} else {
			global++
		}
		if ix.Projection.Type == traffic.ProjectInclude {
			attrs += len(ix.Projection.Attributes)
		}
	}
	at := "tables." + table + ".indexes"
	var errs []error
	if global > traffic.MaxGlobalIndexes {
		errs = append(errs, fmt.Errorf("%s: %d global secondary indexes; DynamoDB allows %d a table (its default quota)", at, global, traffic.MaxGlobalIndexes))
	}
	if local > traffic.MaxLocalIndexes {
		errs = append(errs, fmt.Errorf("%s: %d local secondary indexes; DynamoDB allows %d a table", at, local, traffic.MaxLocalIndexes))
	}
	if attrs > traffic.MaxProjectedAttributes {
		errs = append(errs, fmt.Errorf("%s: the INCLUDE projections list %d attributes in all; DynamoDB allows %d across a table's indexes", at, attrs, traffic.MaxProjectedAttributes))
	}
	return errors.Join(errs...)
}

// partitionKey is the index's partition key: a local index's is its
// table's.
func (ix Index) partitionKey(t Table) string {
	if ix.Local {
		return t.PartitionKey
	}
	return ix.PartitionKey
}

// KeySchemas returns the tables section as the readers take it: each
// table's key schema with its indexes, and, for each index, a TABLE/INDEX
// key schema (CloudTrail reads an index's Query keys by it) unless the
// section gives one.
func (c *Config) KeySchemas() map[string]traffic.KeySchema {
	out := make(map[string]traffic.KeySchema, len(c.Tables))
	for name, t := range c.Tables {
		ks := traffic.KeySchema{PartitionKey: t.PartitionKey, SortKey: t.SortKey}
		for iname, ix := range t.Indexes {
			if ks.Indexes == nil {
				ks.Indexes = make(map[string]traffic.IndexSchema, len(t.Indexes))
			}
			ks.Indexes[iname] = traffic.IndexSchema{
				PartitionKey: ix.partitionKey(t), SortKey: ix.SortKey, Local: ix.Local,
				Projection: traffic.Projection{Type: ix.Projection.Type, Attributes: slices.Clone(ix.Projection.Attributes)},
			}
		}
		out[name] = ks
	}
	for name, t := range c.Tables {
		for iname, ix := range t.Indexes {
			key := name + "/" + iname
			if _, given := c.Tables[key]; !given {
				out[key] = traffic.KeySchema{PartitionKey: ix.partitionKey(t), SortKey: ix.SortKey}
			}
		}
	}
	return out
}

// DeclaredTables returns the tables and indexes the tables section
// declares, sorted: each entry's name (TABLE or TABLE/INDEX) and each
// index of a table as TABLE/INDEX. The daemon tracks them whatever their
// traffic, their places reserved out of max_tables
// (sketch.Store.Declare).
func (c *Config) DeclaredTables() []string {
	seen := make(map[string]bool, len(c.Tables))
	for name, t := range c.Tables {
		seen[name] = true
		for iname := range t.Indexes {
			seen[name+"/"+iname] = true
		}
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// checkDeclared refuses more declared tables and indexes than max_tables
// holds: each has a place reserved.
func (c *Config) checkDeclared() error {
	if n := len(c.DeclaredTables()); c.MaxTables >= 1 && n > c.MaxTables {
		return fmt.Errorf("tables: %d tables and indexes declared, each tracked always, more than max_tables (%d) holds", n, c.MaxTables)
	}
	return nil
}
