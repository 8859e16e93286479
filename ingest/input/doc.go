// Package input opens what hotkeyd's readers read, for every reader and
// for hotkeyd analyze alike: Open and NewInput recognise compressed
// content by its magic number and decompress it (gzip, zstd, xz; Decompress
// for a stream, DecompressAs for an HTTP Content-Encoding, DecompressHead
// for the first bytes a format sniffer looks at), so that no reader knows
// about compression.
//
// It also holds what reading a whole input takes besides decoding it: a
// CountingSink and StartProgress for the progress line of a long read, and
// a TextReporter that tells a person at a terminal what was skipped and
// why. Which decoder reads an input is package formats' choice; following
// files as they grow is package follow's job.
package input
