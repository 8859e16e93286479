package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDaemonNeedsASource: a configuration without sources, and HTTP
// ingest off, is refused at start with the reason (package daemon builds
// the daemon; this is what the binary says).
func TestDaemonNeedsASource(t *testing.T) {
	var stderr bytes.Buffer
	code := run([]string{"--config.file", "testdata/config/valid-empty.yml", "--web.listen-address", "127.0.0.1:0"}, nil, &bytes.Buffer{}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "no sources") {
		t.Errorf("exit %d, stderr %s", code, stderr.String())
	}
}
