package sketch

import (
	"cmp"
	"slices"
	"strings"
)

// heaviest sorts xs by rank (heavierFirst) and keeps the first n, all
// when n is not positive.
func heaviest[T any](xs []T, n int, rank func(a, b T) int) []T {
	slices.SortFunc(xs, rank)
	if n > 0 && len(xs) > n {
		xs = xs[:n]
	}
	return xs
}

// heavierFirst ranks two things of weights wa and wb and names na and nb:
// the heavier first, then by name.
func heavierFirst[W cmp.Ordered](wa, wb W, na, nb string) int {
	if wa != wb {
		return cmp.Compare(wb, wa)
	}
	return strings.Compare(na, nb)
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
