package main

// TEMPORARY: a hot_key-only evaluation used until the detect package's
// Evaluate is wired in; it is deleted then.

import (
	"fmt"
	"math"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/sketch"
)

type evalSettings struct {
	Threshold float64
	Top       int
}

func evaluate(snap sketch.Snapshot, s evalSettings) detect.Report {
	r := detect.Report{Start: snap.Start, End: snap.End, Tables: []detect.TableReport{}}
	for _, ts := range snap.Tables {
		tr := detect.TableReport{
			Table: ts.Table, Index: ts.Index, Events: ts.Events,
			ReadUnits: ts.Classes[ingest.Read].Units, WriteUnits: ts.Classes[ingest.Write].Units,
			DistinctPartitionKeys: ts.DistinctKeys, TopKeys: []detect.TopKey{}, Findings: []detect.Finding{},
		}
		r.Events += ts.Events
		secs := ts.End.Sub(ts.Start).Seconds()
		if secs < 1 {
			secs = 1
		}
		for c := range ts.Classes {
			cls := ingest.Class(c)
			for i, k := range ts.Classes[c].Top {
				if i < s.Top {
					tr.TopKeys = append(tr.TopKeys, detect.TopKey{Key: k.Key, Class: cls.String(), Units: k.Units, Share: k.Share})
				}
				if k.Share >= s.Threshold {
					n := int(math.Ceil(k.Share / s.Threshold * 2))
					tr.Findings = append(tr.Findings, detect.Finding{
						Kind: "hot_key", Key: k.Key, Class: cls.String(), Share: k.Share, UnitsPerSecond: k.Units / secs,
						Recommendation: &detect.Recommendation{Kind: "write_sharding", SuffixCount: n,
							Example: fmt.Sprintf("%s#0 .. %s#%d", k.Key, k.Key, n-1),
							Text:    fmt.Sprintf("Spread %s over %d keys with a random suffix.", k.Key, n)},
					})
				}
			}
		}
		r.Tables = append(r.Tables, tr)
	}
	return r
}
