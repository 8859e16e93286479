package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

func TestWebConfigBasicAuth(t *testing.T) {
	t.Parallel() // a process of its own, on a port of its own
	webConfig := writeBasicAuthConfig(t)
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{NoWaitReady: true}, "demo", "--web.config.file", webConfig)

	get := func(user, password string) int {
		req, err := http.NewRequest(http.MethodGet, h.URL+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without credentials = %d, want 401", code)
	}
	if code := get("prometheus", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a wrong password = %d, want 401", code)
	}
	if code := get("prometheus", "s3cret"); code != http.StatusOK {
		t.Errorf("GET /metrics with the password = %d, want 200", code)
	}
}

// writeBasicAuthConfig writes a web config with one basic-auth user,
// prometheus with the password s3cret, and returns its path.
func writeBasicAuthConfig(t *testing.T) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webConfig, []byte("basic_auth_users:\n  prometheus: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return webConfig
}

func TestBadWebConfigStopsTheStart(t *testing.T) {
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webConfig, []byte("tls_server_config:\n  cert_file: /nonexistent.crt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run([]string{"demo", "--web.listen-address", "127.0.0.1:0", "--web.config.file", webConfig}, nil, &bytes.Buffer{}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "web config "+webConfig) {
		t.Errorf("exit %d, stderr %s; want 1 and the web config named", code, stderr.String())
	}
}
