// Package detect turns a sketch.Snapshot into a report.Report: which
// partition keys are hot, which tables are near a partition's throughput
// ceiling, which key designs are wrong (too few distinct keys, time-ordered
// keys), which stream shard is overloaded, and, for each finding, the
// key-design change that fixes it. It is where a key's share, its rate and
// the ranking of keys are computed, once, for every output.
//
// Evaluate is a pure function of a snapshot and Settings: no clock, no I/O,
// the same input always gives the same report, findings in a stable order.
// Live mode wraps it in a Tracker, which adds hysteresis so a key near the
// threshold neither alarms on one noisy window nor flaps, and says which
// findings each evaluation raised and cleared.
package detect
