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
