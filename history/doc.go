// Package history remembers what the daemon judged after its window has
// moved on: cells of traffic per table, index and class at layered
// resolutions (finest first: 1-minute cells for 6 hours, 10-minute cells
// for 4 days, 1-hour cells for 28 days, Spanner Key Visualizer's layers),
// and incidents, one per diagnosis from the time it was raised to the time
// it cleared. Both live in one SQLite database on local disk
// (<--history.path>/history.db, through the pure-Go driver
// modernc.org/sqlite: docs/benchmarks.md says why), which a user can open
// with the sqlite3 shell.
//
// A cell holds, for its span: the units and (estimated) events of its
// class, the throttled calls, the distinct keys, the busiest second's
// units, the top keys with their units and busiest second, what the rest
// of the keys add up to, and the stream shards' shares. Cells are made of
// the seconds the detector judged (report.TableSecond, from
// detect.LastSeconds), not counted a second time: a second no evaluation
// saw is missing from its cell, as it is from the live page.
//
// The Recorder folds each evaluation into the open cells in memory, on
// the detector's tick; a writer goroutine (Store.Run) writes each closed
// minute, and the open 10-minute and 1-hour cells with it, in one
// transaction, so a hard kill loses at most the last minute. The database
// runs in WAL mode: `hotkeyd report` reads it while a daemon writes.
package history
