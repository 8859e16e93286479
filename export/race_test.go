//go:build race

package export

// raceEnabled is true under the race detector, whose instrumentation changes
// heap sizes.
const raceEnabled = true
