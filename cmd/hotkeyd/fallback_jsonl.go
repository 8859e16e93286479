package main

// TEMPORARY: a plain JSON-lines decoder used by analyze until the ingest/jsonl
// reader is wired in; it is deleted then.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
)

func decodeJSONLines(ctx context.Context, in analyzeInput, sink ingest.Sink, rep ingest.Reporter) error {
	const batchSize = 1024
	batch := make([]ingest.Event, 0, batchSize)
	line := 0
	for {
		b, err := in.R.ReadSlice('\n')
		if errors.Is(err, bufioErrBufferFull) {
			rep.Reject("jsonl", ingest.ReasonTooLong, fmt.Errorf("%s:%d: line too long", in.Name, line+1))
			for errors.Is(err, bufioErrBufferFull) {
				_, err = in.R.ReadSlice('\n')
			}
			line++
			continue
		}
		if len(b) > 0 {
			line++
			if e, reason, perr := parseLineFallback(b); perr != nil {
				if reason != "" {
					rep.Reject("jsonl", reason, fmt.Errorf("%s:%d: %w", in.Name, line, perr))
				}
			} else {
				batch = append(batch, e)
				if len(batch) == batchSize {
					if perr := sink.Put(ctx, batch); perr != nil {
						return perr
					}
					batch = make([]ingest.Event, 0, batchSize)
				}
			}
		}
		if err != nil {
			if len(batch) > 0 {
				if perr := sink.Put(ctx, batch); perr != nil {
					return perr
				}
			}
			if errors.Is(err, ioEOF) {
				return nil
			}
			return err
		}
	}
}

func parseLineFallback(b []byte) (ingest.Event, string, error) {
	if len(trimSpace(b)) == 0 {
		return ingest.Event{}, "", errors.New("empty")
	}
	var v struct {
		TS    json.RawMessage `json:"ts"`
		Table string          `json:"table"`
		Index string          `json:"index"`
		PK    string          `json:"pk"`
		SK    string          `json:"sk"`
		Op    string          `json:"op"`
		Units *float64        `json:"units"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return ingest.Event{}, ingest.ReasonBadJSON, err
	}
	if v.Table == "" {
		return ingest.Event{}, ingest.ReasonMissingTable, errors.New("missing table")
	}
	if v.PK == "" {
		return ingest.Event{}, ingest.ReasonMissingPK, errors.New("missing pk")
	}
	e := ingest.Event{Table: v.Table, Index: v.Index, PK: v.PK, SK: v.SK, Units: 1, Source: "jsonl", Time: time.Now()}
	if v.Units != nil {
		if *v.Units < 0 || math.IsInf(*v.Units, 0) {
			return ingest.Event{}, ingest.ReasonBadUnits, errors.New("bad units")
		}
		e.Units = *v.Units
	}
	switch v.Op {
	case "GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems", "read", "":
		e.Class = ingest.Read
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "write":
		e.Class = ingest.Write
	default:
		return ingest.Event{}, ingest.ReasonBadOp, fmt.Errorf("op %q", v.Op)
	}
	if len(v.TS) > 0 {
		var s string
		var ms float64
		if json.Unmarshal(v.TS, &s) == nil {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return ingest.Event{}, ingest.ReasonBadTime, err
			}
			e.Time = t
		} else if json.Unmarshal(v.TS, &ms) == nil {
			e.Time = time.UnixMilli(int64(ms)).UTC()
		} else {
			return ingest.Event{}, ingest.ReasonBadTime, errors.New("bad ts")
		}
	}
	return e, "", nil
}

var (
	bufioErrBufferFull = bufio.ErrBufferFull
	ioEOF              = io.EOF
)

func trimSpace(b []byte) []byte { return bytes.TrimSpace(b) }
