//go:build race

package analyze

// raceEnabled is true under the race detector, which slows the replay of
// the incidents' tests about fifteenfold: under it they run on one
// scenario, and `make test` runs them whole without it.
const raceEnabled = true
