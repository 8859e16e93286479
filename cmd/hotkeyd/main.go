// Command hotkeyd finds hot partition keys in Amazon DynamoDB tables and
// says how to fix the key design.
//
//	hotkeyd [run] --config.file hotkeyd.yaml   the daemon: sources → sketches → detector → /metrics, /api/v1/hotkeys
//	hotkeyd demo                               the same daemon on a built-in synthetic workload
//	hotkeyd analyze [--format text|json|html] FILE… one report over whole files (package analyze)
//	hotkeyd version                            version, revision, Go version (also --version)
//
// main wires and nothing else: flags and config, then the components, then
// one oklog/run Group, then one exit.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// secretEnv supplies key_hash_secret when the file gives none, so that
// --keys hash works from the command line without a secret in ps.
const secretEnv = "HOTKEYD_KEY_HASH_SECRET"

// flags holds every command-line setting. The *Set booleans say whether
// the user gave the flag, so that flags override the file only when given.
type flags struct {
	configFile, configAlias           string
	configSet, configAliased, check   bool
	listen, webConfig                 string
	listenSet, enableIngest           bool
	maxConns, ingestBurst             int
	maxConnsPerClient                 int
	lifecycle                         bool
	readTimeout, writeTimeout, idle   time.Duration
	ingestRate                        float64
	logLevel, logFormat, keys, format string
	window                            time.Duration
	threshold                         float64
	windowSet, thresholdSet, keysSet  bool
	top                               int
	keySchemas, files                 []string
	table                             string
}

// configPath returns the config file named on the command line (either
// spelling) and whether one was named at all.
func (f *flags) configPath() (string, bool) {
	if f.configAliased {
		return f.configAlias, true
	}
	return f.configFile, f.configSet
}

// stdio is the process's standard streams, passed down so that tests can
// run the command in-process.
type stdio struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// run parses args and runs the chosen subcommand. It returns the process
// exit status: 0 on success (and on SIGTERM/SIGINT after a clean drain), 1
// on any error, 2 on a command-line error.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdin, stdout, stderr)
}

// runContext is run with a context whose end stops the daemon like SIGTERM
// does, for tests that run the command in-process.
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	io := stdio{stdin: stdin, stdout: stdout, stderr: stderr}
	var f flags
	app := kingpin.New("hotkeyd", "Finds hot partition keys in DynamoDB tables and says how to fix the key design.")
	exit := -1
	app.Terminate(func(code int) {
		if exit < 0 {
			exit = code
		}
	})
	app.UsageWriter(stdout).ErrorWriter(stderr)
	app.HelpFlag.Short('h')
	app.Version(strings.TrimSuffix(versionString(), "\n"))
	def := config.Default()

	app.Flag("config.file", "Configuration file (YAML).").Default("hotkeyd.yaml").IsSetByUser(&f.configSet).StringVar(&f.configFile)
	app.Flag("config", "Alias of --config.file.").PlaceHolder("FILE").IsSetByUser(&f.configAliased).StringVar(&f.configAlias)
	app.Flag("config.check", "Check the configuration (file and flags) as the command would before reading anything, print the result and exit (0 valid, 1 invalid).").BoolVar(&f.check)
	app.Flag("web.listen-address", "Address of the HTTP server: /metrics, /api/v1/hotkeys, /-/healthy, /-/ready. Overrides listen in the file.").
		Default(def.Listen).IsSetByUser(&f.listenSet).StringVar(&f.listen)
	app.Flag("web.config.file", "exporter-toolkit web configuration file (TLS, basic auth).").Default("").StringVar(&f.webConfig)
	app.Flag("web.max-connections", "Most HTTP connections served at once; more wait to be accepted.").Default(fmt.Sprint(export.DefaultMaxConnections)).IntVar(&f.maxConns)
	app.Flag("web.enable-lifecycle", "Reload the configuration on POST /-/reload, as SIGHUP does.").BoolVar(&f.lifecycle)
	app.Flag("web.max-connections-per-client", "Most HTTP connections one client address holds at once; more are closed when accepted (0: no cap).").Default(fmt.Sprint(export.DefaultMaxConnectionsPerClient)).IntVar(&f.maxConnsPerClient)
	app.Flag("web.read-timeout", "Most time to read a whole request, headers and body.").Default(export.DefaultReadTimeout.String()).DurationVar(&f.readTimeout)
	app.Flag("web.write-timeout", "Most time to write an answer.").Default(export.DefaultWriteTimeout.String()).DurationVar(&f.writeTimeout)
	app.Flag("web.idle-timeout", "Most time a keep-alive connection stays open between requests.").Default(export.DefaultIdleTimeout.String()).DurationVar(&f.idle)
	app.Flag("web.enable-ingest", "Accept NDJSON events on POST /api/v1/events.").BoolVar(&f.enableIngest)
	app.Flag("web.ingest.rate-limit", "Requests per second POST /api/v1/events accepts, from all clients together (0: no limit); over it, 429.").
		Default(fmt.Sprint(jsonl.DefaultRequestsPerSecond)).Float64Var(&f.ingestRate)
	app.Flag("web.ingest.burst", "Requests POST /api/v1/events accepts at once above the rate limit.").Default(fmt.Sprint(jsonl.DefaultBurst)).IntVar(&f.ingestBurst)
	enumFlag(app.Flag("log.level", "Log level: debug, info, warn or error."), &f.logLevel, "info", "debug", "info", "warn", "error")
	enumFlag(app.Flag("log.format", "Log format: logfmt or json."), &f.logFormat, "logfmt", "logfmt", "json")
	app.Flag("window", "Sliding window shares are computed over. Overrides window in the file.").
		Default(def.Window.String()).IsSetByUser(&f.windowSet).DurationVar(&f.window)
	app.Flag("threshold", "Traffic share (0-1) that makes a key hot. Overrides threshold in the file.").
		Default(fmt.Sprint(def.Threshold)).IsSetByUser(&f.thresholdSet).Float64Var(&f.threshold)
	enumFlag(app.Flag("keys", "How key values are shown in metrics, the API and logs: plain, hash or redact. Overrides keys in the file; hash takes its secret from the file or "+secretEnv+".").
		IsSetByUser(&f.keysSet), &f.keys, string(export.KeysPlain), string(export.KeysPlain), string(export.KeysHash), string(export.KeysRedact))

	runCmd := app.Command("run", "Run the daemon on the configured sources (the default).").Default()
	demoCmd := app.Command("demo", "Run the daemon on a built-in synthetic workload with planted hot keys.")
	analyzeCmd := app.Command("analyze", "Read whole files (JSON lines, CloudTrail, DynamoDB stream records) as one window and print one report.")
	enumFlag(analyzeCmd.Flag("format", "Report format: text, json, or html (one self-contained page with charts of the traffic across the input, to open in a browser or attach to a ticket)."), &f.format, "text", "text", "json", "html")
	analyzeCmd.Flag("top", "Keys listed per table and class.").Default("10").IntVar(&f.top)
	analyzeCmd.Flag("key-schema", "Key schema of a table, TABLE=PK[,SK], for inputs that do not say which attribute is the key (CloudTrail, stream records). Repeatable.").
		PlaceHolder("TABLE=PK[,SK]").StringsVar(&f.keySchemas)
	analyzeCmd.Flag("table", "Table of the stream records that name none (aws dynamodbstreams get-records output); stream records of other tables are then skipped.").
		PlaceHolder("NAME").StringVar(&f.table)
	analyzeCmd.Arg("file", `Input files; "-" is stdin.`).StringsVar(&f.files)
	versionCmd := app.Command("version", "Print the version, revision and Go version.")

	cmd, err := app.Parse(protectStdinArgs(args))
	for i, name := range f.files {
		if name == stdinArg {
			f.files[i] = "-"
		}
	}
	if exit >= 0 {
		return exit
	}
	if err != nil {
		fmt.Fprintf(stderr, "hotkeyd: %v (see --help)\n", err)
		return 2
	}

	switch cmd {
	case versionCmd.FullCommand():
		fmt.Fprint(stdout, versionString())
		return 0
	case analyzeCmd.FullCommand():
		return runAnalyze(&f, io)
	case runCmd.FullCommand(), demoCmd.FullCommand():
		return runDaemon(ctx, &f, cmd == demoCmd.FullCommand(), io)
	}
	fmt.Fprintf(stderr, "hotkeyd: unknown command %q\n", cmd)
	return 2
}

// enumValue is a flag with a fixed set of values whose error names the
// flag (kingpin's own enum error does not).
type enumValue struct {
	name    string
	target  *string
	options []string
}

func (e *enumValue) Set(s string) error {
	if !slices.Contains(e.options, s) {
		last := len(e.options) - 1
		return fmt.Errorf("--%s: must be %s or %s, got %q", e.name, strings.Join(e.options[:last], ", "), e.options[last], s)
	}
	*e.target = s
	return nil
}

func (e *enumValue) String() string { return *e.target }

func enumFlag(c *kingpin.FlagClause, target *string, def string, options ...string) {
	c.Default(def).HintOptions(options...).SetValue(&enumValue{name: c.Model().Name, target: target, options: options})
}

// stdinArg stands for a "-" argument while kingpin parses: kingpin turns a
// bare "-" into an empty string.
const stdinArg = "\x00stdin"

func protectStdinArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "-" {
			a = stdinArg
		}
		out[i] = a
	}
	return out
}

// loadConfig reads the config file, applies the flags that override it and
// the secret of secretEnv, and validates the result; an error about a key a
// flag set names the flag. required says whether a missing file is an
// error (run) or means defaults (demo and analyze, unless a file was named).
func loadConfig(f *flags, required bool) (config.Config, error) {
	cfg := config.Default()
	path, named := f.configPath()
	if named || required {
		var err error
		cfg, err = config.Load(path)
		if errors.Is(err, fs.ErrNotExist) && !named {
			return config.Config{}, fmt.Errorf("%w (name one with --config.file, start from hotkeyd.example.yaml, or try hotkeyd demo)", err)
		}
		if err != nil {
			return config.Config{}, err
		}
	}
	overrides := map[string]string{}
	set := func(given bool, key, flag string, apply func()) {
		if given {
			apply()
			overrides[key] = flag
		}
	}
	set(f.listenSet, "listen", "--web.listen-address", func() { cfg.Listen = f.listen })
	set(f.windowSet, "window", "--window", func() { cfg.Window = f.window })
	set(f.thresholdSet, "threshold", "--threshold", func() { cfg.Threshold = f.threshold })
	set(f.keysSet, "keys", "--keys", func() { cfg.Keys = export.KeyMode(f.keys) })
	if secret := os.Getenv(secretEnv); cfg.Keys == export.KeysHash && cfg.KeyHashSecret == "" && secret != "" {
		cfg.KeyHashSecret = secret
	}
	if len(overrides) == 0 {
		return cfg, nil
	}
	if f.keysSet && cfg.Keys == export.KeysHash && cfg.KeyHashSecret == "" {
		return config.Config{}, errors.New("flags: --keys: hash needs a secret: key_hash_secret or key_hash_secret_file in the config file, or " + secretEnv + " in the environment")
	}
	if err := cfg.Validate(); err != nil {
		if key, msg, _ := strings.Cut(err.Error(), ": "); overrides[key] != "" {
			return config.Config{}, fmt.Errorf("flags: %s: %s", overrides[key], msg)
		}
		return config.Config{}, fmt.Errorf("flags: %w", err)
	}
	return cfg, nil
}

// printValid is --config.check's answer once everything checked out:
// the file checked, or "defaults" when demo or analyze read none.
func printValid(f *flags, required bool, io stdio) int {
	path, named := f.configPath()
	if !named && !required {
		path = "defaults"
	}
	fmt.Fprintf(io.stdout, "%s: valid\n", path)
	return 0
}
