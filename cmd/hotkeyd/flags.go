package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
)

// Each command declares the flags it uses, so that its --help lists those
// and no other, and a flag it would ignore is refused instead. The groups
// below are shared by the commands that use them:
//
//	run      config (default hotkeyd.yaml), settings, window, web, log
//	demo     config (none by default),      settings, window, web, log
//	analyze  config (none by default),      settings,              log, its own
//
// A flag given before the command name is a flag of the default command
// (run), as kingpin parses them.

// defineRun declares the flags of hotkeyd run: it reads hotkeyd.yaml unless
// told otherwise.
func (f *flags) defineRun(c *kingpin.CmdClause) {
	f.defineDaemon(c, "Configuration file (YAML).", "hotkeyd.yaml")
}

// defineDemo declares the flags of hotkeyd demo: the daemon's, with a
// configuration file only when one is named.
func (f *flags) defineDemo(c *kingpin.CmdClause) {
	f.defineDaemon(c, "Configuration file (YAML) for the detector's settings; without one, the defaults. Its sources are not read.", "")
}

// defineDaemon declares the flags of the daemon (run and demo), whose
// configuration file is configHelp and configDefault.
func (f *flags) defineDaemon(c *kingpin.CmdClause, configHelp, configDefault string) {
	f.defineConfig(c, configHelp, configDefault)
	f.defineWeb(c)
	f.defineLog(c, "Log level: debug, info, warn or error.")
	f.defineWindow(c)
	f.defineSettings(c)
	f.defineHistory(c)
}

// defineHistory declares where the daemon keeps its history
// (docs/running.md#history-and-incidents): they override the file's
// history.path and history.retention.size.
func (f *flags) defineHistory(c *kingpin.CmdClause) {
	def := config.Default().History
	c.Flag("history.path", "Directory of the history database (history.db: cells and incidents that outlive the window). Empty keeps no history. Overrides history.path in the file.").
		Default(def.Path).IsSetByUser(&f.historyPathSet).StringVar(&f.historyPath)
	c.Flag("history.retention.size", "Most the history database may hold (KiB, MiB, GiB); past it, the oldest cells of the finest resolution are dropped first. Overrides history.retention.size in the file.").
		Default(def.Retention.Size.String()).IsSetByUser(&f.historyRetSet).BytesVar(&f.historyRetention)
}

// defineAnalyze declares the flags of hotkeyd analyze: the settings that
// shape its report and its own, no web server and no window (the input is
// one window).
func (f *flags) defineAnalyze(c *kingpin.CmdClause) {
	f.defineConfig(c, "Configuration file (YAML) for the detector's settings, key schemas (tables) and a jsonl source's field names; without one, the defaults.", "")
	enumFlag(c.Flag("format", "Report format: text, json, or html (one self-contained page with charts of the traffic across the input, to open in a browser or attach to a ticket)."), &f.format, "text", "text", "json", "html")
	c.Flag("top", "Keys listed per table and class. Overrides detector.top in the file.").
		Default(fmt.Sprint(config.Default().Detector.Top)).IsSetByUser(&f.topSet).IntVar(&f.top)
	c.Flag("key-schema", "Key schema of a table, TABLE=PK[,SK], for inputs that do not say which attribute is the key (CloudTrail, stream records). Repeatable.").
		PlaceHolder("TABLE=PK[,SK]").StringsVar(&f.keySchemas)
	c.Flag("incidents", "Replay the input in event time through the live detector to list each table's incidents (what was hot, from when to when); --no-incidents skips it, which saves most of the time and memory beyond one reading.").
		Default("true").BoolVar(&f.incidents)
	c.Flag("table", "Table of the stream records that name none (aws dynamodbstreams get-records output); stream records of other tables are then skipped.").
		PlaceHolder("NAME").StringVar(&f.table)
	f.defineSettings(c)
	f.defineLog(c, "Level of the readers' log on stderr: debug, info, warn or error; at info, the default, it shows warnings and worse.")
	c.Arg("file", `Input files; "-" is stdin.`).StringsVar(&f.files)
}

// defineConfig declares --config.file (with its alias --config) and
// --config.check. def is the file read when none is named; empty means
// the defaults.
func (f *flags) defineConfig(c *kingpin.CmdClause, help, def string) {
	file := c.Flag("config.file", help).IsSetByUser(&f.configSet)
	if def != "" {
		file.Default(def)
	} else {
		file.PlaceHolder("FILE")
	}
	file.StringVar(&f.configFile)
	c.Flag("config", "Alias of --config.file.").PlaceHolder("FILE").IsSetByUser(&f.configAliased).StringVar(&f.configAlias)
	c.Flag("config.check", "Check the configuration (file and flags) as the command would before reading anything, print the result and exit (0 valid, 1 invalid).").BoolVar(&f.check)
}

// defineWeb declares the HTTP server's flags (run and demo).
func (f *flags) defineWeb(c *kingpin.CmdClause) {
	c.Flag("web.listen-address", "Address of the HTTP server: /metrics, /api/v1/hotkeys, /-/healthy, /-/ready. Overrides listen in the file.").
		Default(config.Default().Listen).IsSetByUser(&f.listenSet).StringVar(&f.listen)
	c.Flag("web.config.file", "exporter-toolkit web configuration file (TLS, basic auth).").Default("").StringVar(&f.webConfig)
	c.Flag("web.max-connections", "Most HTTP connections held at once; past it, the one gone longest without progress is closed to make room for a new one.").Default(fmt.Sprint(export.DefaultMaxConnections)).IntVar(&f.maxConns)
	c.Flag("web.enable-lifecycle", "Reload the configuration on POST /-/reload, as SIGHUP does.").BoolVar(&f.lifecycle)
	c.Flag("web.max-connections-per-client", "Most HTTP connections one client address holds at once; more are closed when accepted (0: no cap).").Default(fmt.Sprint(export.DefaultMaxConnectionsPerClient)).IntVar(&f.maxConnsPerClient)
	c.Flag("web.read-timeout", "Most time to read a whole request, headers and body.").Default(export.DefaultReadTimeout.String()).DurationVar(&f.readTimeout)
	c.Flag("web.write-timeout", "Most time to write an answer.").Default(export.DefaultWriteTimeout.String()).DurationVar(&f.writeTimeout)
	c.Flag("web.idle-timeout", "Most time a keep-alive connection stays open between requests.").Default(export.DefaultIdleTimeout.String()).DurationVar(&f.idle)
	c.Flag("web.enable-ingest", "Accept NDJSON events on POST /api/v1/events.").BoolVar(&f.enableIngest)
	c.Flag("web.ingest.rate-limit", "Requests per second POST /api/v1/events accepts, from all clients together (0: no limit); over it, 429.").
		Default(fmt.Sprint(jsonl.DefaultRequestsPerSecond)).Float64Var(&f.ingestRate)
	c.Flag("web.ingest.burst", "Requests POST /api/v1/events accepts at once above the rate limit.").Default(fmt.Sprint(jsonl.DefaultBurst)).IntVar(&f.ingestBurst)
}

// defineLog declares --log.level and --log.format.
func (f *flags) defineLog(c *kingpin.CmdClause, levelHelp string) {
	enumFlag(c.Flag("log.level", levelHelp), &f.logLevel, "info", "debug", "info", "warn", "error")
	enumFlag(c.Flag("log.format", "Log format: logfmt or json."), &f.logFormat, "logfmt", "logfmt", "json")
}

// defineWindow declares --window (run and demo: analyze's window is its
// whole input).
func (f *flags) defineWindow(c *kingpin.CmdClause) {
	c.Flag("window", "Sliding window shares are computed over. Overrides window in the file.").
		Default(config.Default().Window.String()).IsSetByUser(&f.windowSet).DurationVar(&f.window)
}

// defineSettings declares the detector settings every command applies
// over the file's: --threshold and --keys.
func (f *flags) defineSettings(c *kingpin.CmdClause) {
	c.Flag("threshold", "Traffic share (0-1) that makes a key hot. Overrides threshold in the file.").
		Default(fmt.Sprint(config.Default().Detector.Threshold)).IsSetByUser(&f.thresholdSet).Float64Var(&f.threshold)
	enumFlag(c.Flag("keys", "How key values are shown in metrics, the API and logs: plain, hash or redact. Overrides keys in the file; hash takes its secret from the file or "+secretEnv+".").
		IsSetByUser(&f.keysSet), &f.keys, string(export.KeysPlain), string(export.KeysPlain), string(export.KeysHash), string(export.KeysRedact))
}
