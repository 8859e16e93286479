package analyze

import (
	"math"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Units that add up the same in any order. Floating-point addition is not
// associative: 0.1 + 0.2 + 0.3 and 0.1 + (0.2 + 0.3) differ in their last
// bit, so the totals of parts of the inputs read side by side, merged,
// would differ by the number of parts (a class's 102555.30299999999 units
// on one core, 102555.30299999997 on three). So every event's units are
// put on a grid of 1/2^16 unit before they are counted (nearest, a
// change of at most 7.6e-6 unit; the whole and half capacity units
// DynamoDB charges, docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html,
// and the sketch's quarter units are on it already): sums of multiples of 1/2^16
// below 2^37 (137 billion units) are exact in a float64, whatever their
// order, and so is every total and busiest second analyze reports.

// unitGrid is the grid's step's inverse.
const unitGrid = 1 << 16

// gridUnits puts the units of the batch's events on the grid, in place.
func gridUnits(batch []traffic.Event) {
	for i := range batch {
		u := batch[i].Units
		if g := math.Floor(u*unitGrid+0.5) / unitGrid; g != u && g >= 0 && !math.IsInf(g, 0) {
			batch[i].Units = g
		}
	}
}
