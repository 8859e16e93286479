package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// secretKey is a partition key value that must never leave the process
// under keys: hash or redact, wherever a bad line puts it.
const secretKey = "SECRETKEY4242"

// leakyLines are JSON lines whose rejection would quote the key: a log
// whose field names are mapped wrong puts keys in op or ts.
var leakyLines = []string{
	`{"table":"orders","pk":"k","op":"` + secretKey + `"}`,
	`{"table":"orders","pk":"k","op":"read","ts":"` + secretKey + `"}`,
	`{"table":"orders","pk":"k","op":"read","ts":"2026-11-22T10:00:00Z","units":1e999,"x":"` + secretKey + `"}`,
	`{"table":"` + secretKey + ` x","pk":"k","op":"read"}`,
	`{"table":"orders","pk":"` + secretKey + `","op":"GetItem","units":101}`,
}

// leakyCloudTrail is a CloudTrail file whose rejected records would quote
// the key: a PartiQL statement the reader cannot parse, an eventTime that
// is not a time.
var leakyCloudTrail = `{"Records":[` +
	`{"eventVersion":"1.08","eventTime":"2026-11-22T10:00:00Z","eventSource":"dynamodb.amazonaws.com","eventName":"ExecuteStatement","requestParameters":{"statement":"UPSERT 'USER#` + secretKey + `' INTO orders"}},` +
	`{"eventVersion":"1.08","eventTime":"2026-11-22T10:00:00Z","eventSource":"dynamodb.amazonaws.com","eventName":"ExecuteStatement","requestParameters":{"statement":"'` + secretKey + `' SELECT"}},` +
	`{"eventVersion":"1.08","eventTime":"` + secretKey + `","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","requestParameters":{"tableName":"orders","key":{"id":"a"}}}` +
	`]}`

// TestMaskedKeysNeverLeaveInErrors runs the daemon and analyze under keys:
// redact and keys: hash on input whose rejections quote a key (JSON lines
// followed and POSTed, a CloudTrail file): the key shows in no log line,
// no HTTP answer and no analyze output, and the rejections are still
// described, with the key masked.
func TestMaskedKeysNeverLeaveInErrors(t *testing.T) {
	for _, mode := range []struct{ name, config, masked string }{
		{"redact", "keys: redact\n", `<redacted>`},
		{"hash", "keys: hash\nkey_hash_secret: s3cret\n", `[0-9a-f]{8}`},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel() // a process of its own, on a port of its own
			dir := t.TempDir()
			logPath := filepath.Join(dir, "access.log")
			ctDir := filepath.Join(dir, "cloudtrail")
			if err := os.WriteFile(logPath, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(ctDir, 0o700); err != nil {
				t.Fatal(err)
			}
			cfg := mode.config + fmt.Sprintf("sources:\n  - type: jsonl\n    paths: [%q]\n  - type: cloudtrail\n    paths: [%q]\n    poll_interval: 200ms\n",
				logPath, filepath.Join(ctDir, "*.json"))
			cfgPath := filepath.Join(dir, "hotkeyd.yaml")
			if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "--config.file", cfgPath, "--web.enable-ingest")
			h.WaitLog(t, `msg="following file"`, settle)

			body := strings.Join(leakyLines, "\n") + "\n"
			_, _, answer := post(t, h, []byte(body), nil)
			if err := os.WriteFile(logPath, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ctDir, "delivery.json"), []byte(leakyCloudTrail), 0o600); err != nil {
				t.Fatal(err)
			}
			waitMetric(t, h, `hotkeyd_input_rejected_total{reason="bad_op",source="cloudtrail"}`, 2, 20*time.Second)
			waitMetric(t, h, `hotkeyd_input_rejected_total{reason="bad_time",source="jsonl"}`, 1, 20*time.Second)
			_, metrics := h.Get(t, "/metrics")
			_, api := h.Get(t, "/api/v1/hotkeys")

			code, out, errOut := runAnalyzeCmd(t, "", "analyze", "--config", cfgPath, logPath, filepath.Join(ctDir, "delivery.json"))
			// Every record is rejected: analyze says nothing was usable
			// and exits 1.
			if code != 1 || !strings.Contains(errOut, "nothing usable") {
				t.Fatalf("analyze: exit %d, want 1 (nothing usable)\n%s", code, errOut)
			}
			for where, text := range map[string]string{
				"the log": h.Stderr(), "the ingest answer": answer, "/metrics": string(metrics), "/api/v1/hotkeys": string(api),
				"analyze's report": out, "analyze's stderr": errOut,
			} {
				if strings.Contains(text, secretKey) {
					t.Errorf("%s shows the key:\n%s", where, text)
				}
			}
			// The rejections are still described, the key masked.
			var resp jsonl.Response
			if err := json.Unmarshal([]byte(answer), &resp); err != nil || len(resp.Errors) < 2 {
				t.Fatalf("ingest answer %s: %v", answer, err)
			}
			for _, c := range []struct{ where, text, want string }{
				{"the log (jsonl)", h.Stderr(), `source=jsonl reason=bad_op error="[^"]*access\.log: line 1: bad_op: unknown operation \\"` + mode.masked},
				{"the log (cloudtrail)", h.Stderr(), `reason=bad_op error="[^"]*delivery\.json: record 1: ExecuteStatement: statement \\"` + mode.masked},
				{"the ingest answer", resp.Errors[1], `^line 2: bad_time: "` + mode.masked + `" is not an RFC 3339 time$`},
				{"analyze's stderr", errOut, `skipped \(bad_op\): \S*access\.log: line 1: bad_op: unknown operation "` + mode.masked},
			} {
				if !regexp.MustCompile(c.want).MatchString(c.text) {
					t.Errorf("%s does not describe the rejection as %s:\n%s", c.where, c.want, c.text)
				}
			}
		})
	}
}
