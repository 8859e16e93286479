//go:build !race

package analyze

// raceEnabled is false without the race detector: the incidents' tests
// run every scenario.
const raceEnabled = false
