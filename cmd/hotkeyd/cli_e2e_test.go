package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// runBinary runs the real hotkeyd binary as a user types it, in dir, with
// env added to the environment, and returns its exit status and output.
func runBinary(t *testing.T, dir string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run hotkeyd %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// TestCommandLine runs the commands a newcomer types and checks the exit
// status and the exact words.
func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("empty.yaml", "# nothing yet\n")
	write("typo.yaml", "threshhold: 0.2\n")
	write("sixty.yaml", "window: sixty\n")
	write("jsonl.yaml", "sources:\n  - type: jsonl\n    paths: [access.log]\n")
	write("bad-web.yml", "tls_server_config:\n  cert_file: /nonexistent.crt\n")
	write("old-hold.yaml", "sources:\n  - type: jsonl\n    paths: [access.log]\ndetector:\n  hold_evaluations: 3\n")
	write("old-describe.yaml", "sources:\n  - type: dynamodb-streams\n    tables: [orders]\n    region: us-east-1\n    describe_interval: 1m\n")
	noSecret := "hotkeyd: flags: --keys: hash needs a secret: key_hash_secret or key_hash_secret_file in the config file, or HOTKEYD_KEY_HASH_SECRET in the environment\n"

	_, version, _ := runBinary(t, dir, nil, "version")
	for _, c := range []struct {
		args     []string
		env      []string
		code     int
		out, err string
	}{
		// --config.check runs every check run makes.
		{[]string{"--config.check", "--config.file", "empty.yaml"}, nil, 1, "",
			"hotkeyd: no sources: list some under sources: in the config file, or pass --web.enable-ingest\n"},
		{[]string{"--config.check", "--config.file", "empty.yaml", "--web.enable-ingest"}, nil, 0, "empty.yaml: valid\n", ""},
		{[]string{"--config.check", "--config.file", "jsonl.yaml"}, nil, 0, "jsonl.yaml: valid\n", ""},
		{[]string{"--config.check", "--config.file", "jsonl.yaml", "--web.config.file", "bad-web.yml"}, nil, 1, "",
			"hotkeyd: web config bad-web.yml: missing one of key or key_file\n"},
		// demo and analyze read a file only when named, and check without running.
		{[]string{"demo", "--config.check"}, nil, 0, "defaults: valid\n", ""},
		{[]string{"demo", "--config.check", "--config", "jsonl.yaml"}, nil, 0, "jsonl.yaml: valid\n", ""},
		{[]string{"analyze", "--config.check", "no-such-input.jsonl"}, nil, 0, "defaults: valid\n", ""},
		{[]string{"analyze", "--config.check", "--config.file", "typo.yaml", "x.jsonl"}, nil, 1, "",
			"hotkeyd: config typo.yaml: threshhold: unknown key (did you mean threshold?)\n"},
		{[]string{"analyze", "--config.check", "--key-schema", "orders", "x.jsonl"}, nil, 2, "",
			"hotkeyd: --key-schema: \"orders\": want TABLE=PK or TABLE=PK,SK\n"},
		{[]string{"analyze"}, nil, 2, "", "hotkeyd: analyze: name at least one FILE (\"-\" is stdin) (see hotkeyd analyze --help)\n"},
		// Flags.
		{[]string{"--version"}, nil, 0, version, ""},
		{[]string{"demo", "--log.format", "yaml"}, nil, 2, "", "hotkeyd: --log.format: must be logfmt or json, got \"yaml\" (see hotkeyd demo --help)\n"},
		{[]string{"analyze", "--format", "yaml", "x.jsonl"}, nil, 2, "", "hotkeyd: --format: must be text, json or html, got \"yaml\" (see hotkeyd analyze --help)\n"},
		{[]string{"demo", "--keys", "hash", "--config.check"}, nil, 1, "", noSecret},
		{[]string{"demo", "--keys", "hash", "--config.check"}, []string{"HOTKEYD_KEY_HASH_SECRET=s3cret"}, 0, "defaults: valid\n", ""},
		// A key in its former form still works, and says what to write.
		{[]string{"--config.check", "--config.file", "old-hold.yaml"}, nil, 0, "old-hold.yaml: valid\n",
			"hotkeyd: deprecated: detector.hold_evaluations: 3 is read as detector.hold: 2s (a span of event time; the default is 1s): write that instead\n"},
		{[]string{"--config.check", "--config.file", "old-describe.yaml"}, nil, 0, "old-describe.yaml: valid\n",
			"hotkeyd: deprecated: sources[0].describe_interval: read as list_interval, its name now: write that instead\n"},
		// YAML errors name the key as a path, without Go types.
		{[]string{"--config.check", "--config.file", "sixty.yaml"}, nil, 1, "",
			"hotkeyd: config sixty.yaml: window: \"sixty\" is not a duration such as 90s, 5m or 1h30m\n"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errOut := runBinary(t, dir, c.env, c.args...)
			if code != c.code || out != c.out || errOut != c.err {
				t.Errorf("hotkeyd %s\n got: %d, stdout %q, stderr %q\nwant: %d, stdout %q, stderr %q",
					strings.Join(c.args, " "), code, out, errOut, c.code, c.out, c.err)
			}
		})
	}

	code, help, _ := runBinary(t, dir, nil, "--help")
	if code != 0 || !strings.Contains(help, "hotkeyd COMMAND --help") || !strings.Contains(help, "--[no-]version") {
		t.Errorf("--help: exit %d, lacks the commands' help or --version:\n%s", code, help)
	}
	code, help, _ = runBinary(t, dir, nil, "run", "--help")
	if code != 0 || !strings.Contains(help, "--config=FILE") || !strings.Contains(help, "--web.listen-address") {
		t.Errorf("run --help: exit %d, lacks --config or --web.listen-address:\n%s", code, help)
	}
}
