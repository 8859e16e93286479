// Package detect turns a sketch.Snapshot into a report.Report: which
// partition keys are hot, which are near a partition's throughput ceiling,
// which key designs are wrong (too few distinct keys, time-ordered keys),
// which stream shard is overloaded — the findings, the evidence — and, from
// them, one diagnosis per root cause with its severity (from the busiest
// second against the partition ceiling), its one fix for the shape of the
// traffic, and what that fix would do to the recorded traffic. It is where
// a key's share, its rates and the ranking of keys are computed, once, for
// every output.
//
// Evaluate is a pure function of a snapshot and Settings: no clock, no I/O,
// the same input always gives the same report, diagnoses and findings in a
// stable order. Live mode wraps it in a Tracker, which also judges the last
// few seconds (a key that turns hot is seen within seconds), adds
// hysteresis so that one noisy window does not alarm and a key near a
// threshold does not flap, and says which diagnoses each evaluation raised,
// changed and cleared.
package detect
