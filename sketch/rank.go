package sketch

import (
	"cmp"
	"slices"
	"strings"
)

// heaviest sorts xs by rank and keeps the first n, all when n is not
// positive.
func heaviest[T any](xs []T, n int, rank func(a, b T) int) []T {
	slices.SortFunc(xs, rank)
	if n > 0 && len(xs) > n {
		xs = xs[:n]
	}
	return xs
}

// compareKeyStats ranks the most units first, then the key.
func compareKeyStats(a, b KeyStat) int {
	if a.Units != b.Units {
		return cmp.Compare(b.Units, a.Units)
	}
	return strings.Compare(a.Key, b.Key)
}

// compareShardStats ranks the most records first, then the shard.
func compareShardStats(a, b ShardStat) int {
	if a.Records != b.Records {
		return cmp.Compare(b.Records, a.Records)
	}
	return strings.Compare(a.Shard, b.Shard)
}

// compareKeyCounts ranks the known count first, then the upper bound, then
// the name.
func compareKeyCounts(a, b KeyCount) int {
	switch {
	case a.Count != b.Count:
		if a.Count > b.Count {
			return -1
		}
		return 1
	case a.Max != b.Max:
		if a.Max > b.Max {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Key, b.Key)
}

// cutKeyCounts keeps the first n of keys (ranked by compareKeyCounts), and
// returns the bound of a key not kept: the larger of bound and the upper
// bound of any key left out.
func cutKeyCounts(keys []KeyCount, n int, bound uint64) ([]KeyCount, uint64) {
	if n < 0 || len(keys) <= n {
		return keys, bound
	}
	for _, k := range keys[n:] {
		bound = max(bound, k.Max)
	}
	return keys[:n], bound
}

// rankKeyCounts ranks keys (compareKeyCounts) and keeps the first n (all
// when n is not positive), with the bound of a key not kept (cutKeyCounts).
func rankKeyCounts(keys []KeyCount, n int, bound uint64) ([]KeyCount, uint64) {
	slices.SortFunc(keys, compareKeyCounts)
	if n <= 0 {
		return keys, bound
	}
	return cutKeyCounts(keys, n, bound)
}
