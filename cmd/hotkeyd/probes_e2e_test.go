package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// slowClients opens n connections to the daemon at base from the loopback
// address from (one client) and trickles request headers on each, a byte
// every 200 ms, never finishing them, until ctx ends; a connection the
// daemon closes is dialled again after a pause, as an attacker would. It
// returns when every connection was dialled once, with a count of those
// open.
func slowClients(ctx context.Context, t testing.TB, base, from string, n int) (open *atomic.Int64, wait func()) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: time.Second}
	open = &atomic.Int64{}
	var wg, dialled sync.WaitGroup
	dialled.Add(n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", u.Host)
				if first {
					first = false
					dialled.Done()
				}
				if err != nil {
					select {
					case <-ctx.Done():
					case <-time.After(100 * time.Millisecond):
					}
					continue
				}
				open.Add(1)
				stop := context.AfterFunc(ctx, func() { c.Close() })
				req := fmt.Sprintf("GET /metrics HTTP/1.1\r\nHost: %s\r\nX-Slow-%d: ", u.Host, i)
				for j := 0; ctx.Err() == nil; j++ {
					b := []byte{'a'}
					if j < len(req) {
						b = []byte{req[j]}
					}
					c.SetWriteDeadline(time.Now().Add(time.Second))
					if _, err := c.Write(b); err != nil {
						break
					}
					// A closed connection shows when the next write fails
					// or a read returns: look without waiting.
					c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
					if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
						break
					}
				}
				stop()
				c.Close()
				open.Add(-1)
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
	}
	dialled.Wait()
	return open, wg.Wait
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// slowClientsFrom spreads n slow connections (slowClients) over the
// loopback addresses 127.0.0.2 onwards, per of them from each.
func slowClientsFrom(ctx context.Context, t testing.TB, base string, n, per int) (open func() int64, wait func()) {
	t.Helper()
	var opens []*atomic.Int64
	var waits []func()
	for i := 0; n > 0; i++ {
		o, w := slowClients(ctx, t, base, fmt.Sprintf("127.0.0.%d", 2+i), min(n, per))
		opens, waits = append(opens, o), append(waits, w)
		n -= per
	}
	return func() int64 {
			var sum int64
			for _, o := range opens {
				sum += o.Load()
			}
			return sum
		}, func() {
			for _, w := range waits {
				w()
			}
		}
}

// probe asks path on a new connection, as the kubelet does, and returns
// the time the answer took; it gives up after timeout.
func probe(base, path string, timeout time.Duration) (time.Duration, error) {
	c := http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	resp, err := c.Get(base + path)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return time.Since(start), nil
}

// slowConnections is how many connections the slow clients trickle
// headers on: more than the 512 the daemon holds at once.
const slowConnections = 700

// TestProbesAnswerUnderSlowConnections runs the daemon while one client
// (127.0.0.2) holds 700 connections trickling request headers — more than
// the 512 the daemon serves at once — and probes /-/healthy from another
// (127.0.0.1) five times a second for 5 s: every probe is answered
// (within probeTimeout; the benchmark below measures the milliseconds),
// because one client holds at most --web.max-connections-per-client
// connections and the others are closed when accepted.
func TestProbesAnswerUnderSlowConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo")
	ctx, cancel := context.WithCancel(context.Background())
	open, wait := slowClients(ctx, t, h.URL, "127.0.0.2", slowConnections)
	defer wait()
	defer cancel()
	h.WaitLog(t, "connections closed: too many from one client", settle)

	var failed []string
	probes := 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		probes++
		if _, err := probe(h.URL, "/-/healthy", probeTimeout); err != nil {
			failed = append(failed, err.Error())
		}
	}
	t.Logf("%d probes, %d slow connections open at the end", probes, open.Load())
	if len(failed) > 0 {
		t.Errorf("%d of %d probes failed: %s", len(failed), probes, strings.Join(failed, "; "))
	}
}

// probeTimeout bounds a probe in TestProbesAnswerWhenTheCapIsFull: far
// above the milliseconds a probe takes, and below the 10 s after which a
// slow connection's unfinished headers time out and free a place, so
// that a probe waiting for a place fails.
const probeTimeout = 5 * time.Second

// TestProbesAnswerWhenTheCapIsFull runs the daemon while eight clients
// (127.0.0.2 to 127.0.0.9, each under the per-client cap of 128) hold 700
// connections trickling request headers, so that the 512 places are all
// taken: once the daemon says so, /-/healthy, /-/ready and /metrics asked
// from a ninth address (127.0.0.1) are each answered, because the
// connection gone longest without progress is closed to make room for a
// new one.
func TestProbesAnswerWhenTheCapIsFull(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hotkeyd binary")
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo")
	ctx, cancel := context.WithCancel(context.Background())
	open, wait := slowClientsFrom(ctx, t, h.URL, slowConnections, 88)
	defer wait()
	defer cancel()
	h.WaitLog(t, "connections closed: the connection cap is full", settle)

	var failed []string
	probes := 0
	for range 5 {
		for _, path := range []string{"/-/healthy", "/-/ready", "/metrics"} {
			probes++
			if _, err := probe(h.URL, path, probeTimeout); err != nil {
				failed = append(failed, path+": "+err.Error())
			}
		}
	}
	t.Logf("%d probes, %d slow connections open at the end", probes, open())
	if len(failed) > 0 {
		t.Errorf("%d of %d probes failed: %s", len(failed), probes, strings.Join(failed, "; "))
	}
	if strings.Contains(h.Stderr(), "too many from one client") {
		t.Errorf("a slow client passed the per-client cap; the test is not about it")
	}
}

// BenchmarkProbeUnderSlowConnections measures how long a probe takes to
// answer, on a new connection, while 700 connections trickle headers from
// one client address (the per-client cap holds them) or from eight (the
// cap of 512 is full, and the connection gone longest without progress is
// closed for each new one); it reports the median and the slowest probe,
// and how many failed to answer within the kubelet's 1 s.
//
//	go test ./cmd/hotkeyd -run '^$' -bench ProbeUnderSlowConnections -benchtime 50x
func BenchmarkProbeUnderSlowConnections(b *testing.B) {
	for _, clients := range []int{1, 8} {
		for _, path := range []string{"/-/healthy", "/metrics"} {
			b.Run(fmt.Sprintf("clients=%d/path=%s", clients, path), func(b *testing.B) {
				h := testenv.StartHotkeyd(b, testenv.HotkeydOptions{}, "demo")
				ctx, cancel := context.WithCancel(context.Background())
				_, wait := slowClientsFrom(ctx, b, h.URL, slowConnections, (slowConnections+clients-1)/clients)
				defer wait()
				defer cancel()
				if clients == 1 {
					h.WaitLog(b, "connections closed: too many from one client", settle)
				} else {
					h.WaitLog(b, "connections closed: the connection cap is full", settle)
				}
				var took []time.Duration
				failed := 0
				b.ResetTimer()
				for b.Loop() {
					d, err := probe(h.URL, path, time.Second)
					if err != nil {
						failed++
						d = time.Second
					}
					took = append(took, d)
				}
				b.StopTimer()
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
				b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
				b.ReportMetric(float64(failed), "failed")
			})
		}
	}
}
