package export

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/crypto/bcrypt"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// testServer is a Server serving on a real socket on 127.0.0.1.
type testServer struct {
	*Server
	url    string
	client *http.Client
	stop   func() error
}

// startServer serves cfg on 127.0.0.1:0 until the test ends (or stop).
// webConfig, when not empty, is the exporter-toolkit web config file.
func startServer(t *testing.T, cfg ServerConfig, webConfig string) *testServer {
	t.Helper()
	log := zaptest.NewLogger(t)
	if cfg.Gatherer == nil {
		reg, err := NewRegistry(BuildInfo{Version: "1.2.3", Revision: "abc", GoVersion: "go1.26"})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Gatherer, cfg.Registerer = reg, reg
	}
	if cfg.Live == nil {
		cfg.Live = NewLive(nil)
	}
	if cfg.Readiness == nil {
		cfg.Readiness = NewReadiness()
	}
	cfg.Web = &web.FlagConfig{WebConfigFile: &webConfig}
	s, err := NewServer(log, cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	stopped := false
	var stopErr error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			stopErr = <-done
			client.CloseIdleConnections()
		}
		return stopErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testServer{Server: s, url: "http://" + l.Addr().String(), client: client, stop: stop}
}

func (ts *testServer) do(t *testing.T, method, path, body string, header http.Header) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, ts.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// readySource is a source whose readiness the test sets.
type readySource struct{ err error }

func (readySource) Name() string                            { return "streams" }
func (readySource) Run(context.Context, traffic.Sink) error { return nil }
func (s *readySource) Ready() error                         { return s.err }

func TestServerHealthAndReadiness(t *testing.T) {
	ready := NewReadiness()
	src := &readySource{err: errors.New("endpoint unreachable")}
	ready.Watch(src, traffic.Source(nil))
	ts := startServer(t, ServerConfig{Readiness: ready}, "")

	check := func(path string, wantCode int, wantBody string) {
		t.Helper()
		code, _, body := ts.do(t, "GET", path, "", nil)
		if code != wantCode || !strings.Contains(body, wantBody) {
			t.Errorf("GET %s = %d %q, want %d containing %q", path, code, body, wantCode, wantBody)
		}
	}
	check("/-/healthy", 200, "healthy")
	check("/-/ready", 503, "pipeline not started")
	ready.SetRunning(true, "")
	check("/-/ready", 503, "source streams: endpoint unreachable")
	src.err = nil
	check("/-/ready", 200, "ready")
	check("/", 200, "hotkeyd")
	check("/nothing-here", 404, "")
	if code, _, _ := ts.do(t, "HEAD", "/-/healthy", "", nil); code != 200 {
		t.Errorf("HEAD /-/healthy = %d", code)
	}

	if err := ts.stop(); err != nil {
		t.Fatalf("Serve after cancel = %v, want nil", err)
	}
	if err := ready.Check(); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("readiness after shutdown = %v, want shutting down", err)
	}
}

func TestServerMetrics(t *testing.T) {
	ts := startServer(t, ServerConfig{}, "")
	code, hdr, body := ts.do(t, "GET", "/metrics", "", nil)
	buildInfo := regexp.MustCompile(`(?m)^hotkeyd_build_info\{[^}]*goversion="go1.26",revision="abc",[^}]*version="1.2.3"\} 1$`)
	if code != 200 || !buildInfo.MatchString(body) ||
		!strings.Contains(body, "go_goroutines") || !strings.Contains(body, "process_") {
		t.Fatalf("GET /metrics = %d %s\n%s", code, hdr.Get("Content-Type"), body)
	}
	_, hdr, body = ts.do(t, "GET", "/metrics", "", http.Header{"Accept": {"application/openmetrics-text;version=1.0.0"}})
	if !strings.HasPrefix(hdr.Get("Content-Type"), "application/openmetrics-text") || !strings.HasSuffix(body, "# EOF\n") {
		t.Errorf("OpenMetrics not negotiated: %q", hdr.Get("Content-Type"))
	}
}

func TestServerHotkeysAPI(t *testing.T) {
	live := NewLive(nil)
	m := mustMasker(t, KeysHash, "k")
	ts := startServer(t, ServerConfig{Live: live, Masker: m}, "")

	code, _, body := ts.do(t, "GET", "/api/v1/hotkeys", "", nil)
	if code != 503 || !strings.Contains(body, "no report yet") {
		t.Errorf("before the first report: %d %s", code, body)
	}

	live.Update(handState())
	get := func(query string) report.Report {
		t.Helper()
		code, hdr, body := ts.do(t, "GET", "/api/v1/hotkeys"+query, "", nil)
		if code != 200 || hdr.Get("Content-Type") != "application/json" {
			t.Fatalf("GET /api/v1/hotkeys%s = %d %s %s", query, code, hdr.Get("Content-Type"), body)
		}
		if strings.Contains(body, "alice") {
			t.Errorf("the API shows a key in the clear: %s", body)
		}
		if strings.Contains(body, "null") {
			t.Errorf("the API has nulls where arrays belong: %s", body)
		}
		var r report.Report
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	all := get("")
	if len(all.Tables) != 2 || all.Events != 350 || all.Tables[0].Findings[0].Key != m.Mask("USER#alice") {
		t.Errorf("report = %+v", all)
	}
	if r := get("?table=orders&index=status-index"); len(r.Tables) != 1 || r.Tables[0].Index != "status-index" {
		t.Errorf("?index filter: %+v", r.Tables)
	}
	if r := get("?table=orders&index="); len(r.Tables) != 1 || r.Tables[0].Index != "" {
		t.Errorf("?index= (base table) filter: %+v", r.Tables)
	}
	if r := get("?table=sessions"); len(r.Tables) != 0 {
		t.Errorf("?table=sessions: %+v", r.Tables)
	}
	// The published report itself is untouched by masking.
	if live.Load().Report.Tables[0].Findings[0].Key != "USER#alice" {
		t.Error("serving the API modified the live report")
	}
}

func TestServerEventsEndpoint(t *testing.T) {
	off := startServer(t, ServerConfig{}, "")
	code, _, body := off.do(t, "POST", "/api/v1/events", `{"table":"tbl","pk":"k"}`, nil)
	if code != 404 || !strings.Contains(body, "disabled") || !strings.Contains(body, "enable") {
		t.Errorf("disabled ingest: %d %q, want 404 saying how to enable it", code, body)
	}

	var got string
	on := startServer(t, ServerConfig{Events: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.WriteHeader(http.StatusAccepted)
	})}, "")
	if code, _, _ := on.do(t, "POST", "/api/v1/events", "line\n", nil); code != 202 || got != "line\n" {
		t.Errorf("enabled ingest: %d, handler saw %q", code, got)
	}
	code, hdr, _ := on.do(t, "GET", "/api/v1/events", "", nil)
	if code != 405 || !strings.Contains(hdr.Get("Allow"), "POST") {
		t.Errorf("GET /api/v1/events = %d Allow=%q, want 405 allowing POST", code, hdr.Get("Allow"))
	}
}

// TestServerDrainsInFlight checks the shutdown order: readiness goes false
// first, then requests in flight finish before Serve returns.
func TestServerDrainsInFlight(t *testing.T) {
	ready := NewReadiness()
	ready.SetRunning(true, "")
	entered, release := make(chan struct{}), make(chan struct{})
	ts := startServer(t, ServerConfig{Readiness: ready, Events: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		w.WriteHeader(http.StatusAccepted)
	})}, "")
	codes := make(chan int, 1)
	go func() {
		resp, err := ts.client.Post(ts.url+"/api/v1/events", "text/plain", strings.NewReader("x"))
		if err != nil {
			codes <- 0
			return
		}
		resp.Body.Close()
		codes <- resp.StatusCode
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- ts.stop() }()
	for ready.Check() == nil {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) with a request in flight", err)
	default:
	}
	close(release)
	if code := <-codes; code != 202 {
		t.Errorf("in-flight request ended with %d, want 202", code)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Serve = %v", err)
	}
}

func TestRunReportsListenError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	reg, _ := NewRegistry(BuildInfo{})
	addrs, cfgFile := []string{l.Addr().String()}, ""
	s, err := NewServer(zap.NewNop(), ServerConfig{Gatherer: reg, Live: NewLive(nil), Readiness: NewReadiness(),
		Web: &web.FlagConfig{WebListenAddresses: &addrs, WebConfigFile: &cfgFile}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Run on a taken address = %v", err)
	}
}

// writeTLSConfig writes a self-signed certificate for 127.0.0.1 and an
// exporter-toolkit web config with TLS and one basic-auth user, and returns
// the config path and a pool trusting the certificate.
func writeTLSConfig(t *testing.T, user, password string) (string, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hotkeyd test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := "tls_server_config:\n  cert_file: " + certPath + "\n  key_file: " + keyPath +
		"\nbasic_auth_users:\n  " + user + ": " + string(hash) + "\n"
	cfgPath := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return cfgPath, pool
}

func TestServerTLSAndBasicAuth(t *testing.T) {
	cfgPath, pool := writeTLSConfig(t, "prometheus", "s3cret")
	ts := startServer(t, ServerConfig{}, cfgPath)
	ts.client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	ts.url = strings.Replace(ts.url, "http://", "https://", 1)

	if code, _, _ := ts.do(t, "GET", "/metrics", "", nil); code != http.StatusUnauthorized {
		t.Errorf("unauthenticated GET /metrics = %d, want 401", code)
	}
	wrong := http.Header{"Authorization": {"Basic " + basicAuth("prometheus", "guess")}}
	if code, _, _ := ts.do(t, "GET", "/metrics", "", wrong); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a wrong password = %d, want 401", code)
	}
	good := http.Header{"Authorization": {"Basic " + basicAuth("prometheus", "s3cret")}}
	code, _, body := ts.do(t, "GET", "/metrics", "", good)
	if code != 200 || !strings.Contains(body, "hotkeyd_build_info") {
		t.Errorf("authenticated GET /metrics = %d", code)
	}
	if code, _, _ := ts.do(t, "GET", "/-/healthy", "", good); code != 200 {
		t.Errorf("authenticated GET /-/healthy = %d", code)
	}

	// Plain HTTP to the TLS port is not served.
	plain := &http.Client{Timeout: 5 * time.Second}
	defer plain.CloseIdleConnections()
	if resp, err := plain.Get(strings.Replace(ts.url, "https://", "http://", 1) + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP was served on the TLS port")
		}
	}
	ts.client.CloseIdleConnections()
}

func basicAuth(user, password string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, password)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

// TestServerMove moves a running server to another listener: the new
// address answers at once, a keep-alive connection to the old one is
// answered and then closed, and the old address stops accepting.
func TestServerMove(t *testing.T) {
	ts := startServer(t, ServerConfig{}, "")
	oldHost := strings.TrimPrefix(ts.url, "http://")
	kept, err := net.Dial("tcp", oldHost)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Move(l); err != nil {
		t.Fatal(err)
	}
	ts.url = "http://" + l.Addr().String()
	if code, _, _ := ts.do(t, "GET", "/-/healthy", "", nil); code != http.StatusOK {
		t.Errorf("new address: %d", code)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", oldHost)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the old address still accepts connections")
		}
	}
	if _, err := io.WriteString(kept, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n"); err == nil {
		kept.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(kept)
		if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 200") {
			t.Errorf("a connection to the old address got %q", b)
		}
	}
}
