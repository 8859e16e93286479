package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
)

// decodeFunc reads one whole input of a known format and hands its Events
// to sink. Bad records go to rep and are skipped; an error means the input
// could not be read on (a broken compressed stream, a read error).
type decodeFunc func(ctx context.Context, in analyzeInput, sink ingest.Sink, rep ingest.Reporter) error

// analyzeInput is one input of hotkeyd analyze, decompressed.
type analyzeInput struct {
	// Name is the file name as given ("-" for stdin), for messages.
	Name string
	// R is the decompressed content, buffered, positioned at its start.
	R *bufio.Reader
	// Schemas are the key schemas from the config and --key-schema.
	Schemas map[string]ingest.KeySchema
	// Fields are the JSON-lines field names (those of the config's first
	// jsonl source, or the contract's).
	Fields jsonl.Fields
	// State is shared by every input of one analysis.
	State *analyzeState
}

// analyzeState is what the inputs of one analysis share: one CloudTrail
// decoder, so that key schemas learnt from one file (CreateTable,
// UpdateTable events) serve the next and a missing schema is logged once,
// and the CloudTrail counts the report's notes are made from.
type analyzeState struct {
	CloudTrail *cloudtrail.Decoder
	// CloudTrailInputs counts the inputs read as CloudTrail.
	CloudTrailInputs int
	CloudTrailStats  cloudtrail.Stats
}

// sniffLen is how many bytes format detection looks at.
const sniffLen = 4096

// detectFormat picks the decoder for an input from its first bytes. It is
// the one place analyze learns a new format: add a case here.
func detectFormat(in analyzeInput) (format string, decode decodeFunc, err error) {
	head, _ := in.R.Peek(sniffLen) // a short input is fine; errors surface when decoding
	switch {
	case cloudtrail.Sniff(head):
		return "cloudtrail", decodeCloudTrail, nil
	default:
		return "jsonl", decodeJSONLines, nil
	}
}

// decodeJSONLines reads JSON lines (the access-log contract).
func decodeJSONLines(ctx context.Context, in analyzeInput, sink ingest.Sink, rep ingest.Reporter) error {
	_, err := jsonl.ReadAll(ctx, in.R, in.Name, sink, jsonl.Options{Fields: in.Fields, Reporter: rep})
	return err
}

// decodeCloudTrail reads CloudTrail log files: {"Records":[...]} objects,
// EventBridge envelopes or bare events. Tables whose key schema is not
// configured get their partition key learnt from the calls themselves.
func decodeCloudTrail(ctx context.Context, in analyzeInput, sink ingest.Sink, rep ingest.Reporter) error {
	st, err := in.State.CloudTrail.Decode(ctx, in.R, in.Name, sink)
	in.State.CloudTrailInputs++
	in.State.CloudTrailStats.Add(st)
	return err
}

// notes returns the report's notes on how the CloudTrail inputs were counted.
func (s *analyzeState) notes() []string {
	if s.CloudTrailInputs == 0 {
		return nil
	}
	st := s.CloudTrailStats
	notes := []string{"CloudTrail records no item size or consumed capacity: units from CloudTrail input are 1 per item read or written, not RCU/WCU."}
	if st.Throttled > 0 || st.Failed > 0 {
		notes = append(notes, fmt.Sprintf("CloudTrail: %d throttled and %d otherwise failed calls are not counted as traffic; throttled ones are ranked in throttled_keys.", st.Throttled, st.Failed))
	}
	if len(st.NoSchema) > 0 {
		notes = append(notes, fmt.Sprintf("CloudTrail: no key schema for %s, so keys were counted whole (all attributes); give one with --key-schema TABLE=PK[,SK] or the config's tables section.", strings.Join(st.NoSchema, ", ")))
	}
	return notes
}

// decompress returns r uncompressed when it starts with a gzip, zstd or xz
// magic number, and r itself otherwise. CloudTrail delivers .json.gz files;
// rotated access logs are often compressed too.
func decompress(r *bufio.Reader) (io.Reader, func(), error) {
	magic, _ := r.Peek(6)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, func() { zr.Close() }, nil
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		return zr, zr.Close, nil
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}):
		zr, err := xz.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("xz: %w", err)
		}
		return zr, func() {}, nil
	}
	return r, func() {}, nil
}
