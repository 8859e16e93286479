package ingest

import "slices"

// Stats are the counts every decoder of whole inputs keeps (the CloudTrail
// decoder, the stream-record dump decoder): each embeds them beside the
// counts of its own format, so that one Add and one list of tables
// without a key schema serve them all.
type Stats struct {
	// Records counts the records read, whatever became of them.
	Records uint64 `json:"records"`
	// Events counts the Events handed on as traffic.
	Events uint64 `json:"events"`
	// Rejected counts the records, and the inputs, that could not be used;
	// each was reported to the Reporter with its reason.
	Rejected uint64 `json:"rejected"`
	// NoSchema lists, sorted, the tables (and "TABLE/INDEX" indexes) whose
	// keys of several attributes were counted whole for want of a key
	// schema: reports should suggest adding one.
	NoSchema []string `json:"no_schema,omitempty"`
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.Records += o.Records
	s.Events += o.Events
	s.Rejected += o.Rejected
	for _, n := range o.NoSchema {
		s.AddNoSchema(n)
	}
}

// AddNoSchema lists table among those without a key schema, once.
func (s *Stats) AddNoSchema(table string) {
	if i, found := slices.BinarySearch(s.NoSchema, table); !found {
		s.NoSchema = slices.Insert(s.NoSchema, i, table)
	}
}
