// Command hotkeyd finds hot partition keys in Amazon DynamoDB tables and
// says how to fix the key design.
//
//	hotkeyd [run] --config.file hotkeyd.yaml   the daemon: sources → sketches → detector → /metrics, /api/v1/hotkeys
//	hotkeyd demo                               the same daemon on a built-in synthetic workload
//	hotkeyd analyze [--format json|text] FILE… one report over whole files
//	hotkeyd version                            version, revision, Go version
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
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hotkeyd/hotkeyd/export"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// flags holds every command-line setting. Pointers are nil-safe only after
// parse; the *Set booleans say whether the user gave the flag, so that
// flags override the file only when given.
type flags struct {
	configFile    string
	configAlias   string
	configSet     bool
	configAliased bool
	configCheck   bool

	listen       string
	listenSet    bool
	webConfig    string
	enableIngest bool

	logLevel  string
	logFormat string

	window       time.Duration
	windowSet    bool
	threshold    float64
	thresholdSet bool
	keys         string
	keysSet      bool

	// analyze
	format     string
	top        int
	keySchemas []string
	table      string
	files      []string
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

	app.Flag("config.file", "Configuration file (YAML).").Default("hotkeyd.yaml").IsSetByUser(&f.configSet).StringVar(&f.configFile)
	app.Flag("config", "Alias of --config.file.").Hidden().IsSetByUser(&f.configAliased).StringVar(&f.configAlias)
	app.Flag("config.check", "Validate the configuration file, print the result and exit (0 valid, 1 invalid).").BoolVar(&f.configCheck)
	app.Flag("web.listen-address", "Address of the HTTP server: /metrics, /api/v1/hotkeys, /-/healthy, /-/ready. Overrides listen in the file.").
		Default(DefaultConfig().Listen).IsSetByUser(&f.listenSet).StringVar(&f.listen)
	app.Flag("web.config.file", "exporter-toolkit web configuration file (TLS, basic auth).").Default("").StringVar(&f.webConfig)
	app.Flag("web.enable-ingest", "Accept NDJSON events on POST /api/v1/events.").BoolVar(&f.enableIngest)
	app.Flag("log.level", "Log level: debug, info, warn, error.").Default("info").EnumVar(&f.logLevel, "debug", "info", "warn", "error")
	app.Flag("log.format", "Log format: logfmt or json.").Default("logfmt").EnumVar(&f.logFormat, "logfmt", "json")
	app.Flag("window", "Sliding window shares are computed over. Overrides window in the file.").
		Default(DefaultConfig().Window.String()).IsSetByUser(&f.windowSet).DurationVar(&f.window)
	app.Flag("threshold", "Traffic share (0-1) that makes a key hot. Overrides threshold in the file.").
		Default(fmt.Sprint(DefaultConfig().Threshold)).IsSetByUser(&f.thresholdSet).Float64Var(&f.threshold)
	app.Flag("keys", "How key values are shown in metrics, the API and logs: plain, hash or redact. Overrides keys in the file.").
		Default(string(export.KeysPlain)).IsSetByUser(&f.keysSet).EnumVar(&f.keys, string(export.KeysPlain), string(export.KeysHash), string(export.KeysRedact))

	runCmd := app.Command("run", "Run the daemon on the configured sources (the default).").Default()
	demoCmd := app.Command("demo", "Run the daemon on a built-in synthetic workload with planted hot keys.")
	analyzeCmd := app.Command("analyze", "Read whole files (JSON lines, CloudTrail, DynamoDB stream records) as one window and print one report.")
	analyzeCmd.Flag("format", "Report format: text or json.").Default("text").EnumVar(&f.format, "text", "json")
	analyzeCmd.Flag("top", "Keys listed per table and class.").Default("10").IntVar(&f.top)
	analyzeCmd.Flag("key-schema", "Key schema of a table, TABLE=PK[,SK], for inputs that do not say which attribute is the key (CloudTrail, stream records). Repeatable.").
		PlaceHolder("TABLE=PK[,SK]").StringsVar(&f.keySchemas)
	analyzeCmd.Flag("table", "Table of the stream records that name none (aws dynamodbstreams get-records output); stream records of other tables are then skipped.").
		PlaceHolder("NAME").StringVar(&f.table)
	analyzeCmd.Arg("file", `Input files; "-" is stdin.`).Required().StringsVar(&f.files)
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

// loadConfig reads the config file and applies the flags that override it.
// required says whether a missing file is an error (run) or means defaults
// (demo and analyze, unless a file was named).
func loadConfig(f *flags, required bool) (Config, error) {
	cfg := DefaultConfig()
	path, named := f.configPath()
	if named || required {
		var err error
		cfg, err = LoadConfig(path)
		if errors.Is(err, fs.ErrNotExist) && !named {
			return Config{}, fmt.Errorf("%w (name one with --config.file, start from hotkeyd.example.yaml, or try hotkeyd demo)", err)
		}
		if err != nil {
			return Config{}, err
		}
	}
	if f.listenSet {
		cfg.Listen = f.listen
	}
	if f.windowSet {
		cfg.Window = f.window
	}
	if f.thresholdSet {
		cfg.Threshold = f.threshold
	}
	if f.keysSet {
		cfg.Keys = export.KeyMode(f.keys)
	}
	if f.listenSet || f.windowSet || f.thresholdSet || f.keysSet {
		if err := cfg.Validate(); err != nil {
			return Config{}, fmt.Errorf("flags: %w", flagError(err))
		}
	}
	return cfg, nil
}

// flagError rewrites a Validate error about an overridden key into the
// flag's name, so "listen: ..." reads "--web.listen-address: ...".
func flagError(err error) error {
	msg := err.Error()
	for key, flag := range map[string]string{
		"listen:": "--web.listen-address:", "window:": "--window:", "threshold:": "--threshold:", "keys:": "--keys:",
	} {
		if strings.HasPrefix(msg, key) {
			return errors.New(flag + strings.TrimPrefix(msg, key))
		}
	}
	return err
}

// checkConfig implements --config.check.
func checkConfig(f *flags, io stdio) int {
	path, _ := f.configPath()
	if _, err := loadConfig(f, true); err != nil {
		fmt.Fprintf(io.stderr, "hotkeyd: %v\n", err)
		return 1
	}
	fmt.Fprintf(io.stdout, "%s: valid\n", path)
	return 0
}
