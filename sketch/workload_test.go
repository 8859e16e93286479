package sketch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// zipf draws ranks 0..n-1 with P(rank i) ∝ 1/(i+1)^s, for any s > 0 (the
// standard library's Zipf needs s > 1). It inverts the CDF by binary search.
type zipf struct {
	cdf []float64
	rng *rand.Rand
}

func newZipf(n int, s float64, seed uint64) *zipf {
	cdf := make([]float64, n)
	var sum float64
	for i := range cdf {
		sum += 1 / math.Pow(float64(i+1), s)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return &zipf{cdf: cdf, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (z *zipf) next() int {
	u := z.rng.Float64()
	return sort.SearchFloat64s(z.cdf, u)
}

// keyName is a ~20-byte partition key for rank i.
func keyName(i int) string { return fmt.Sprintf("USER#%015d", i) }

// exactCounts is the reference: exact units per key.
type exactCounts map[string]float64

// top returns the n heaviest keys, ties by key.
func (e exactCounts) top(n int) []string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if e[keys[i]] != e[keys[j]] {
			return e[keys[i]] > e[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys
}

// precisionAt returns the fraction of the first n reported keys that are
// among the true n heaviest. Keys tied with the n-th heaviest count as
// heaviest, since no ranking can tell them apart.
func precisionAt(n int, reported []string, exact exactCounts) float64 {
	truth := exact.top(n)
	if len(truth) == 0 {
		return 1
	}
	cut := exact[truth[len(truth)-1]]
	if len(reported) > n {
		reported = reported[:n]
	}
	hit := 0
	for _, k := range reported {
		if exact[k] >= cut {
			hit++
		}
	}
	return float64(hit) / float64(min(n, len(truth)))
}
