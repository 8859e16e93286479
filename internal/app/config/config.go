// Package config is hotkeyd's configuration file: its keys and their
// defaults, decoded strictly (package strictyaml), and the checks that name
// the bad key as a path into the file. Each entry of the sources list is
// decoded into its reader's own Config, chosen by its type from one table
// (sources.go): a reader's package owns its keys, defaults, checks and
// constructor. Likewise the detector's settings are detect.Settings and the
// sketches' sizes sketch.Config, each with its defaults and checks in its
// own package; Pipeline is the one road from a Config to both, for the
// daemon and for hotkeyd analyze. Process settings (log level, web config)
// are flags, in cmd/hotkeyd.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/internal/strictyaml"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// Config is the domain configuration read from the YAML file
// (--config.file). Process settings (log level, web config) are flags.
type Config struct {
	// Listen is the address of the HTTP server (/metrics, the API).
	Listen string `yaml:"listen"`
	// Window is the sliding window shares are computed over
	// (sketch.Config.Window).
	Window time.Duration `yaml:"window"`
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
	// attribute is the partition key (CloudTrail), and tables' secondary
	// indexes (tables.go). The readers take them as KeySchemas.
	Tables map[string]Table `yaml:"tables"`
	// MaxTables bounds the tables and indexes tracked at once; when more
	// have traffic, the idle and least busy are dropped
	// (sketch.Config.MaxTables). The default fits the shipped memory limits
	// (docs/limits.md).
	MaxTables int `yaml:"max_tables"`
	// MaxFuture is how far past the daemon's clock an event's time may be;
	// a later one is refused as bad_time (a host's clock gone wrong).
	MaxFuture time.Duration `yaml:"max_future"`
	// MaxEventAge is how old an event's time may be when the input does
	// not say how long it holds its records (files, JSON lines, HTTP); an
	// older one is refused as bad_time. A stream's own retention (24 h for
	// DynamoDB Streams, the stream's for Kinesis) bounds its events
	// instead when it is longer.
	MaxEventAge time.Duration `yaml:"max_event_age"`
	// Sources lists the readers the daemon runs.
	Sources []Source `yaml:"sources"`
	// Detector tunes the detector (hysteresis, traffic floor, partition
	// limits, ...): the keys under detector:, and Threshold, which the file
	// sets at its top level (threshold:).
	Detector detect.Settings `yaml:"detector"`
	// History is where the daemon keeps its history (history.go).
	History History `yaml:"history"`

	// Deprecated says, per key the file gives in a form that still works
	// but is no longer documented, what to write instead. The daemon logs
	// each when it starts; --config.check prints them.
	Deprecated []string `yaml:"-"`
	// former are the former keys the file gave, for Parse to name in
	// the checks' errors as the file writes them; Parse clears it.
	former formerKeys
}

// Default returns the settings used for every key the file leaves out:
// the detector's and the sketches' are their packages' defaults.
func Default() Config {
	return Config{
		Listen:    ":9529",
		Window:    sketch.DefaultWindow,
		Keys:      export.KeysPlain,
		MaxTables: sketch.DefaultMaxTables,
		Detector:  detect.DefaultSettings(),
		History:   defaultHistory(),

		MaxFuture:   5 * time.Minute,
		MaxEventAge: 24 * time.Hour,
	}
}

// Pipeline is what the configuration sets of the pipeline's packages: the
// detector's settings and the sketches' configuration. Config.Pipeline
// builds it, for the daemon and for hotkeyd analyze alike.
type Pipeline struct {
	// Detect is the detector's settings, the report's settings with them.
	Detect detect.Settings
	// Sketch sizes each table's sketches. hotkeyd analyze counts one
	// window over the whole input whatever its Window.
	Sketch sketch.Config
}

// Pipeline builds the pipeline's settings from the configuration: the
// detector section with the top-level threshold, and the sketches'
// defaults with the window, max_tables, and as many heavy keys reported
// per class as the detector lists (detector.top), at least the default.
// Validate checks what it builds.
func (c *Config) Pipeline() Pipeline {
	sk := sketch.DefaultConfig()
	sk.Window = c.Window
	sk.MaxTables = c.MaxTables
	sk.Tracked = max(sk.Tracked, c.Detector.Top)
	return Pipeline{Detect: c.Detector, Sketch: sk}
}

// Load reads and validates the config file at path, within the bounds of
// the zero Reader (see Reader.Load).
func Load(path string) (Config, error) {
	var r Reader
	return r.Load(path)
}

// Load reads the config file at path once, within r's bounds, and the
// key_hash_secret_file it names, then decodes and validates it. Its error
// lists every problem found, one per line, each as "config PATH: KEY:
// what is wrong" (strictyaml.List gives them one by one).
func (r *Reader) Load(path string) (Config, error) {
	b, err := r.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(bytes.NewReader(b))
	if err != nil {
		errs := strictyaml.List(err)
		for i, e := range errs {
			errs[i] = fmt.Errorf("config %s: %w", path, e)
		}
		return Config{}, errors.Join(errs...)
	}
	if cfg.KeyHashSecretFile != "" {
		secret, err := r.ReadFile(cfg.KeyHashSecretFile)
		if err != nil {
			return Config{}, fmt.Errorf("config %s: key_hash_secret_file: %w", path, err)
		}
		if cfg.KeyHashSecret = strings.TrimSpace(string(secret)); cfg.KeyHashSecret == "" {
			return Config{}, fmt.Errorf("config %s: key_hash_secret_file: %s is empty", path, cfg.KeyHashSecretFile)
		}
	}
	return cfg, nil
}

// Parse decodes a YAML config strictly (unknown keys are errors),
// fills in defaults and validates it. Its error lists every problem it
// finds (strictyaml.List), in the order of their keys in the file: those
// of decoding, and those of the checks but for keys that did not decode
// (they kept their defaults, so what their checks say is not the file's).
func Parse(r io.Reader) (Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Config{}, err
	}
	cfg := Default()
	err = strictyaml.Decode(bytes.NewReader(data), &cfg)
	decoded := strictyaml.List(err)
	// The keys whose values did not decode whole, and the keys a
	// misspelt key most likely meant: what the checks say of them is not
	// the file's.
	var bad []string
	for _, e := range decoded {
		var se *strictyaml.Error
		if !errors.As(e, &se) {
			return Config{}, err // not YAML: nothing was decoded
		}
		bad = append(bad, se.Path)
		if se.Suggest != "" {
			bad = append(bad, strictyaml.Join(parentOf(se.Path), se.Suggest))
		}
	}
	problems := decoded
	for _, e := range strictyaml.List(cfg.Validate()) {
		e = cfg.former.inFileTerms(e)
		key, _, _ := strings.Cut(e.Error(), ": ")
		if !slices.ContainsFunc(bad, func(b string) bool { return within(key, b) || parentOf(b) == key }) {
			problems = append(problems, e)
		}
	}
	if len(problems) > 0 {
		strictyaml.InFileOrder(problems, data)
		return Config{}, errors.Join(problems...)
	}
	cfg.former = formerKeys{}
	return cfg, nil
}

// within reports whether the key path p is path or a key under it.
func within(p, path string) bool {
	rest, ok := strings.CutPrefix(p, path)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

// parentOf returns the key path that holds the key at path p: a list's
// for an item (projection for projection[1]), a mapping's for a key.
func parentOf(p string) string {
	return p[:max(strings.LastIndexAny(p, ".["), 0)]
}

// UnmarshalStrictYAML decodes the file over the defaults; the detector's
// threshold is the top-level threshold:, not detector.threshold.
// detector.hold_evaluations, the former form of detector.hold, is read as
// the hold it was and said to be deprecated; so is a sources entry's
// former key (renameFormerKeys), read under its name now.
func (c *Config) UnmarshalStrictYAML(n *yaml.Node) error {
	var errs []error
	det := mappingValue(n, "detector")
	if det != nil && mappingValue(det, "threshold") != nil {
		errs = append(errs, &strictyaml.Error{Path: "detector.threshold", Msg: "set threshold at the top level"})
		det = removeKey(det, "threshold")
		n = replaceValue(n, "detector", det)
	}
	evaluations, err := takeHoldEvaluations(det)
	errs = append(errs, err)
	n, former, err := renameFormerKeys(n)
	errs = append(errs, err)
	type plain Config // the same fields, without this method
	file := struct {
		Config    plain   `yaml:",inline"`
		Threshold float64 `yaml:"threshold"`
	}{plain(*c), c.Detector.Threshold}
	errs = append(errs, strictyaml.DecodeNode(n, &file))
	*c = Config(file.Config)
	c.Detector.Threshold = file.Threshold
	if evaluations > 0 {
		// N evaluations, one a second, held a diagnosis over N-1 seconds
		// of its table's traffic.
		c.Detector.Hold = time.Duration(evaluations-1) * time.Second
		c.Deprecated = append(c.Deprecated, fmt.Sprintf("detector.hold_evaluations: %d is read as detector.hold: %s (a span of event time; the default is %s): write that instead",
			evaluations, c.Detector.Hold, detect.DefaultSettings().Hold))
	}
	c.Deprecated = append(c.Deprecated, former.notes...)
	c.former = former
	return errors.Join(errs...)
}

// takeHoldEvaluations removes hold_evaluations, the former form of hold,
// from the detector mapping det and returns its value (0 when absent): N
// evaluations, one a second.
func takeHoldEvaluations(det *yaml.Node) (int, error) {
	for i := 0; det != nil && det.Kind == yaml.MappingNode && i+1 < len(det.Content); i += 2 {
		if det.Content[i].Value != "hold_evaluations" {
			continue
		}
		v := det.Content[i+1]
		path := "detector.hold_evaluations"
		// Taken out whatever it holds, so that the detector's keys are
		// decoded without it (and say nothing more of it).
		det.Content = slices.Delete(det.Content, i, i+2)
		if mappingValue(det, "hold") != nil {
			return 0, &strictyaml.Error{Path: path, Msg: "the former form of hold; set hold only"}
		}
		var n int
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&n) != nil || n < 1 {
			return 0, &strictyaml.Error{Path: path, Msg: fmt.Sprintf("%q is not a whole number of at least 1 (and it is now hold, a span of event time such as 1s)", v.Value)}
		}
		return n, nil
	}
	return 0, nil
}

// removeKey returns a copy of the mapping n without key.
func removeKey(n *yaml.Node, key string) *yaml.Node {
	out := *n
	out.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != key {
			out.Content = append(out.Content, n.Content[i], n.Content[i+1])
		}
	}
	return &out
}

// replaceValue returns a copy of the mapping n with key's value v.
func replaceValue(n *yaml.Node, key string, v *yaml.Node) *yaml.Node {
	out := *n
	out.Content = slices.Clone(n.Content)
	for i := 0; i+1 < len(out.Content); i += 2 {
		if out.Content[i].Value == key {
			out.Content[i+1] = v
		}
	}
	return &out
}

// mappingValue returns the value of key in the mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// Validate checks every key and returns every problem it finds, joined
// (strictyaml.List), each naming its key as a path into the file; the
// checks of each source's reader and of the detector are placed under
// their keys. The detector's settings and the sketches' sizes are checked
// by their packages, on what Pipeline builds.
func (c *Config) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := validateListen(c.Listen); err != nil {
		add(fmt.Errorf("listen: %w", err))
	}
	if c.Window <= 0 {
		add(fmt.Errorf("window: must be positive, got %s", c.Window))
	}
	if c.MaxFuture <= 0 {
		add(fmt.Errorf("max_future: must be positive, got %s", c.MaxFuture))
	}
	if c.MaxEventAge <= 0 {
		add(fmt.Errorf("max_event_age: must be positive, got %s", c.MaxEventAge))
	}
	if !c.Keys.Valid() {
		add(fmt.Errorf("keys: must be plain, hash or redact, got %q", c.Keys))
	}
	add(c.checkKeySecret())
	for _, err := range strictyaml.List(validateTables(c.Tables)) {
		add(err)
	}
	add(c.checkDeclared())
	if c.MaxTables < 1 || c.MaxTables > MaxMaxTables {
		add(fmt.Errorf("max_tables: must be 1 to %d, got %d", MaxMaxTables, c.MaxTables))
	}
	add(c.History.validate())
	p := c.Pipeline()
	for _, err := range strictyaml.List(p.Detect.Validate()) {
		if strings.HasPrefix(err.Error(), "threshold:") {
			add(err) // the file's top-level threshold
		} else {
			add(fmt.Errorf("detector.%w", err))
		}
	}
	if c.Window > 0 {
		// What the file sets of the sketches is window, max_tables and
		// the keys they report (detector.top). max_tables and
		// detector.top, when wrong, are said above: the sketches' check
		// is made with their defaults in place, so that it says what
		// else is wrong (the window) once.
		sk := p.Sketch
		def := sketch.DefaultConfig()
		if c.MaxTables < 1 || c.MaxTables > MaxMaxTables {
			sk.MaxTables = def.MaxTables
		}
		if c.Detector.Top < 0 || c.Detector.Top > detect.MaxTop {
			sk.Tracked = def.Tracked
		}
		add(sk.Validate())
	}
	for _, err := range c.checkSources() {
		add(err)
	}
	return errors.Join(errs...)
}

// checkKeySecret checks the key hash secret against keys.
func (c *Config) checkKeySecret() error {
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
	return nil
}

// checkSources checks each source's settings, placed under its key, and
// that no two sources share a lease table.
func (c *Config) checkSources() []error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	leaseTables := map[string]int{}
	for i, src := range c.Sources {
		if src.Settings == nil {
			continue // its type did not decode: said by the decoding
		}
		for _, err := range strictyaml.List(src.Settings.Validate()) {
			add(fmt.Errorf("sources[%d].%w", i, err))
		}
		if lt, ok := src.Settings.(interface{ LeaseTableName() string }); ok && lt.LeaseTableName() != "" {
			if j, dup := leaseTables[lt.LeaseTableName()]; dup {
				// Both would join the table as the same worker.
				add(fmt.Errorf("sources[%d].lease_table: %q is used by sources[%d] already; list every table in one source", i, lt.LeaseTableName(), j))
				continue
			}
			leaseTables[lt.LeaseTableName()] = i
		}
	}
	return errs
}

// MaxMaxTables is the largest max_tables: a table costs up to about 1 MiB
// (docs/limits.md), so more would be a typo rather than a plan.
const MaxMaxTables = 100_000

func validateListen(addr string) error {
	if addr == "" {
		return errors.New("required")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("want host:port, got %q", addr)
	}
	return nil
}
