// Command hotkeyd finds hot partition keys in Amazon DynamoDB tables and
// says how to fix the key design.
//
//	hotkeyd [run] --config.file hotkeyd.yaml   the daemon: sources → sketches → detector → /metrics, /api/v1/hotkeys
//	hotkeyd demo                               the same daemon on a built-in synthetic workload
//	hotkeyd analyze [--format text|json|html] FILE… one report over whole files (package analyze)
//	hotkeyd report [--since 24h] [--format text|json] the review of the recorded history (package review)
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
	"text/template"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/internal/strictyaml"
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
	report                            reportFlags
	historyPath                       string
	historyRetention                  units.Base2Bytes
	historyPathSet, historyRetSet     bool
	window                            time.Duration
	threshold                         float64
	windowSet, thresholdSet, keysSet  bool
	top                               int
	topSet                            bool
	keySchemas, files                 []string
	table                             string
	incidents                         bool
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
	app := newApp(&f)
	exit := -1
	app.Terminate(func(code int) {
		if exit < 0 {
			exit = code
		}
	})
	app.UsageWriter(stdout).ErrorWriter(stderr)

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
		fmt.Fprintf(stderr, "hotkeyd: %v (%s)\n", err, usageHint(app, args, err))
		return 2
	}

	switch cmd {
	case "version":
		fmt.Fprint(stdout, versionString())
		return 0
	case "analyze":
		return runAnalyze(&f, io)
	case "report":
		return runReport(ctx, &f, io)
	case "run", "demo":
		return runDaemon(ctx, &f, cmd == "demo", io)
	}
	fmt.Fprintf(stderr, "hotkeyd: unknown command %q\n", cmd)
	return 2
}

// newApp declares the commands and, through f, their flags.
func newApp(f *flags) *kingpin.Application {
	app := kingpin.New("hotkeyd", "Finds hot partition keys in DynamoDB tables and says how to fix the key design. "+
		"Each command takes the flags it uses: hotkeyd COMMAND --help lists them.")
	app.HelpFlag.Short('h')
	app.Version(strings.TrimSuffix(versionString(), "\n"))
	// A command's help ends with its notes: analyze's input contract.
	notes := map[string]string{"analyze": jsonl.ContractText()}
	app.UsageFuncs(template.FuncMap{"notes": func(cmd string) string { return notes[cmd] }})
	app.UsageTemplate(kingpin.DefaultUsageTemplate + `{{if .Context.SelectedCommand}}{{with notes .Context.SelectedCommand.FullCommand}}
{{.}}{{end}}{{end}}`)
	f.defineRun(app.Command("run", "Run the daemon on the configured sources (the default).").Default())
	f.defineDemo(app.Command("demo", "Run the daemon on a built-in synthetic workload with planted hot keys."))
	f.defineAnalyze(app.Command("analyze", "Read whole files (JSON lines, CloudTrail, DynamoDB stream records) as one window and print one report."))
	f.defineReport(app.Command("report", "Review the history the daemon recorded (--history.path): per table the keys by peak share, the incidents, the findings that persisted; for cron."))
	app.Command("version", "Print the version, revision and Go version.")
	return app
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
	return loadConfigWith(&config.Reader{}, f, required)
}

// loadConfigWith is loadConfig reading the file with r (the daemon keeps
// one for its reloads).
func loadConfigWith(r *config.Reader, f *flags, required bool) (config.Config, error) {
	cfg := config.Default()
	path, named := f.configPath()
	if named || required {
		var err error
		cfg, err = r.Load(path)
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
	set(f.thresholdSet, "threshold", "--threshold", func() { cfg.Detector.Threshold = f.threshold })
	set(f.topSet, "detector.top", "--top", func() { cfg.Detector.Top = f.top })
	set(f.keysSet, "keys", "--keys", func() { cfg.Keys = export.KeyMode(f.keys) })
	set(f.historyPathSet, "history.path", "--history.path", func() { cfg.History.Path = f.historyPath })
	set(f.historyRetSet, "history.retention.size", "--history.retention.size", func() { cfg.History.Retention.Size = config.ByteSize(f.historyRetention) })
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
		errs := strictyaml.List(err)
		for i, e := range errs {
			if key, msg, _ := strings.Cut(e.Error(), ": "); overrides[key] != "" {
				errs[i] = fmt.Errorf("flags: %s: %s", overrides[key], msg)
			} else {
				errs[i] = fmt.Errorf("flags: %w", e)
			}
		}
		return config.Config{}, errors.Join(errs...)
	}
	return cfg, nil
}

// printError writes err to w as "hotkeyd: " lines, one per problem: a
// configuration's errors come all at once, one per line.
func printError(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "hotkeyd: %s\n", line)
	}
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

// usageHint says where the flags of the command the user meant are listed,
// and, when a command's name came after flags (hotkeyd --log.level debug
// demo), that the command comes first: flags before it are the default
// command's.
func usageHint(app *kingpin.Application, args []string, err error) string {
	for i, a := range args {
		if strings.HasPrefix(a, "-") || app.GetCommand(a) == nil {
			continue
		}
		if i > 0 && err.Error() == "unexpected "+a {
			return fmt.Sprintf("the command comes first: hotkeyd %s [<flags>]", a)
		}
		return fmt.Sprintf("see hotkeyd %s --help", a)
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return "see hotkeyd --help for the commands"
	}
	return "see hotkeyd run --help" // flags without a command are run's
}
