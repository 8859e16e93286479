// Package app is the floor of the application's wiring, right under the
// programs: internal/app/config (the config file), internal/app/analyze
// (hotkeyd analyze) and internal/app/daemon (the daemon's life: hotkeyd run
// and hotkeyd demo). Helpers that any floor may use stay beside it in
// internal/ (atomicfile, awsclient, awslog, logging, promutil, strictyaml,
// testenv).
// Its test holds the floors of every package and checks that every import
// points down (docs/architecture.md).
package app
