package streamrecord

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// indexCases is a file of testdata/index-writes: a table's schema and
// records of it, each with the Events it must become (the table write,
// then its global indexes' writes in index order, "TABLE[/INDEX] PK [SK]
// UNITS") and whether its images told every index write.
type indexCases struct {
	Table  string            `json:"table"`
	Schema traffic.KeySchema `json:"schema"`
	Cases  []struct {
		Name     string          `json:"name"`
		Record   json.RawMessage `json:"record"`
		Complete bool            `json:"complete"`
		Events   []string        `json:"events"`
	} `json:"cases"`
}

func readIndexCases(t testing.TB) map[string]indexCases {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "index-writes", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no index cases: %v", err)
	}
	out := map[string]indexCases{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c indexCases
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = c
	}
	return out
}

func eventLines(evs []traffic.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		name := e.Table
		if e.Index != "" {
			name += "/" + e.Index
		}
		key := e.PK
		if e.SK != "" {
			key += " " + e.SK
		}
		out[i] = fmt.Sprintf("%s %s %g", name, key, e.Units)
	}
	return out
}

// TestIndexWrites holds the image → index write rules (indexes.go) on
// every case of testdata/index-writes, through both decoders that read
// images: the dump decoder (images kept as spans until the table is
// known) and the one-pass GetRecords decoder (images read as the table's
// indexes need, the other attributes sized or skipped). The SDK's decoder
// is held to the same Events by the Streams reader's
// TestFastDecodeMatchesSDK.
func TestIndexWrites(t *testing.T) {
	for file, cases := range readIndexCases(t) {
		schemas := NewSchemas(map[string]traffic.KeySchema{cases.Table: cases.Schema})
		for _, c := range cases.Cases {
			t.Run(file+"/"+c.Name, func(t *testing.T) {
				want := strings.Join(c.Events, "\n")
				// The dump decoder.
				gaps, _ := NewGaps("test", nil, nil)
				r := decodeDumpText(t, string(c.Record), DumpConfig{Schemas: schemas, Gaps: gaps})
				if len(r.rejects) > 0 {
					t.Fatalf("rejected: %v", r.msgs)
				}
				if got := strings.Join(eventLines(r.events), "\n"); got != want {
					t.Errorf("dump decoder:\n%s\nwant\n%s", got, want)
				}
				if got := len(r.stats.Incomplete) == 0; got != c.Complete {
					t.Errorf("dump decoder: complete %v, want %v", got, c.Complete)
				}
				if (gaps.Note() == "") != c.Complete {
					t.Errorf("gaps note %q with complete %v", gaps.Note(), c.Complete)
				}
				// The GetRecords decoder.
				out, err := DecodeGetRecords([]byte(`{"Records":[`+string(c.Record)+`]}`), schemas.Table(cases.Table))
				if err != nil {
					t.Fatalf("GetRecords decoder: %v", err)
				}
				streamGaps, _ := NewGaps("test", nil, nil)
				evs, complete := mapWithIndexes(t, &out.Records[0], cases.Table, schemas.Table(cases.Table), streamGaps)
				if got := strings.Join(eventLines(evs), "\n"); got != want {
					t.Errorf("GetRecords decoder:\n%s\nwant\n%s", got, want)
				}
				if complete != c.Complete {
					t.Errorf("GetRecords decoder: complete %v, want %v", complete, c.Complete)
				}
				if (streamGaps.Note() == "") != c.Complete {
					t.Errorf("GetRecords decoder: gaps note %q with complete %v", streamGaps.Note(), c.Complete)
				}
			})
		}
	}
}

// mapWithIndexes maps a record as the Streams reader does: the table
// write, then its index writes (AppendWrites), a gap counted in gaps.
func mapWithIndexes(t testing.TB, r *types.Record, table string, tb *Table, gaps *Gaps) ([]traffic.Event, bool) {
	t.Helper()
	var ev traffic.Event
	kind, _, err := Map(r, table, "", tb.Key, &ev)
	if kind != KindWrite {
		t.Fatalf("map: %v", err)
	}
	return AppendWrites(nil, r, tb, ev, gaps)
}

// FuzzImageSize holds the two ways an image's size is told to one answer:
// every attribute decoded and sized (size.go, as for the SDK's images),
// and every attribute sized as it is skipped (image.go, for an index that
// projects ALL). Either both read the image or neither does.
func FuzzImageSize(f *testing.F) {
	for _, cases := range readIndexCases(f) {
		for _, c := range cases.Cases {
			var r struct {
				Dynamodb struct {
					NewImage, OldImage json.RawMessage
				} `json:"dynamodb"`
			}
			if json.Unmarshal(c.Record, &r) == nil && r.Dynamodb.NewImage != nil {
				f.Add([]byte(r.Dynamodb.NewImage))
			}
		}
	}
	f.Add([]byte(`{"a":{"S":"\u00e9x"},"b":{"N":"-0.0012300"},"c":{"B":"AAEC"},"d":{"BS":["AA==","AQI="]},"e":{"NS":["1","22"]},"f":{"L":[]},"g":{"M":{}},"h":{"BOOL":false}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var names []string
		var probe map[string]json.RawMessage
		if json.Unmarshal(raw, &probe) == nil {
			for n := range probe {
				names = append(names, n)
			}
		}
		all := &Table{want: map[string]struct{}{}, sizeAll: true}
		for _, n := range names {
			all.want[n] = struct{}{}
		}
		none := &Table{want: map[string]struct{}{}, sizeAll: true}
		d := &decoder{}
		full, errFull := d.imageAt(raw, all)
		sized, errSized := d.imageAt(raw, none)
		if (errFull == nil) != (errSized == nil) {
			t.Fatalf("decoded: %v; sized: %v", errFull, errSized)
		}
		if errFull == nil && imageSize(full) != imageSize(sized) {
			t.Fatalf("size %d decoded, %d sized (%v)", imageSize(full), imageSize(sized), full)
		}
	})
}

// FuzzIndexWrites feeds records to the dump decoder of a table with
// indexes of every kind: no panic, every index write names an index of
// the table, a key and a unit at least, at most two per global index, and
// the GetRecords decoder agrees whenever it reads the record too.
func FuzzIndexWrites(f *testing.F) {
	all := readIndexCases(f)
	cases := all["orders.json"]
	for _, c := range cases.Cases {
		f.Add(string(c.Record))
	}
	schemas := NewSchemas(map[string]traffic.KeySchema{cases.Table: cases.Schema})
	tb := schemas.Table(cases.Table)
	f.Fuzz(func(t *testing.T, text string) {
		r := decodeDumpText(t, text, DumpConfig{Schemas: schemas, Table: cases.Table})
		base := 0
		perIndex := map[string]int{}
		for _, e := range r.events {
			if e.Index == "" {
				base++
				continue
			}
			perIndex[e.Index]++
			if e.Table != cases.Table || e.PK == "" || e.Units < 1 || cases.Schema.Indexes[e.Index].Local {
				t.Fatalf("index write %+v", e)
			}
		}
		for ix, n := range perIndex {
			if n > 2*base {
				t.Fatalf("%d writes of %s for %d table writes", n, ix, base)
			}
		}
		if r.stats.IndexWrites != uint64(len(r.events)-base) {
			t.Fatalf("stats count %d index writes of %d", r.stats.IndexWrites, len(r.events)-base)
		}
		if base != 1 || len(r.rejects) > 0 {
			return
		}
		out, err := DecodeGetRecords([]byte(`{"Records":[`+text+`]}`), tb)
		if err != nil || len(out.Records) != 1 {
			return
		}
		var ev traffic.Event
		if kind, _, _ := Map(&out.Records[0], cases.Table, "", tb.Key, &ev); kind != KindWrite {
			return
		}
		got, _ := IndexWrites(&out.Records[0], tb, &ev, nil)
		want := r.events[1:]
		if len(got) != len(want) {
			t.Fatalf("GetRecords decoder: %v; dump decoder: %v", eventLines(got), eventLines(want))
		}
		for i := range got {
			if got[i].Index != want[i].Index || got[i].PK != want[i].PK || got[i].SK != want[i].SK || got[i].Units != want[i].Units {
				t.Fatalf("GetRecords decoder: %v; dump decoder: %v", eventLines(got), eventLines(want))
			}
		}
	})
}
