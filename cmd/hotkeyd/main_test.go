package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// waitingParallel is how many tests that call t.Parallel run at once
// unless -parallel says otherwise. Go's default, GOMAXPROCS, suits tests
// that compute; this package's parallel tests mostly wait (on event-time
// spans, kills and restarts, emulators and child processes), so that two
// at a time left a two-core machine half idle while the package took
// nearly 20 minutes under -race; four at a time use about one core of
// the two, and leave room for the machine's other work. The tests that
// compute (analyze in this process, the browser), or whose judgement
// leans on the pace of the wall clock, do not call t.Parallel.
const waitingParallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(max(waitingParallel, runtime.GOMAXPROCS(0)))); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(testenv.WithBrowserClosed(m))
}

func TestConfigCheck(t *testing.T) {
	for _, c := range []struct {
		args       []string
		code       int
		out, error string
	}{
		{[]string{"--config.check", "--config.file", "testdata/config/valid-full.yml"}, 0, "testdata/config/valid-full.yml: valid\n", ""},
		{[]string{"--config", "testdata/config/valid-design.yml", "--config.check"}, 0, "testdata/config/valid-design.yml: valid\n", ""},
		{[]string{"--config.check", "--config.file", "testdata/config/invalid-keys.yml"}, 1, "",
			"hotkeyd: config testdata/config/invalid-keys.yml: keys: must be plain, hash or redact, got \"sha256\"\n"},
		{[]string{"--config.check", "--config.file", "testdata/config/invalid-detector-many.yml"}, 1, "",
			"hotkeyd: config testdata/config/invalid-detector-many.yml: detector.clear_threshold: 0.3 is above threshold 0.2\n" +
				"hotkeyd: config testdata/config/invalid-detector-many.yml: detector.limit_fraction: 1.5 is outside (0, 1]\n" +
				"hotkeyd: config testdata/config/invalid-detector-many.yml: detector.handful_keys: 1 must be at least 2\n" +
				"hotkeyd: config testdata/config/invalid-detector-many.yml: detector.shard_factor: 0.5 must be at least 1\n"},
		{[]string{"--config.check", "--config.file", "testdata/config/valid-empty.yml", "--threshold", "2"}, 1, "",
			"hotkeyd: flags: --threshold: must be above 0 and below 1, got 2\n"},
		{[]string{"demo", "--config.check", "--config.file", "testdata/config/invalid-listen.yml"}, 1, "",
			"hotkeyd: config testdata/config/invalid-listen.yml: listen: want host:port, got \"9529\"\n"},
		{[]string{"--config.check", "--config.file", "testdata/config/nope.yml"}, 1, "",
			"hotkeyd: read config: open testdata/config/nope.yml: no such file or directory\n"},
		{[]string{"--config.check"}, 1, "",
			"hotkeyd: read config: open hotkeyd.yaml: no such file or directory (name one with --config.file, start from hotkeyd.example.yaml, or try hotkeyd demo)\n"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(c.args, nil, &stdout, &stderr); code != c.code {
				t.Errorf("exit status %d, want %d; stderr: %s", code, c.code, stderr.String())
			}
			if stdout.String() != c.out || stderr.String() != c.error {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout.String(), stderr.String(), c.out, c.error)
			}
		})
	}
}

func TestFlagsOverrideFile(t *testing.T) {
	f := &flags{configFile: "testdata/config/valid-full.yml", configSet: true}
	cfg, err := loadConfig(f, true)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9529" || cfg.Detector.Threshold != 0.2 || cfg.History.Path != "/var/lib/hotkeyd/history" || cfg.History.Retention.Size != 2<<30 {
		t.Fatalf("file not read: %+v", cfg)
	}
	f.listen, f.listenSet = ":0", true
	f.window, f.windowSet = 5e9, true
	f.threshold, f.thresholdSet = 0.3, true
	f.keys, f.keysSet = string(export.KeysRedact), true
	f.historyPath, f.historyPathSet = "", true // no history
	f.historyRetention, f.historyRetSet = 64<<20, true
	cfg, err = loadConfig(f, true)
	if err == nil {
		t.Fatal("keys redact with the file's key_hash_secret accepted")
	}
	f.keys = string(export.KeysHash)
	if cfg, err = loadConfig(f, true); err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != ":0" || cfg.Window.Seconds() != 5 || cfg.Detector.Threshold != 0.3 || cfg.Keys != export.KeysHash || len(cfg.Sources) != 3 ||
		cfg.History.Path != "" || cfg.History.Retention.Size != 64<<20 {
		t.Errorf("flags did not override the file: %+v", cfg)
	}
	// A flag's bad value is named as the flag.
	f.historyRetention = 0
	if _, err := loadConfig(f, true); err == nil || err.Error() != "flags: --history.retention.size: must be positive, got 0" {
		t.Errorf("--history.retention.size 0: %v", err)
	}
	f.historyRetention = 64 << 20
	// Without a file, analyze and demo use the defaults.
	cfg, err = loadConfig(&flags{configFile: "hotkeyd.yaml"}, false)
	if err != nil || cfg.Listen != ":9529" || cfg.Detector.Threshold != 0.10 {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
}

func TestUsageAndVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, nil, &stdout, &stderr); code != 0 {
		t.Errorf("--help exit status %d", code)
	}
	for _, want := range []string{"run*", "analyze", "demo", "version", "hotkeyd COMMAND --help"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("--help lacks %s:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"version"}, nil, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "hotkeyd version ") || !strings.Contains(stdout.String(), "go version: go1.") {
		t.Errorf("version: %d %q", code, stdout.String())
	}
	stderr.Reset()
	if code := run([]string{"--no-such-flag"}, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "no-such-flag") {
		t.Errorf("bad flag: exit %d, stderr %q", code, stderr.String())
	}
}

// TestCommandFlags holds that each command's --help lists the flags it
// uses and no other, in this order, with the defaults it applies: analyze
// and demo read a configuration file only when one is named, so theirs has
// none.
func TestCommandFlags(t *testing.T) {
	web := []string{"web.listen-address", "web.config.file", "web.max-connections", "web.enable-lifecycle", "web.max-connections-per-client",
		"web.read-timeout", "web.write-timeout", "web.idle-timeout", "web.enable-ingest", "web.ingest.rate-limit", "web.ingest.burst"}
	config := []string{"config.file", "config", "config.check"}
	daemon := slices.Concat([]string{"help", "version"}, config, web, []string{"log.level", "log.format", "window", "threshold", "keys", "history.path", "history.retention.size"})
	for _, c := range []struct {
		cmd        string
		flags      []string
		configFlag string
	}{
		{"run", daemon, "--config.file=\"hotkeyd.yaml\""},
		{"demo", daemon, "--config.file=FILE"},
		{"analyze", slices.Concat([]string{"help", "version"}, config,
			[]string{"format", "top", "key-schema", "incidents", "table", "threshold", "keys", "log.level", "log.format"}), "--config.file=FILE"},
		{"version", []string{"help", "version"}, ""},
	} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{c.cmd, "--help"}, nil, &stdout, &stderr); code != 0 {
			t.Errorf("%s --help: exit status %d: %s", c.cmd, code, stderr.String())
		}
		var got []string
		for _, m := range regexp.MustCompile(`(?m)^(?:  -h, |      )--(?:\[no-\])?([a-z.-]+)`).FindAllStringSubmatch(stdout.String(), -1) {
			got = append(got, m[1])
		}
		if !slices.Equal(got, c.flags) {
			t.Errorf("%s --help lists the flags\n%q\nwant\n%q", c.cmd, got, c.flags)
		}
		if c.configFlag != "" && !strings.Contains(stdout.String(), c.configFlag) {
			t.Errorf("%s --help does not show %s:\n%s", c.cmd, c.configFlag, stdout.String())
		}
		// analyze's help ends with the input contract, the table the
		// README's input section holds (jsonl.TestREADMEContract).
		if contract := jsonl.ContractText(); (c.cmd == "analyze") != strings.HasSuffix(stdout.String(), "\n"+contract) {
			t.Errorf("%s --help and the input contract:\n%s", c.cmd, stdout.String())
		}
	}
	for _, c := range []struct{ args, stderr string }{
		{"analyze --window 1m x.jsonl", "hotkeyd: unknown long flag '--window' (see hotkeyd analyze --help)\n"},
		{"analyze --web.listen-address :0 x.jsonl", "hotkeyd: unknown long flag '--web.listen-address' (see hotkeyd analyze --help)\n"},
		{"demo --top 3", "hotkeyd: unknown long flag '--top' (see hotkeyd demo --help)\n"},
		{"--log.level debug demo", "hotkeyd: unexpected demo (the command comes first: hotkeyd demo [<flags>])\n"},
		{"analyse x.jsonl", "hotkeyd: unexpected analyse (see hotkeyd --help for the commands)\n"},
		{"--no-such-flag", "hotkeyd: unknown long flag '--no-such-flag' (see hotkeyd run --help)\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(strings.Fields(c.args), nil, &stdout, &stderr); code != 2 || stderr.String() != c.stderr {
			t.Errorf("hotkeyd %s: exit status %d, stderr %q; want 2, %q", c.args, code, stderr.String(), c.stderr)
		}
	}
}

// TestREADMEFlags holds the README's flag table to the program: every flag
// of every command is in it, with the commands that take it, and it names
// no flag the program lacks.
func TestREADMEFlags(t *testing.T) {
	reference, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(reference), "\n## Flags\n")
	section, _, _ = strings.Cut(section, "\n## ")
	// The README's commands per flag.
	documented := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `--") || len(cells) < 3 {
			continue
		}
		cmds := []string{"run", "demo", "analyze"}
		if cells[1] != "all" {
			cmds = nil
			for _, m := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(cells[1], -1) {
				cmds = append(cmds, m[1])
			}
		}
		for _, m := range regexp.MustCompile("`--([a-z.-]+)").FindAllStringSubmatch(cells[0], -1) {
			documented[m[1]] = cmds
		}
	}
	if len(documented) == 0 {
		t.Fatal("no flag table under ## Flags in docs/configuration.md")
	}
	// The program's.
	var f flags
	actual := map[string][]string{}
	for _, cmd := range newApp(&f).Model().Commands {
		for _, fl := range cmd.Flags {
			actual[fl.Name] = append(actual[fl.Name], cmd.Name)
		}
	}
	actual["version"] = nil // the application's own, no command's
	delete(documented, "help")
	for name, cmds := range actual {
		got, ok := documented[name]
		switch {
		case !ok:
			t.Errorf("README's flag table lacks --%s (%s)", name, strings.Join(cmds, ", "))
		case !slices.Equal(got, cmds):
			t.Errorf("README says --%s is a flag of %q; it is one of %q", name, got, cmds)
		}
	}
	for name := range documented {
		if _, ok := actual[name]; !ok {
			t.Errorf("README's flag table names --%s, which no command has", name)
		}
	}
}

// TestMakefileStampsVersion: a binary linked with the flags make build
// uses reports the checkout's version and revision, even built with
// -buildvcs=false (where Go records no revision of its own), as the
// README's "Running it" says.
func TestMakefileStampsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hotkeyd")
	}
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	root := filepath.Join("..", "..")
	revision, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	ldflags, err := exec.Command("make", "-s", "-C", root, "ldflags").Output()
	if err != nil {
		t.Fatalf("make ldflags: %v", err)
	}
	version := regexp.MustCompile(`version\.Version=(\S+)`).FindSubmatch(ldflags)
	if version == nil || !strings.Contains(string(ldflags), "version.Revision="+strings.TrimSpace(string(revision))) {
		t.Fatalf("make ldflags: %s", ldflags)
	}
	bin := filepath.Join(t.TempDir(), "hotkeyd")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", strings.TrimSpace(string(ldflags)), "-o", bin, "./cmd/hotkeyd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	want := fmt.Sprintf("hotkeyd version %s\nrevision: %s\n", version[1], strings.TrimSpace(string(revision)))
	if err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("hotkeyd version: %v\n%s\nwant it to start with\n%s", err, out, want)
	}
}
