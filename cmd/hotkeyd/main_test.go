package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

func TestMain(m *testing.M) {
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
	if cfg.Listen != "127.0.0.1:9529" || cfg.Threshold != 0.2 {
		t.Fatalf("file not read: %+v", cfg)
	}
	f.listen, f.listenSet = ":0", true
	f.window, f.windowSet = 5e9, true
	f.threshold, f.thresholdSet = 0.3, true
	f.keys, f.keysSet = string(export.KeysRedact), true
	cfg, err = loadConfig(f, true)
	if err == nil {
		t.Fatal("keys redact with the file's key_hash_secret accepted")
	}
	f.keys = string(export.KeysHash)
	if cfg, err = loadConfig(f, true); err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != ":0" || cfg.Window.Seconds() != 5 || cfg.Threshold != 0.3 || cfg.Keys != export.KeysHash || len(cfg.Sources) != 3 {
		t.Errorf("flags did not override the file: %+v", cfg)
	}
	// Without a file, analyze and demo use the defaults.
	cfg, err = loadConfig(&flags{configFile: "hotkeyd.yaml"}, false)
	if err != nil || cfg.Listen != ":9529" || cfg.Threshold != 0.10 {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
}

func TestUsageAndVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, nil, &stdout, &stderr); code != 0 {
		t.Errorf("--help exit status %d", code)
	}
	for _, want := range []string{"--config.file", "--web.listen-address", "--log.level", "web.enable-ingest", "analyze", "demo", "version"} {
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
