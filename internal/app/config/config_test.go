package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/ingest/streams"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

func TestLoadConfigInvalid(t *testing.T) {
	for file, want := range map[string]string{
		"invalid-unknown-key.yml":                    "lisen: unknown key (did you mean listen?)",
		"invalid-unknown-source-key.yml":             "sources[0].path: unknown key (did you mean paths?)",
		"invalid-window-syntax.yml":                  `window: "10 minutes" is not a duration such as 90s, 5m or 1h30m`,
		"invalid-window-zero.yml":                    "window: must be positive, got 0s",
		"invalid-window-short.yml":                   "window: must be at least 12ms (12 slots of 1ms), got 1ns",
		"invalid-detector-top.yml":                   "detector.top: must be 0 to 384 (the keys a table counts exactly per class), got 100000000",
		"invalid-threshold.yml":                      "threshold: must be above 0 and below 1, got 1.5",
		"invalid-threshold-zero.yml":                 "threshold: must be above 0 and below 1, got 0",
		"invalid-listen.yml":                         `listen: want host:port, got "9529"`,
		"invalid-keys.yml":                           `keys: must be plain, hash or redact, got "sha256"`,
		"invalid-secret-without-hash.yml":            "key_hash_secret: only used with keys: hash",
		"invalid-hash-no-secret.yml":                 "key_hash_secret: required with keys: hash (or key_hash_secret_file)",
		"invalid-secret-both.yml":                    "key_hash_secret_file: set key_hash_secret or key_hash_secret_file, not both",
		"invalid-secret-file-plain.yml":              "key_hash_secret_file: only used with keys: hash",
		"invalid-table-no-pk.yml":                    "tables.Music.partition_key: required",
		"invalid-index-projection.yml":               `tables.orders.indexes.by-status.projection: unknown projection "KEYS" (want ALL, KEYS_ONLY or a list of the attributes to INCLUDE)`,
		"invalid-index-include.yml":                  "tables.orders.indexes.by-status.projection[1]: attribute \"total\" given twice",
		"invalid-index-no-projection.yml":            "tables.orders.indexes.by-status.projection: required (ALL, KEYS_ONLY or a list of the attributes to INCLUDE)",
		"invalid-index-no-pk.yml":                    "tables.orders.indexes.by-status.partition_key: required (or local: true for a local index)",
		"invalid-index-local-pk.yml":                 `tables.orders.indexes.by-date.partition_key: a local index's partition key is its table's, "order_id" (leave it out)`,
		"invalid-index-local-sk.yml":                 "tables.orders.indexes.by-date.sort_key: required for a local index",
		"invalid-index-name.yml":                     "tables.orders.indexes.by status: index name holds a character other than A-Z, a-z, 0-9, '_', '-' and '.'",
		"invalid-index-key.yml":                      "tables.orders.indexes.by-status.partiton_key: unknown key (did you mean partition_key?)",
		"invalid-index-of-index.yml":                 "tables.orders/by-status.indexes: only a table has indexes (orders/by-status names the index by-status of table orders)",
		"invalid-index-twice.yml":                    "tables.orders/by-status: the key differs from tables.orders.indexes.by-status's",
		"invalid-table-name.yml":                     "tables.Music/by artist: table or index name holds a character other than A-Z, a-z, 0-9, '_', '-' and '.'",
		"invalid-max-tables.yml":                     "max_tables: must be 1 to 100000, got 0",
		"invalid-max-future.yml":                     "max_future: must be positive, got 0s",
		"invalid-max-event-age.yml":                  "max_event_age: must be positive, got -1h0m0s",
		"invalid-history-size.yml":                   `history.retention.size: "lots" is not a size such as 512MiB or 2GiB (KiB, MiB, GiB, TiB)`,
		"invalid-history-size-zero.yml":              "history.retention.size: must be positive, got 0",
		"invalid-history-key.yml":                    "history.pth: unknown key (did you mean path?)",
		"invalid-history-not-mapping.yml":            `history: want a mapping (key: value), got "data/"`,
		"invalid-source-no-type.yml":                 "sources[0].type: required (dynamodb-streams, kinesis, cloudtrail or jsonl)",
		"invalid-source-type.yml":                    `sources[0].type: unknown source type "kafka" (want dynamodb-streams, kinesis, cloudtrail or jsonl)`,
		"invalid-source-no-paths.yml":                "sources[1].paths: at least one path is required",
		"invalid-source-empty-path.yml":              "sources[0].paths[1]: empty path",
		"invalid-cloudtrail-stdin.yml":               "sources[0].paths[0]: stdin is not supported by this source",
		"invalid-jsonl-field.yml":                    "sources[0].fields.user: unknown key (known keys: index, op, pk, sk, table, throttle_reason, throttle_resource, throttled, ts, units)",
		"invalid-streams-no-tables.yml":              "sources[0].tables: one of tables or stream_arns is required",
		"invalid-streams-start.yml":                  `sources[0].start: must be latest or trim_horizon, got "earliest"`,
		"invalid-streams-endpoint.yml":               `sources[0].endpoint: not an absolute URL: "localhost:8000"`,
		"invalid-streams-arn.yml":                    `sources[0].stream_arns[0]: not a stream ARN: "orders"`,
		"invalid-streams-paths.yml":                  "sources[0].paths: not used by type dynamodb-streams",
		"invalid-streams-lease-checkpoint.yml":       "sources[0].checkpoint_dir: not used with lease_table, which keeps the checkpoints",
		"invalid-streams-worker-id.yml":              "sources[0].worker_id: only used with lease_table",
		"invalid-streams-failover-without-lease.yml": "sources[0].failover_time: only used with lease_table",
		"invalid-streams-lease-table.yml":            `sources[0].lease_table: "hotkeyd leases" is not a DynamoDB table name (3 to 255 of a-z, A-Z, 0-9, '_', '-', '.')`,
		"invalid-streams-failover.yml":               "sources[0].failover_time: 500ms is below the minimum 1s",
		"invalid-streams-lease-twice.yml":            `sources[1].lease_table: "hotkeyd-leases" is used by sources[0] already; list every table in one source`,
		"invalid-jsonl-lease.yml":                    "sources[0].lease_table: not used by type jsonl",
		"invalid-cloudtrail-max-age.yml":             "sources[0].max_age: must not be negative, got -1h0m0s",
		"invalid-jsonl-max-age.yml":                  "sources[0].max_age: not used by type jsonl",
		"invalid-jsonl-region.yml":                   "sources[0].region: not used by type jsonl",
		"invalid-detector-threshold.yml":             "detector.threshold: set threshold at the top level",
		"invalid-detector-clear.yml":                 "detector.clear_threshold: 0.3 is above threshold 0.2",
		"invalid-detector-key.yml":                   "detector.hold_for: unknown key (did you mean hold?)",
		"invalid-detector-hold.yml":                  "detector.hold: -1s must not be negative",
		"invalid-detector-hold-evaluations.yml":      `detector.hold_evaluations: "0" is not a whole number of at least 1 (and it is now hold, a span of event time such as 1s)`,
		"invalid-detector-hold-twice.yml":            "detector.hold_evaluations: the former form of hold; set hold only",
		// describe_interval is the former name of list_interval: both at
		// once is an error, and a check of the one given names it.
		"invalid-streams-describe-interval-twice.yml": "sources[0].describe_interval: the former name of list_interval; set list_interval only",
		"invalid-streams-describe-interval.yml":       "sources[0].describe_interval: must be positive, got -1m0s",
		"invalid-kinesis-describe-interval.yml":       "sources[0].describe_interval: unknown key (did you mean describe_tables?)",
		"invalid-kinesis-list-interval.yml":           "sources[0].list_interval: must be positive, got -30s",
		"invalid-detector-warn.yml":                   "detector.warn_fraction: 0.9 is above limit_fraction 0.8",
		"invalid-two-documents.yml":                   "more than one YAML document",
		"invalid-sources-not-list.yml":                "sources: want a list, got a mapping",
		"invalid-threshold-typo.yml":                  "threshhold: unknown key (did you mean threshold?)",
		"invalid-window-word.yml":                     `window: "sixty" is not a duration such as 90s, 5m or 1h30m`,
		"invalid-threshold-word.yml":                  `threshold: "high" is not a number`,
		"invalid-source-not-mapping.yml":              "sources[0]: want a mapping (key: value), got \"jsonl\"",
		"invalid-cloudtrail-poll.yml":                 "sources[0].poll_interval: must be positive, got -5s",
		"invalid-streams-backoff.yml":                 `sources[0].max_backoff: "lots" is not a duration such as 90s, 5m or 1h30m`,
		"invalid-streams-poll.yml":                    "sources[0].idle_poll_interval: must be positive, got -1s",
		"invalid-jsonl-poll.yml":                      "sources[0].poll_interval: must be positive, got -1s",
		"invalid-source-key-twice.yml":                "sources[0].paths: given twice (lines 3 and 4)",
		"invalid-table-twice.yml":                     "tables.orders: given twice (lines 2 and 8)",
		"invalid-index-many.yml": `tables.orders.indexes: 21 global secondary indexes; DynamoDB allows 20 a table (its default quota)
tables.orders.indexes: 6 local secondary indexes; DynamoDB allows 5 a table`,
		"invalid-index-attributes.yml":         "tables.orders.indexes: the INCLUDE projections list 101 attributes in all; DynamoDB allows 100 across a table's indexes",
		"invalid-tables-past-max.yml":          "tables: 3 tables and indexes declared, each tracked always, more than max_tables (2) holds",
		"invalid-index-name-twice.yml":         "tables.orders.indexes.by-status: given twice (lines 5 and 6)",
		"invalid-kinesis-arn.yml":              `sources[0].stream_arns[0]: not a Kinesis stream ARN (arn:aws:kinesis:REGION:ACCOUNT:stream/NAME): "arn:aws:dynamodb:us-east-1:111122223333:table/orders/stream/2026-01-01T00:00:00.000"`,
		"invalid-kinesis-no-streams.yml":       "sources[0].stream_arns: one of stream_arns or streams is required",
		"invalid-kinesis-lease-checkpoint.yml": "sources[0].checkpoint_dir: not used with lease_table, which keeps the checkpoints",
		"invalid-kinesis-paths.yml":            "sources[0].paths: not used by type kinesis",
		"invalid-cloudtrail-s3-paths.yml":      "sources[0].paths: not used with s3 (one cloudtrail source reads a folder or a bucket)",
		"invalid-cloudtrail-s3-bucket.yml":     `sources[0].s3.bucket: "s3://trail-bucket/AWSLogs/" is a bucket name, not a path or URL (put the folder in prefix)`,
		"invalid-cloudtrail-s3-key.yml":        "sources[0].s3.prefx: unknown key (did you mean prefix?)",
		// Files of several mistakes: every one, in the file's order.
		"invalid-many.yml": `listen: want host:port, got "9529"
windw: unknown key (did you mean window?)
threshold: must be above 0 and below 1, got 1.5
keys: must be plain, hash or redact, got "sha256"
sources[0].paths: at least one path is required
sources[0].poll_interval: must be positive, got -1s
sources[1].type: unknown source type "kafka" (want dynamodb-streams, kinesis, cloudtrail or jsonl)
sources[2].tables[1]: empty table name
sources[2].start: must be latest or trim_horizon, got "earliest"
sources[2].poll_interval: "often" is not a duration such as 90s, 5m or 1h30m
detector.hold: -1s must not be negative
detector.warn_fraction: 0.9 is above limit_fraction 0.8`,
		"invalid-detector-many.yml": `detector.clear_threshold: 0.3 is above threshold 0.2
detector.limit_fraction: 1.5 is outside (0, 1]
detector.handful_keys: 1 must be at least 2
detector.shard_factor: 0.5 must be at least 1`,
		"invalid-sketch-many.yml": `threshold: must be above 0 and below 1, got 1.5
window: must be at least 12ms (12 slots of 1ms), got 1ns
max_tables: must be 1 to 100000, got 0
detector.top: must be 0 to 384 (the keys a table counts exactly per class), got 500`,
		"invalid-sources-many.yml": `sources[0].stream_arns[0]: not a Kinesis stream ARN (arn:aws:kinesis:REGION:ACCOUNT:stream/NAME): "arn:aws:dynamodb:us-east-1:111122223333:table/orders"
sources[0].streams[0]: not a stream name: "a/b" (an ARN goes in stream_arns)
sources[0].checkpoint_dir: not used with lease_table, which keeps the checkpoints
sources[1].paths: not used with s3 (one cloudtrail source reads a folder or a bucket)
sources[1].s3.bucket: "s3://trail/" is a bucket name, not a path or URL (put the folder in prefix)
sources[1].s3.prefix: "/AWSLogs": S3 keys do not start with /
sources[1].max_age: must not be negative, got -1h0m0s
sources[2].paths[1]: empty path
sources[2].region: not used by type jsonl
sources[2].poll_interval: must be positive, got -2s`,
	} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join("testdata", file)
			_, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) = nil error, want %q", file, want)
			}
			// One line per problem, each naming the file.
			want = "config " + path + ": " + strings.ReplaceAll(want, "\n", "\nconfig "+path+": ")
			if got := err.Error(); got != want {
				t.Errorf("Load(%s) error\n got: %s\nwant: %s", file, got, want)
			}
		})
	}
}

// TestInvalidFilesAllListed keeps the table above complete: every
// testdata/config/invalid-*.yml must have its expected error.
func TestInvalidFilesAllListed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid-*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("glob: %v, %d files", err, len(files))
	}
	src, err := os.ReadFile("config_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.Contains(string(src), `"`+filepath.Base(f)+`"`) {
			t.Errorf("%s has no expected error in TestLoadConfigInvalid", f)
		}
	}
}

func TestLoadConfigValid(t *testing.T) {
	for file, want := range map[string]Config{
		"valid-empty.yml": Default(),
		"valid-design.yml": {
			Listen: ":9529", Window: time.Minute, Keys: export.KeysPlain, MaxTables: sketch.DefaultMaxTables, Detector: detect.DefaultSettings(),
			Tables: map[string]Table{"Music": {PartitionKey: "Artist", SortKey: "SongTitle"}},
			Sources: []Source{
				streamsSource(func(c *streams.Config) {
					c.Tables, c.Region, c.Endpoint, c.Start, c.CheckpointDir = []string{"orders", "sessions"}, "us-east-1", "http://127.0.0.1:8000", "latest", "/var/lib/hotkeyd"
				}),
				cloudTrailSource(func(c *cloudtrail.Config) { c.Paths = []string{"/var/log/cloudtrail/**/*.json.gz"} }),
				jsonlSource(func(c *jsonl.Config) { c.Paths = []string{"/var/log/app/access.log"} }),
			},
		},
		"valid-full.yml": {
			Listen: "127.0.0.1:9529", Window: 30 * time.Second, Keys: export.KeysHash, KeyHashSecret: "s3cret", MaxTables: 500,
			MaxFuture: 2 * time.Minute, MaxEventAge: 48 * time.Hour,
			History: History{Path: "/var/lib/hotkeyd/history", Retention: HistoryRetention{Size: 2 << 30}},
			Detector: func() detect.Settings {
				s := detect.DefaultSettings()
				s.Threshold, s.Hold, s.MinEvents = 0.2, 4*time.Second, 10
				return s
			}(),
			Tables: map[string]Table{
				"Music": {PartitionKey: "Artist", SortKey: "SongTitle"},
				"orders": {PartitionKey: "order_id", Indexes: map[string]Index{
					"by-status":   {PartitionKey: "status", SortKey: "created", Projection: Projection{Type: traffic.ProjectKeysOnly}},
					"by-customer": {PartitionKey: "customer", Projection: Projection{Type: traffic.ProjectInclude, Attributes: []string{"total", "status"}}},
					"by-total":    {Local: true, SortKey: "total", Projection: Projection{Type: traffic.ProjectAll}},
				}},
			},
			Sources: []Source{
				// start defaults to latest.
				streamsSource(func(c *streams.Config) {
					c.Tables, c.Region, c.Endpoint, c.Start, c.CheckpointDir = []string{"orders", "sessions"}, "us-east-1", "http://127.0.0.1:8000", "latest", "/var/lib/hotkeyd"
				}),
				cloudTrailSource(func(c *cloudtrail.Config) {
					c.Paths, c.MaxAge = []string{"/var/log/cloudtrail/**/*.json.gz"}, 24*time.Hour
				}),
				jsonlSource(func(c *jsonl.Config) {
					c.Paths, c.Fields = []string{"/var/log/app/access.log"}, jsonl.Fields{PK: "user_id", Table: "tbl"}
				}),
			},
		},
		"valid-hold-evaluations.yml": {
			Listen: ":9529", Window: time.Minute, Keys: export.KeysPlain, MaxTables: sketch.DefaultMaxTables,
			Detector: func() detect.Settings {
				s := detect.DefaultSettings()
				s.Hold = 4 * time.Second
				s.MinEvents = 10
				return s
			}(),
			Deprecated: []string{"detector.hold_evaluations: 5 is read as detector.hold: 4s (a span of event time; the default is 1s): write that instead"},
		},
		"valid-streams-describe-interval.yml": {
			Listen: ":9529", Window: time.Minute, Keys: export.KeysPlain, MaxTables: sketch.DefaultMaxTables, Detector: detect.DefaultSettings(),
			Sources: []Source{streamsSource(func(c *streams.Config) {
				c.Tables, c.ListInterval = []string{"orders"}, time.Minute
			})},
			Deprecated: []string{"sources[0].describe_interval: read as list_interval, its name now: write that instead"},
		},
		"valid-leases.yml": {
			Listen: ":9529", Window: time.Minute, Keys: export.KeysPlain, MaxTables: sketch.DefaultMaxTables, Detector: detect.DefaultSettings(),
			Sources: []Source{streamsSource(func(c *streams.Config) {
				c.Tables, c.Region, c.Start = []string{"orders", "sessions"}, "us-east-1", "trim_horizon"
				c.LeaseTable, c.WorkerID, c.FailoverTime = "hotkeyd-leases", "replica-a", 20*time.Second
			})},
		},
		"valid-tuning.yml": {
			Listen: ":9529", Window: time.Minute, Keys: export.KeysPlain, MaxTables: sketch.DefaultMaxTables, Detector: detect.DefaultSettings(),
			Sources: []Source{
				streamsSource(func(c *streams.Config) {
					c.StreamARNs, c.Region = []string{"arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-11-22T10:00:00.000"}, "us-east-1"
					c.PollInterval, c.IdlePollInterval, c.ListInterval = 500*time.Millisecond, 2*time.Second, time.Minute
					c.CheckpointInterval, c.MaxBackoff, c.CallTimeout = 5*time.Second, time.Minute, 20*time.Second
				}),
				cloudTrailSource(func(c *cloudtrail.Config) {
					c.Paths, c.PollInterval = []string{"/var/log/cloudtrail/**/*.json.gz"}, 30*time.Second
				}),
				jsonlSource(func(c *jsonl.Config) { c.Paths, c.Poll = []string{"/var/log/app/*.log"}, time.Second }),
			},
		},
	} {
		t.Run(file, func(t *testing.T) {
			got, err := Load(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			if want.MaxFuture == 0 { // the defaults
				want.MaxFuture, want.MaxEventAge = Default().MaxFuture, Default().MaxEventAge
			}
			if want.History == (History{}) {
				want.History = Default().History
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Load(%s)\n got: %+v\nwant: %+v", file, got, want)
			}
		})
	}
}

// streamsSource, cloudTrailSource and jsonlSource return a sources entry
// of their type: the reader's defaults, changed by set.
func streamsSource(set func(*streams.Config)) Source {
	c := streams.DefaultConfig()
	set(&c)
	return Source{Type: "dynamodb-streams", Settings: &c}
}

func cloudTrailSource(set func(*cloudtrail.Config)) Source {
	c := cloudtrail.DefaultConfig()
	set(&c)
	return Source{Type: "cloudtrail", Settings: &c}
}

func jsonlSource(set func(*jsonl.Config)) Source {
	c := jsonl.DefaultConfig()
	set(&c)
	return Source{Type: "jsonl", Settings: &c}
}

func TestLoadConfigMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.HasPrefix(err.Error(), "read config: open ") {
		t.Fatalf("Load(missing) = %v, want a read config error", err)
	}
}

// TestPipeline: the top-level threshold is the detector's; the sketches
// take the window and max_tables, and report at least detector.top keys
// per class.
func TestPipeline(t *testing.T) {
	cfg, err := Parse(strings.NewReader("threshold: 0.2\nwindow: 30s\nmax_tables: 7\ndetector:\n  top: 200\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Pipeline()
	if p.Detect.Threshold != 0.2 || p.Detect.Top != 200 {
		t.Errorf("detector settings %+v, want threshold 0.2 and top 200", p.Detect)
	}
	want := sketch.DefaultConfig()
	want.Window, want.MaxTables, want.Tracked = 30*time.Second, 7, 200
	if p.Sketch != want {
		t.Errorf("sketch config %+v, want %+v", p.Sketch, want)
	}
	cfg.Detector.Top = 5
	if got := cfg.Pipeline().Sketch.Tracked; got != sketch.DefaultTracked {
		t.Errorf("tracked %d with top 5, want the default %d", got, sketch.DefaultTracked)
	}
	def := Default()
	if p := def.Pipeline(); p.Detect != detect.DefaultSettings() || p.Sketch != sketch.DefaultConfig() {
		t.Errorf("defaults: %+v, want the detector's and the sketches' own", p)
	}
}

func TestKeyHashSecretFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	if err := os.WriteFile(cfgPath, []byte("keys: hash\nkey_hash_secret_file: "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cfgPath); err == nil || !strings.Contains(err.Error(), "key_hash_secret_file: open "+secret) {
		t.Errorf("missing secret file: %v", err)
	}
	if err := os.WriteFile(secret, []byte("  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cfgPath); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("empty secret file: %v", err)
	}
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(cfgPath)
	if err != nil || cfg.KeyHashSecret != "s3cret" {
		t.Errorf("secret %q, %v; want s3cret", cfg.KeyHashSecret, err)
	}
}

// TestKeySchemas checks what the readers get of the tables section: each
// table with its indexes, a local index keyed on its table's partition
// key, and a TABLE/INDEX key schema for each index the section does not
// give one for.
func TestKeySchemas(t *testing.T) {
	cfg, err := Load(filepath.Join("testdata", "valid-full.yml"))
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.KeySchemas()
	want := map[string]traffic.KeySchema{
		"Music": {PartitionKey: "Artist", SortKey: "SongTitle"},
		"orders": {PartitionKey: "order_id", Indexes: map[string]traffic.IndexSchema{
			"by-status":   {PartitionKey: "status", SortKey: "created", Projection: traffic.Projection{Type: traffic.ProjectKeysOnly}},
			"by-customer": {PartitionKey: "customer", Projection: traffic.Projection{Type: traffic.ProjectInclude, Attributes: []string{"total", "status"}}},
			"by-total":    {PartitionKey: "order_id", SortKey: "total", Local: true, Projection: traffic.Projection{Type: traffic.ProjectAll}},
		}},
		"orders/by-status":   {PartitionKey: "status", SortKey: "created"},
		"orders/by-customer": {PartitionKey: "customer"},
		"orders/by-total":    {PartitionKey: "order_id", SortKey: "total"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("KeySchemas() =\n%+v\nwant\n%+v", got, want)
	}
}
