// Package report is hotkeyd's one view model: the Report the detector makes
// from a window of traffic, and the small vocabulary its findings are told
// in (finding kinds, severities, recommendation kinds, what a key names).
//
// Every number an output shows — a key's share, its rate, the ranking of
// keys — is computed once, by the detector, into the Report; the metrics,
// the JSON API, the log lines and the text report of hotkeyd analyze only
// render it. The package depends on nothing of hotkeyd, so outputs can
// import it without the sketches behind it.
package report
