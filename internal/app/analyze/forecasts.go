package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/forecast"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// A forecast (detect.Foresee) needs each judged key's busiest second of
// every hour of the input. The store keeps a key's seconds for its last
// few only, so when a table's input spans at least forecast.MinSpan the
// judged keys (each class's top keys, as the report ranks them) are
// counted second by second once the inputs are read, with the keys
// counted again already (keyseconds.go, from the spill of the read's
// events: the inputs are not read again), and each hour's busiest second
// is read from the sums. It costs 4 bytes a key per second in which it has
// traffic; forecastKeySeconds bounds the whole: a key whose table's span
// would pass it is left without a trend, and the report's notes say so.

// forecastKeySeconds bounds the key-seconds counted for forecasts: 256 MiB
// at 4 bytes each (about 370 key-days).
const forecastKeySeconds = 64 << 20

// forecastKeys returns the judged keys of every table whose input spans at
// least forecast.MinSpan, within forecastKeySeconds, and how many were
// left out for the bound.
func forecastKeys(snap sketch.Snapshot, top int) (map[rankedKey]struct{}, int) {
	want := map[rankedKey]struct{}{}
	var cost int64
	left := 0
	for _, ts := range snap.Tables {
		span := ts.End.Sub(ts.Start)
		if span < forecast.MinSpan {
			continue
		}
		seconds := int64(span/time.Second) + 1
		for c := range ts.Classes {
			for _, k := range judged(ts.Classes[c].Top, top) {
				if cost+seconds > forecastKeySeconds {
					left++
					continue
				}
				cost += seconds
				want[rankedKey{ts.Table, ts.Index, k.Key, traffic.Class(c)}] = struct{}{}
			}
		}
	}
	return want, left
}

// judged returns the top keys of a class as the report ranks them
// (heaviest first, ties by key): the keys it judges and forecasts.
func judged(top []sketch.KeyStat, n int) []sketch.KeyStat {
	top = slices.Clone(top)
	slices.SortFunc(top, func(a, b sketch.KeyStat) int {
		return cmp.Or(cmp.Compare(b.Units, a.Units), cmp.Compare(a.Key, b.Key))
	})
	return top[:min(len(top), max(n, 0))]
}

// hourly returns a counted key's busiest second of each hour with
// traffic, oldest first; nil for a key not counted.
func (k *keyCounter) hourly(table, index string, c traffic.Class, key string) []forecast.Point {
	ks := k.keys[rankedKey{table, index, key, c}]
	if ks == nil || len(ks.blocks) == 0 {
		return nil
	}
	busiest := map[int64]uint32{}
	for n, b := range ks.blocks {
		for i, q := range b {
			if q == 0 {
				continue
			}
			h := floorDiv(n<<keyBlockBits+int64(i), 3600)
			busiest[h] = max(busiest[h], q)
		}
	}
	out := make([]forecast.Point, 0, len(busiest))
	for h, q := range busiest {
		out = append(out, forecast.Point{Time: time.Unix(h*3600, 0).UTC(), Units: float64(q) / quantum})
	}
	slices.SortFunc(out, func(a, b forecast.Point) int { return a.Time.Compare(b.Time) })
	return out
}

// forecastNote says that keys were left without a trend for the bound.
func forecastNote(left int) string {
	return fmt.Sprintf("%d judged keys got no trend: counting their seconds over the input's span would pass the forecasts' memory bound (%d MiB)", left, forecastKeySeconds*4>>20)
}
