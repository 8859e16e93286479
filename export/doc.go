// Package export owns everything hotkeyd shows to the outside, each a
// rendering of the detector's report (package report), never of the
// sketches: the Prometheus metrics (a counting Sink on the ingest path, a
// Reporter for bad input, a Collector over the latest report), the live
// state the detector tick publishes, the JSON API, the log lines of the
// diagnoses the detector raised, changed and cleared (Announcer), the health
// and readiness endpoints, the web server (TLS and basic auth from an
// exporter-toolkit web config file), the text report of hotkeyd analyze,
// and the masking of partition keys for privacy.
//
// Every series that carries a key label comes from the latest window's top-K
// and is emitted as a const metric at scrape time, so a key that leaves the
// top-K disappears by itself and the number of series stays bounded whatever
// the traffic.
//
// Tables and indexes share the metrics' table label: an index entry's label
// is "table/index" (see TableLabel); DynamoDB names cannot contain "/".
package export
