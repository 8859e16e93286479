package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail"
	"github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/ingest/streams"
)

// sourceDeps are what the source constructors may need.
type sourceDeps struct {
	log      *zap.Logger
	reporter ingest.Reporter
	reg      prometheus.Registerer
	// tables are the key schemas of the config file (CloudTrail, stream
	// records).
	tables map[string]ingest.KeySchema
	// stdin is the process's standard input, for a jsonl source on "-".
	stdin io.Reader
}

// newSource builds the reader of one sources entry. It is the one place the
// daemon learns a new source type: one case per type.
func newSource(sc SourceConfig, d sourceDeps) (ingest.Source, error) {
	switch sc.Type {
	case sourceJSONL:
		// A file whose first line is a DynamoDB stream record (Firehose's
		// files of Kinesis payloads, logged Lambda events) is read as such.
		records := streams.NewDumpDecoder(streams.DumpConfig{Schemas: d.tables, Source: jsonl.SourceName, Log: d.log, Reporter: d.reporter})
		return jsonl.New(jsonl.Config{
			Options: jsonl.Options{Fields: sc.Fields, Reporter: d.reporter, Records: records},
			Paths:   sc.Paths,
			Stdin:   d.stdin,
		}, d.log)
	case sourceStreams:
		// Reads the tables' DynamoDB Streams with the SDK's default
		// credential chain; one checkpoint file per shard in checkpoint_dir,
		// or, with lease_table, only the shards this replica holds the
		// lease of, checkpointed in the lease table.
		cfg := streams.DefaultConfig()
		cfg.Tables = sc.Tables
		cfg.StreamARNs = sc.StreamARNs
		cfg.Region = sc.Region
		cfg.Endpoint = sc.Endpoint
		if sc.Start != "" {
			cfg.Start = sc.Start
		}
		cfg.CheckpointDir = sc.CheckpointDir
		cfg.LeaseTable = sc.LeaseTable
		cfg.WorkerID = sc.WorkerID
		cfg.FailoverTime = sc.FailoverTime
		return streams.New(cfg, d.log, d.reporter, d.reg)
	case sourceCloudTrail:
		// Follows a delivery folder; the files read are listed in
		// checkpoint_dir so a restart does not count them again.
		src, err := cloudtrail.New(cloudtrail.Config{
			Paths:         sc.Paths,
			CheckpointDir: sc.CheckpointDir,
			Tables:        d.tables,
			MaxAge:        sc.MaxAge,
		}, d.log, d.reporter)
		if err != nil {
			return nil, err
		}
		if d.reg != nil {
			// Its own metrics (files read, failed calls...), labelled by
			// its paths so that several cloudtrail sources can coexist.
			reg := prometheus.WrapRegistererWith(prometheus.Labels{"paths": strings.Join(sc.Paths, ",")}, d.reg)
			if err := reg.Register(src); err != nil {
				return nil, fmt.Errorf("register cloudtrail metrics: %w", err)
			}
		}
		return src, nil
	}
	return nil, fmt.Errorf("unknown source type %q", sc.Type)
}

// newDemoSource builds the synthetic workload of hotkeyd demo.
func newDemoSource(d sourceDeps) (ingest.Source, error) {
	return demo.New(demo.Config{}), nil
}

// newEventsHandler returns the POST /api/v1/events handler (HTTP ingest)
// feeding sink, or nil when it is not enabled.
func newEventsHandler(enabled bool, sink ingest.Sink, d sourceDeps) http.Handler {
	if !enabled {
		return nil
	}
	return jsonl.NewHandler(sink, d.reporter, jsonl.HandlerConfig{}, d.log)
}
