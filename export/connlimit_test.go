package export

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCapClosesTheConnectionWithoutProgress fills a cap of 4 connections
// with clients that trickle headers, one of which sent a whole request
// since; each probe then still gets in and is answered, and the place it
// takes is the one of the connection gone longest without progress: the
// oldest trickling, not the one that was answered since.
func TestCapClosesTheConnectionWithoutProgress(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts := startServer(t, ServerConfig{Gatherer: reg, Registerer: reg, MaxConnections: 4, MaxConnectionsPerClient: -1}, "")
	host := strings.TrimPrefix(ts.url, "http://")
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// answered finishes c's request and reads its answer: c stays open,
	// idle, having made progress now.
	answered := func(c net.Conn) {
		t.Helper()
		if _, err := io.WriteString(c, "\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// open reports whether the server still holds c: a read returns its
	// close at once (the place is given up before the new connection is
	// served), or times out while it is held.
	open := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
	}
	probe := func() {
		t.Helper()
		code, _, _ := ts.do(t, "GET", "/-/healthy", "", http.Header{"Connection": {"close"}})
		if code != http.StatusOK {
			t.Fatalf("probe: %d", code)
		}
	}

	c1, c2, c3, c4 := dial(), dial(), dial(), dial()
	waitHeld(t, ts, 4)
	answered(c2)
	probe()
	waitHeld(t, ts, 3) // the probe's connection closed
	if open(c1) || !open(c2) || !open(c3) || !open(c4) {
		t.Fatalf("first probe: want the oldest trickling connection closed, the rest held: %v %v %v %v", open(c1), open(c2), open(c3), open(c4))
	}
	c5 := dial()
	waitHeld(t, ts, 4)
	probe()
	waitHeld(t, ts, 3)
	if !open(c2) || open(c3) || !open(c4) || !open(c5) {
		t.Errorf("second probe: want c3 closed (the oldest without progress; c2 was answered since): c2 %v c3 %v c4 %v c5 %v", open(c2), open(c3), open(c4), open(c5))
	}
	if v := testutil.ToFloat64(ts.closed.WithLabelValues(closedCapFull)); v != 2 {
		t.Errorf(`hotkeyd_http_connections_closed_total{reason="cap_full"} = %g, want 2`, v)
	}
}

// waitHeld waits until the server's cap holds n connections.
func waitHeld(t *testing.T, ts *testServer, n int) {
	t.Helper()
	held := func() int {
		if c := ts.cap.Load(); c != nil {
			return c.held()
		}
		return -1
	}
	for deadline := time.Now().Add(2 * time.Minute); held() != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cap holds %d connections, want %d", held(), n)
		}
	}
}
