package jsonl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/buger/jsonparser"
	"github.com/valyala/fastjson"

	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/internal/benchgen"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// benchLines returns lines of the benchmark file's shape.
func benchLines(b *testing.B) [][]byte {
	var buf bytes.Buffer
	if _, err := benchgen.Generate(&buf, 4096, 2); err != nil {
		b.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
}

// BenchmarkParseLine measures candidate scanners on one line into one
// Event, each doing the same work: find the seven members, copy the keys,
// map the operation, parse units and time.
func BenchmarkParseLine(b *testing.B) {
	lines := benchLines(b)
	run := func(b *testing.B, parse func([]byte, *traffic.Event) error) {
		var size int64
		for _, l := range lines {
			size += int64(len(l))
		}
		b.SetBytes(size / int64(len(lines)))
		b.ReportAllocs()
		var ev traffic.Event
		i := 0
		for b.Loop() {
			if err := parse(lines[i], &ev); err != nil {
				b.Fatal(err)
			}
			if i++; i == len(lines) {
				i = 0
			}
		}
	}
	b.Run("hotkeyd", func(b *testing.B) {
		p := jsonl.NewParser(jsonl.Fields{}, "jsonl", time.Now)
		run(b, p.Parse)
	})
	// Lines of a log that carries members outside the contract, as real
	// logs do: the parser ignores them (and counts them by name).
	b.Run("hotkeyd_extra_members", func(b *testing.B) {
		p := jsonl.NewParser(jsonl.Fields{}, "jsonl", time.Now)
		plain := lines
		defer func() { lines = plain }()
		lines = make([][]byte, len(plain))
		for i, l := range plain {
			lines[i] = append([]byte(`{"request_id":"4f1c2a9e-0b7d-4c51-9e55-`+strconv.Itoa(100000+i)+`","latency_ms":12.5,`), l[1:]...)
		}
		run(b, p.Parse)
	})
	b.Run("fastjson", func(b *testing.B) {
		var p fastjson.Parser
		run(b, func(line []byte, ev *traffic.Event) error {
			v, err := p.ParseBytes(line)
			if err != nil {
				return err
			}
			o, err := v.Object()
			if err != nil {
				return err
			}
			*ev = traffic.Event{Units: 1}
			var perr error
			o.Visit(func(k []byte, v *fastjson.Value) {
				switch string(k) {
				case "table":
					ev.Table = string(v.GetStringBytes())
				case "index":
					ev.Index = string(v.GetStringBytes())
				case "pk":
					ev.PK = string(v.GetStringBytes())
				case "sk":
					ev.SK = string(v.GetStringBytes())
				case "op":
					ev.Class = opClass(v.GetStringBytes())
				case "units":
					ev.Units, perr = v.Float64()
				case "ts":
					ev.Time, perr = time.Parse(time.RFC3339Nano, string(v.GetStringBytes()))
				}
			})
			return perr
		})
	})
	b.Run("jsonparser", func(b *testing.B) {
		paths := [][]string{{"table"}, {"index"}, {"pk"}, {"sk"}, {"op"}, {"units"}, {"ts"}}
		run(b, func(line []byte, ev *traffic.Event) error {
			*ev = traffic.Event{Units: 1}
			var perr error
			jsonparser.EachKey(line, func(idx int, v []byte, _ jsonparser.ValueType, err error) {
				if err != nil {
					perr = err
					return
				}
				switch idx {
				case 0:
					ev.Table = string(v)
				case 1:
					ev.Index = string(v)
				case 2:
					ev.PK = string(v)
				case 3:
					ev.SK = string(v)
				case 4:
					ev.Class = opClass(v)
				case 5:
					ev.Units, perr = strconv.ParseFloat(string(v), 64)
				case 6:
					ev.Time, perr = time.Parse(time.RFC3339Nano, string(v))
				}
			}, paths...)
			return perr
		})
	})
	b.Run("encoding_json", func(b *testing.B) {
		run(b, func(line []byte, ev *traffic.Event) error {
			var l struct {
				TS    string   `json:"ts"`
				Table string   `json:"table"`
				Index string   `json:"index"`
				PK    string   `json:"pk"`
				SK    string   `json:"sk"`
				Op    string   `json:"op"`
				Units *float64 `json:"units"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				return err
			}
			t, err := time.Parse(time.RFC3339Nano, l.TS)
			*ev = traffic.Event{Table: l.Table, Index: l.Index, PK: l.PK, SK: l.SK, Class: opClass([]byte(l.Op)), Units: 1, Time: t}
			if l.Units != nil {
				ev.Units = *l.Units
			}
			return err
		})
	})
}

func opClass(op []byte) traffic.Class {
	switch string(op) {
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "write":
		return traffic.Write
	}
	return traffic.Read
}

// BenchmarkReadAll measures the reader alone (lines to batches of Events,
// a sink that drops them) on in-memory input.
func BenchmarkReadAll(b *testing.B) {
	var buf bytes.Buffer
	if _, err := benchgen.Generate(&buf, 100_000, 3); err != nil {
		b.Fatal(err)
	}
	drop := traffic.SinkFunc(func(context.Context, []traffic.Event) error { return nil })
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonl.ReadAll(context.Background(), bytes.NewReader(buf.Bytes()), "bench", drop, jsonl.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*100_000/b.Elapsed().Seconds(), "events/s")
}
