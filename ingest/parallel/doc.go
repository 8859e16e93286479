// Package parallel reads whole inputs on every core (hotkeyd analyze): it
// cuts them into parts, reads the parts side by side, each into a sink of
// its own, and merges the sinks in input order into one, so that the
// result is the one sink reading the inputs one after the other would
// hold.
//
// # Parts
//
// A plain regular file whose format has one record per line
// (formats.PartDecoder) is cut into byte ranges that start at a line's
// start, one per worker or fewer (Config.MinPart bounds how small a part
// gets); each is read from the file with positioned reads into the
// decoder's own line buffer. A compressed file, or one of a format that is
// one document, is one part, read whole by one worker. Standard input,
// pipes, and formats whose reading of an input depends on the inputs
// before it (CloudTrail learns key schemas from control-plane events for
// the files after) are read in order, straight into the result, once
// every part before them has been merged; the other parts go on beside
// them.
//
// # Exact
//
// Merging adds what the parts counted, and per-second counts second by
// second (see sketch.Store.Merge): a table's seconds are kept whole over
// whole files, so parts merge exactly whatever the order of their lines,
// and every part merges, at once, on every core: four hosts' logs of the
// same hour, the `cat` of them or a shuffled file are read side by side
// like a log in time order. What a sink keeps for the last few seconds
// only (a key's per-second ring) merges exactly when the inputs run in
// time, as logs are written: Read says whether they did (Outcome.InOrder;
// Config.Reorder is how far back an event may run), and hotkeyd analyze
// counts the busiest seconds of the keys it reports again when they did
// not.
//
// A read error (a corrupt compressed file) ends its input where one
// reader would have stopped: the parts after it in that input are not
// merged. Every error is handed to Config.Failed in input order.
//
// # Memory
//
// Each running part counts into a sink of its own, and a finished part is
// merged as soon as every part before it is, then dropped: the part read
// first counts straight into the result. Workers start a part only while
// fewer than 2×Workers parts are unmerged, so memory is bounded by the
// workers' sinks, not by the number of inputs; decoders read into buffers
// of their own (a line's maximum length for line formats, 1 MiB for
// compressed inputs), and with formats.Config.Recycle they fill one batch
// over and over.
package parallel
