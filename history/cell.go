package history

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// TopKeys is how many of a cell's heaviest keys it keeps; the others are
// its Rest. Twice the detector's default top: a key that climbs into the
// report's top has its past cells.
const TopKeys = 10

// maxShards bounds the stream shards a cell keeps (most records first).
const maxShards = 32

// heldKeys bounds the keys an open cell follows; past it the lightest
// half is let go to the rest. A key that leaves keeps its units in the
// cell's total, so Rest stays right; only its own figures are lost, and a
// key heavy enough to be among a cell's TopKeys is among its heldKeys
// unless the ranking churns more than heldKeys − TopKeys keys a cell.
const heldKeys = 64

// second is what one judged second adds to one class's cells.
type second struct {
	at        int64 // Unix second
	units     float64
	events    float64
	throttled float64
	distinct  uint64
	keys      []keyUnits
	shards    []shardRecords
}

type keyUnits struct {
	key   string
	units float64
}

type shardRecords struct {
	shard   string
	records float64
}

// acc is one open cell of one class: the sum of the seconds folded into
// it.
type acc struct {
	start     int64 // Unix second of the cell's start
	seconds   int   // seconds folded
	units     float64
	events    float64
	throttled float64
	distinct  uint64
	busiest   float64
	keys      map[string]*keyAcc
	shards    map[string]float64
	dirty     bool // folded into since last written
}

type keyAcc struct{ units, busiest float64 }

func newAcc(start int64) *acc {
	return &acc{start: start, keys: map[string]*keyAcc{}, shards: map[string]float64{}}
}

// fold adds one second.
func (a *acc) fold(s *second) {
	a.seconds++
	a.dirty = true
	a.units += s.units
	a.events += s.events
	a.throttled += s.throttled
	a.distinct = max(a.distinct, s.distinct)
	a.busiest = max(a.busiest, s.units)
	for _, k := range s.keys {
		if k.units <= 0 {
			continue
		}
		ka := a.keys[k.key]
		if ka == nil {
			ka = &keyAcc{}
			a.keys[k.key] = ka
		}
		ka.units += k.units
		ka.busiest = max(ka.busiest, k.units)
	}
	if len(a.keys) > heldKeys {
		a.prune(heldKeys / 2)
	}
	for _, sh := range s.shards {
		a.shards[sh.shard] += sh.records
	}
}

// prune keeps the keep heaviest keys.
func (a *acc) prune(keep int) {
	ks := a.rankedKeys()
	for _, k := range ks[min(keep, len(ks)):] {
		delete(a.keys, k.Key)
	}
}

// rankedKeys returns the keys heaviest first, then by name.
func (a *acc) rankedKeys() []KeyCell {
	out := make([]KeyCell, 0, len(a.keys))
	for k, v := range a.keys {
		out = append(out, KeyCell{Key: k, Units: v.units, BusiestSecond: v.busiest})
	}
	slices.SortFunc(out, func(x, y KeyCell) int {
		if c := cmp.Compare(y.Units, x.Units); c != 0 {
			return c
		}
		return cmp.Compare(x.Key, y.Key)
	})
	return out
}

// cell returns the open cell as the API shows it.
func (a *acc) cell() Cell {
	c := Cell{Start: time.Unix(a.start, 0).UTC(), Units: a.units, Events: uint64(a.events + 0.5),
		Throttled: uint64(a.throttled + 0.5), DistinctKeys: a.distinct, BusiestSecond: a.busiest}
	ks := a.rankedKeys()
	c.Keys = ks[:min(len(ks), TopKeys)]
	rest := a.units
	for i := range c.Keys {
		rest -= c.Keys[i].Units
		c.Keys[i].Share = share(c.Keys[i].Units, a.units)
	}
	rest = max(rest, 0)
	c.Rest = Rest{Units: rest, Share: share(rest, a.units)}
	c.Shards = shardCells(a.shards)
	return c
}

func share(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return part / whole
}

// shardCells ranks shards by records, most first, at most maxShards.
func shardCells(m map[string]float64) []ShardCell {
	if len(m) == 0 {
		return nil
	}
	var total float64
	out := make([]ShardCell, 0, len(m))
	for s, r := range m {
		total += r
		out = append(out, ShardCell{Shard: s, Records: uint64(r + 0.5)})
	}
	slices.SortFunc(out, func(x, y ShardCell) int {
		if c := cmp.Compare(y.Records, x.Records); c != 0 {
			return c
		}
		return cmp.Compare(x.Shard, y.Shard)
	})
	for i := range out {
		out[i].Share = share(m[out[i].Shard], total)
	}
	return out[:min(len(out), maxShards)]
}

// row is a cell as stored: one line of the cells table.
type row struct {
	table, index, class string
	step                int64 // seconds
	start               int64 // Unix seconds
	seconds             int
	units, busiest      float64
	events, throttled   uint64
	distinct            uint64
	keys, shards        string // JSON
}

// toRow encodes the open cell of a class. Keys are kept as
// [key, units, busiest second] triples and shards as [shard, records]
// pairs, in JSON, so that the sqlite3 shell reads them (json_each).
func (a *acc) toRow(table, index, class string, step int64) row {
	c := a.cell()
	keys := make([][3]any, len(c.Keys))
	for i, k := range c.Keys {
		keys[i] = [3]any{k.Key, round2(k.Units), round2(k.BusiestSecond)}
	}
	shards := make([][2]any, len(c.Shards))
	for i, s := range c.Shards {
		shards[i] = [2]any{s.Shard, s.Records}
	}
	kj, _ := json.Marshal(keys) // strings and numbers: cannot fail
	sj, _ := json.Marshal(shards)
	return row{table: table, index: index, class: class, step: step, start: a.start, seconds: a.seconds,
		units: a.units, busiest: a.busiest, events: c.Events, throttled: c.Throttled, distinct: a.distinct,
		keys: string(kj), shards: string(sj)}
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// accOf decodes a stored row into an open cell, to go on folding into it
// (a cell a previous run left open).
func accOf(r row) (*acc, error) {
	a := newAcc(r.start)
	a.seconds, a.units, a.busiest = r.seconds, r.units, r.busiest
	a.events, a.throttled, a.distinct = float64(r.events), float64(r.throttled), r.distinct
	var keys [][3]json.RawMessage
	if err := json.Unmarshal([]byte(r.keys), &keys); err != nil {
		return nil, fmt.Errorf("decode keys of cell %d: %w", r.start, err)
	}
	for _, k := range keys {
		var name string
		var units, busiest float64
		if err := unmarshalAll(k[:], &name, &units, &busiest); err != nil {
			return nil, fmt.Errorf("decode keys of cell %d: %w", r.start, err)
		}
		a.keys[name] = &keyAcc{units: units, busiest: busiest}
	}
	var shards [][2]json.RawMessage
	if err := json.Unmarshal([]byte(r.shards), &shards); err != nil {
		return nil, fmt.Errorf("decode shards of cell %d: %w", r.start, err)
	}
	for _, s := range shards {
		var name string
		var records float64
		if err := unmarshalAll(s[:], &name, &records); err != nil {
			return nil, fmt.Errorf("decode shards of cell %d: %w", r.start, err)
		}
		a.shards[name] = records
	}
	return a, nil
}

func unmarshalAll(raw []json.RawMessage, into ...any) error {
	for i := range into {
		if err := json.Unmarshal(raw[i], into[i]); err != nil {
			return err
		}
	}
	return nil
}

// cellOf decodes a stored row as the API shows it.
func cellOf(r row) (Cell, error) {
	a, err := accOf(r)
	if err != nil {
		return Cell{}, err
	}
	c := a.cell()
	c.Events, c.Throttled = r.events, r.throttled
	return c, nil
}
