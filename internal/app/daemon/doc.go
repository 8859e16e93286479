// Package daemon is the daemon's life, which hotkeyd run and hotkeyd demo
// wire from their flags: building the pipeline (sources → checked sink →
// counting sink → the window of sketches; the detector's tick → the live
// report; the HTTP server over both), running it as one oklog/run group of
// actors, reloading its configuration and draining it on shutdown.
//
// One concern a file:
//
//	daemon.go      Options, Daemon and New: every component built, nothing started
//	run.go         Run: the group's actors (signals, sources, HTTP) and the shutdown order
//	tick.go        the detector's tick: what to judge, when, and where the verdict goes
//	forecast.go    the forecasts' series: the history's hourly cells read into the tracker's cache by an actor of their own
//	generation.go  a generation: one set of sources with their registry and replica board
//	pipeline.go    the sources run one generation at a time, replaced and drained
//	switches.go    what a reload may replace, behind switches: the window, the sink, the gatherers
//	replicas.go    the judge across replicas that share a lease table
//	reload.go      the reload loop: what each key of the file restarts, and what it keeps
//	plan.go        a reload's plan: the file read and checked, its parts built, nothing changed
//	apply.go       a plan applied, the parts that cannot fail first
//	metrics.go     the daemon's own metrics (its configuration's loads)
//
// What a reload replaces is reached through a switch or an atomic pointer;
// the rest, with every counter, the registry and the HTTP server, lives as
// long as the process.
package daemon
