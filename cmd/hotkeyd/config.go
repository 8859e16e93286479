package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
)

// Source types accepted in the sources list of the config file.
const (
	sourceStreams    = "dynamodb-streams"
	sourceCloudTrail = "cloudtrail"
	sourceJSONL      = "jsonl"
)

// Config is the domain configuration read from the YAML file
// (--config.file). Process settings (log level, web config) are flags.
type Config struct {
	// Listen is the address of the HTTP server (/metrics, the API).
	Listen string `yaml:"listen"`
	// Window is the sliding window shares are computed over.
	Window time.Duration `yaml:"window"`
	// Threshold is the traffic share that makes a key hot.
	Threshold float64 `yaml:"threshold"`
	// Keys says how key values are shown in metrics, the API and logs:
	// plain, hash (a stable keyed hash) or redact.
	Keys export.KeyMode `yaml:"keys"`
	// KeyHashSecret keys the hash (HMAC-SHA256) when Keys is hash, so that
	// hashed values cannot be reversed by hashing guesses. Required with hash.
	KeyHashSecret string `yaml:"key_hash_secret"`
	// KeyHashSecretFile names a file holding the secret instead (a mounted
	// Kubernetes Secret); surrounding white space is ignored. LoadConfig
	// reads it into KeyHashSecret.
	KeyHashSecretFile string `yaml:"key_hash_secret_file"`
	// Tables names key schemas for sources whose records do not say which
	// attribute is the partition key (CloudTrail).
	Tables map[string]ingest.KeySchema `yaml:"tables"`
	// Sources lists the readers the daemon runs.
	Sources []SourceConfig `yaml:"sources"`
	// Detector tunes the detector (hysteresis, traffic floor, partition
	// limits, ...). Its threshold is the top-level threshold; a zero
	// clear_threshold means 0.8 × threshold.
	Detector detect.Settings `yaml:"detector"`
}

// thresholdUnset marks detector.threshold as not given while decoding, so
// that a file setting it there (instead of at the top level) is refused.
const thresholdUnset = -1

// SourceConfig is one entry of the sources list. Which fields apply depends
// on Type; Validate rejects fields that do not.
type SourceConfig struct {
	// Type is dynamodb-streams, cloudtrail or jsonl.
	Type string `yaml:"type"`

	// Tables (dynamodb-streams) are the tables whose streams are read.
	Tables []string `yaml:"tables"`
	// StreamARNs (dynamodb-streams) name streams directly.
	StreamARNs []string `yaml:"stream_arns"`
	// Region (dynamodb-streams) is the AWS region; empty means the SDK's
	// default chain (AWS_REGION, the shared config).
	Region string `yaml:"region"`
	// Endpoint (dynamodb-streams) overrides the AWS endpoint, e.g. DynamoDB Local.
	Endpoint string `yaml:"endpoint"`
	// Start (dynamodb-streams) is latest or trim_horizon: where a shard
	// without a checkpoint starts.
	Start string `yaml:"start"`
	// CheckpointDir (dynamodb-streams, cloudtrail) is where read positions
	// are kept across restarts; empty keeps none.
	CheckpointDir string `yaml:"checkpoint_dir"`
	// LeaseTable (dynamodb-streams) names the DynamoDB table, created on
	// first use, through which replicas split the shards (the Kinesis
	// Client Library's lease table); checkpoints then live in it.
	LeaseTable string `yaml:"lease_table"`
	// WorkerID (dynamodb-streams, with lease_table) names this replica in
	// the lease table; empty means host name and process id.
	WorkerID string `yaml:"worker_id"`
	// FailoverTime (dynamodb-streams, with lease_table) is how long a
	// lease's counter must stand still before another replica takes it;
	// zero means 10s.
	FailoverTime time.Duration `yaml:"failover_time"`
	// MaxAge (cloudtrail) skips files older than this when first seen: the
	// live window runs on arrival time, so replaying old history would count
	// it as current traffic. Zero reads every file.
	MaxAge time.Duration `yaml:"max_age"`

	// Paths (cloudtrail, jsonl) are files or glob patterns; "-" is stdin (jsonl).
	Paths []string `yaml:"paths"`
	// Fields (jsonl) renames the JSON fields for logs that already exist,
	// e.g. {pk: user_id, table: tbl}.
	Fields jsonl.Fields `yaml:"fields"`
}

// DefaultConfig returns the settings used for every key the file leaves out.
func DefaultConfig() Config {
	return Config{
		Listen:    ":9529",
		Window:    60 * time.Second,
		Threshold: 0.10,
		Keys:      export.KeysPlain,
		Detector:  defaultDetector(),
	}
}

// defaultDetector returns the detector defaults with the two settings that
// follow the top-level threshold left zero.
func defaultDetector() detect.Settings {
	s := detect.DefaultSettings()
	s.Threshold, s.ClearThreshold = 0, 0
	return s
}

// detectSettings returns the detector's settings: the detector section with
// the top-level threshold, and clear_threshold derived from it unless set.
func (c *Config) detectSettings() detect.Settings {
	s := c.Detector
	s.Threshold = c.Threshold
	if s.ClearThreshold == 0 {
		s.ClearThreshold = 0.8 * c.Threshold
	}
	return s
}

// LoadConfig reads and validates the config file at path.
func LoadConfig(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	cfg, err := ParseConfig(f)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if cfg.KeyHashSecretFile != "" {
		secret, err := os.ReadFile(cfg.KeyHashSecretFile)
		if err != nil {
			return Config{}, fmt.Errorf("config %s: key_hash_secret_file: %w", path, err)
		}
		if cfg.KeyHashSecret = strings.TrimSpace(string(secret)); cfg.KeyHashSecret == "" {
			return Config{}, fmt.Errorf("config %s: key_hash_secret_file: %s is empty", path, cfg.KeyHashSecretFile)
		}
	}
	return cfg, nil
}

// ParseConfig decodes a YAML config strictly (unknown keys are errors),
// fills in defaults and validates it.
func ParseConfig(r io.Reader) (Config, error) {
	cfg := DefaultConfig()
	cfg.Detector.Threshold = thresholdUnset
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, err
	}
	if cfg.Detector.Threshold != thresholdUnset {
		return Config{}, errors.New("detector.threshold: set threshold at the top level")
	}
	cfg.Detector.Threshold = 0
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Config{}, errors.New("more than one YAML document")
	}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// setDefaults fills the per-source defaults that depend on the type.
func (c *Config) setDefaults() {
	for i := range c.Sources {
		s := &c.Sources[i]
		if s.Type == sourceStreams && s.Start == "" {
			s.Start = "latest"
		}
	}
}

// Validate checks the settings and returns an error naming the first bad
// key, as a path into the file (sources[1].paths).
func (c *Config) Validate() error {
	if err := validateListen(c.Listen); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if c.Window <= 0 {
		return fmt.Errorf("window: must be positive, got %s", c.Window)
	}
	if !(c.Threshold > 0 && c.Threshold < 1) {
		return fmt.Errorf("threshold: must be above 0 and below 1, got %g", c.Threshold)
	}
	if !c.Keys.Valid() {
		return fmt.Errorf("keys: must be plain, hash or redact, got %q", c.Keys)
	}
	switch {
	case c.KeyHashSecret != "" && c.KeyHashSecretFile != "":
		return errors.New("key_hash_secret_file: set key_hash_secret or key_hash_secret_file, not both")
	case c.KeyHashSecretFile != "" && c.Keys != export.KeysHash:
		return errors.New("key_hash_secret_file: only used with keys: hash")
	case c.KeyHashSecret != "" && c.Keys != export.KeysHash:
		return errors.New("key_hash_secret: only used with keys: hash")
	case c.KeyHashSecret == "" && c.KeyHashSecretFile == "" && c.Keys == export.KeysHash:
		return errors.New("key_hash_secret: required with keys: hash (or key_hash_secret_file)")
	}
	names := make([]string, 0, len(c.Tables))
	for name := range c.Tables {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "" {
			return errors.New("tables: empty table name")
		}
		if c.Tables[name].PartitionKey == "" {
			return fmt.Errorf("tables.%s.partition_key: required", name)
		}
	}
	if err := c.detectSettings().Validate(); err != nil {
		return fmt.Errorf("detector.%w", err)
	}
	leaseTables := map[string]int{}
	for i := range c.Sources {
		if err := c.Sources[i].validate(); err != nil {
			return fmt.Errorf("sources[%d]%w", i, err)
		}
		if lt := c.Sources[i].LeaseTable; lt != "" {
			if j, dup := leaseTables[lt]; dup {
				// Both would join the table as the same worker.
				return fmt.Errorf("sources[%d].lease_table: %q is used by sources[%d] already; list every table in one source", i, lt, j)
			}
			leaseTables[lt] = i
		}
	}
	return nil
}

// keyError is an error about one key of a source, printed as ".key: msg" so
// that the caller can prefix the source's index.
type keyError struct{ key, msg string }

func (e keyError) Error() string {
	if e.key == "" {
		return ": " + e.msg
	}
	return "." + e.key + ": " + e.msg
}

func (s *SourceConfig) validate() error {
	// set lists the keys given, for the "not used by this type" check.
	set := map[string]bool{
		"tables":         len(s.Tables) > 0,
		"stream_arns":    len(s.StreamARNs) > 0,
		"region":         s.Region != "",
		"endpoint":       s.Endpoint != "",
		"start":          s.Start != "",
		"checkpoint_dir": s.CheckpointDir != "",
		"lease_table":    s.LeaseTable != "",
		"worker_id":      s.WorkerID != "",
		"failover_time":  s.FailoverTime != 0,
		"max_age":        s.MaxAge != 0,
		"paths":          len(s.Paths) > 0,
		"fields":         s.Fields != (jsonl.Fields{}),
	}
	var allowed []string
	switch s.Type {
	case "":
		return keyError{"type", "required (dynamodb-streams, cloudtrail or jsonl)"}
	case sourceStreams:
		allowed = []string{"tables", "stream_arns", "region", "endpoint", "start", "checkpoint_dir", "lease_table", "worker_id", "failover_time"}
		if len(s.Tables) == 0 && len(s.StreamARNs) == 0 {
			return keyError{"tables", "one of tables or stream_arns is required"}
		}
		for j, t := range s.Tables {
			if t == "" {
				return keyError{fmt.Sprintf("tables[%d]", j), "empty table name"}
			}
		}
		for j, a := range s.StreamARNs {
			if !strings.HasPrefix(a, "arn:") {
				return keyError{fmt.Sprintf("stream_arns[%d]", j), fmt.Sprintf("not a stream ARN: %q", a)}
			}
		}
		if s.Endpoint != "" {
			if u, err := url.Parse(s.Endpoint); err != nil || u.Scheme == "" || u.Host == "" {
				return keyError{"endpoint", fmt.Sprintf("not an absolute URL: %q", s.Endpoint)}
			}
		}
		if s.Start != "latest" && s.Start != "trim_horizon" {
			return keyError{"start", fmt.Sprintf("must be latest or trim_horizon, got %q", s.Start)}
		}
		if err := s.validateLease(); err != nil {
			return err
		}
	case sourceCloudTrail:
		allowed = []string{"paths", "checkpoint_dir", "max_age"}
		if err := validatePaths(s.Paths, false); err != nil {
			return err
		}
		if s.MaxAge < 0 {
			return keyError{"max_age", fmt.Sprintf("must not be negative, got %s", s.MaxAge)}
		}
	case sourceJSONL:
		allowed = []string{"paths", "fields"}
		if err := validatePaths(s.Paths, true); err != nil {
			return err
		}
	default:
		return keyError{"type", fmt.Sprintf("unknown source type %q (want dynamodb-streams, cloudtrail or jsonl)", s.Type)}
	}
	for _, k := range sortedKeys(set) {
		if set[k] && !slices.Contains(allowed, k) {
			return keyError{k, fmt.Sprintf("not used by type %s", s.Type)}
		}
	}
	return nil
}

// validateLease checks the lease keys of a dynamodb-streams source.
func (s *SourceConfig) validateLease() error {
	switch {
	case s.LeaseTable == "" && s.WorkerID != "":
		return keyError{"worker_id", "only used with lease_table"}
	case s.LeaseTable == "" && s.FailoverTime != 0:
		return keyError{"failover_time", "only used with lease_table"}
	case s.LeaseTable == "":
		return nil
	case s.CheckpointDir != "":
		return keyError{"checkpoint_dir", "not used with lease_table, which keeps the checkpoints"}
	case s.FailoverTime != 0 && s.FailoverTime < lease.MinFailoverTime:
		return keyError{"failover_time", fmt.Sprintf("%s is below the minimum %s", s.FailoverTime, lease.MinFailoverTime)}
	}
	if err := lease.CheckTableName(s.LeaseTable); err != nil {
		return keyError{"lease_table", err.Error()}
	}
	return nil
}

func validatePaths(paths []string, stdin bool) error {
	if len(paths) == 0 {
		return keyError{"paths", "at least one path is required"}
	}
	for j, p := range paths {
		switch {
		case p == "":
			return keyError{fmt.Sprintf("paths[%d]", j), "empty path"}
		case p == "-" && !stdin:
			return keyError{fmt.Sprintf("paths[%d]", j), "stdin is not supported by this source"}
		}
	}
	return nil
}

func validateListen(addr string) error {
	if addr == "" {
		return errors.New("required")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("want host:port, got %q", addr)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
