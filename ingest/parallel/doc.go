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
// second (see sketch.Store.Merge): that gives the counts of one reader
// when a part's events are no older than the events before it, which is
// how logs are written. A part merges only when it is so: its earliest
// second is later than the latest second before it, or the same second
// and the part never goes further back than Config.Reorder seconds behind
// its newest; and it has no event without a time (those count in the
// newest second their table saw before them). A part that is not is
// dropped and read again, straight into the result, as one reader would
// have read it (its rejected records are reported once). Inputs of the
// same hours read side by side are so read one after the other: exact,
// at the speed of one core.
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
