package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestSDKLogsThroughTheLogger runs a Streams, a Kinesis and an S3
// CloudTrail source with no credentials but the EC2 instance metadata
// service, whose IMDSv2 token call is refused: each one's SDK then falls
// back to IMDSv1 with a warning, which must come out as one of hotkeyd's
// own log lines at debug level (logger aws under the reader's, the SDK's
// level as sdk_level), never as the SDK's "SDK <date> WARN" line: every
// AWS client is built by one helper (internal/awsclient).
//
// The instance metadata service is a stub: no emulator of it exists, and
// the test needs only its refusal of the token (403) and of credentials.
func TestSDKLogsThroughTheLogger(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer imds.Close()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "hotkeyd.yaml")
	cfg := "sources:\n  - type: dynamodb-streams\n    tables: [orders]\n    region: us-east-1\n    endpoint: http://127.0.0.1:1\n" +
		"  - type: kinesis\n    streams: [orders-changes]\n    region: us-east-1\n    endpoint: http://127.0.0.1:1\n    checkpoint_dir: " + filepath.Join(dir, "kinesis") + "\n" +
		"  - type: cloudtrail\n    s3: {bucket: trail, region: us-east-1, endpoint: \"http://127.0.0.1:1\"}\n    checkpoint_dir: " + filepath.Join(dir, "cloudtrail") + "\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{NoWaitReady: true, Env: []string{
		"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_PROFILE=",
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "none"), "AWS_CONFIG_FILE=" + filepath.Join(dir, "none"),
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=", "AWS_WEB_IDENTITY_TOKEN_FILE=",
		"AWS_EC2_METADATA_DISABLED=false", "AWS_EC2_METADATA_SERVICE_ENDPOINT=" + imds.URL,
	}}, "--config.file", cfgPath, "--log.level", "debug")
	for _, logger := range []string{"aws", "kinesis.aws", "cloudtrail.aws"} {
		line := h.WaitLog(t, " sdk_level=warn logger="+logger, settle)
		if !strings.Contains(line, "level=debug ") || !strings.Contains(line, `msg="falling back to IMDSv1`) || !strings.HasSuffix(line, " logger="+logger) {
			t.Errorf("SDK line not through the logger at debug: %s", line)
		}
	}
	for _, l := range strings.Split(h.Stderr(), "\n") {
		if strings.HasPrefix(l, "SDK ") {
			t.Errorf("SDK line bypasses the logger: %s", l)
		}
	}
}
