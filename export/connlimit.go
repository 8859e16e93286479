package export

import (
	"net"
	"sync"
	"time"

	"go.uber.org/zap"
)

// DefaultMaxConnectionsPerClient caps the connections one client address
// holds at once: well above what a browser (6), Prometheus or an ingest
// client's pool opens, well under DefaultMaxConnections, so that one
// client cannot take every connection and leave the probes waiting.
const DefaultMaxConnectionsPerClient = 128

// perClientListener closes a client's connection as soon as it is
// accepted when that client (its IP address) holds max connections
// already. Under the server's connection cap (netutil.LimitListener) it
// keeps one client — 700 connections trickling headers — from filling
// the cap, so that the others, and the orchestrator's probes, are still
// accepted at once.
type perClientListener struct {
	net.Listener
	max int
	log *zap.Logger

	mu      sync.Mutex
	held    map[string]int
	refused int       // since the last log line
	logged  time.Time // when the last log line was written
}

func newPerClientListener(l net.Listener, max int, log *zap.Logger) *perClientListener {
	return &perClientListener{Listener: l, max: max, log: log, held: map[string]int{}}
}

func (l *perClientListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientIP(c.RemoteAddr())
		if l.take(ip) {
			return &clientConn{Conn: c, release: func() { l.release(ip) }}, nil
		}
		c.Close()
	}
}

// take counts a connection of ip, and reports false when ip holds max
// already.
func (l *perClientListener) take(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[ip] < l.max {
		l.held[ip]++
		return true
	}
	// Said at most once a minute, with how many were closed.
	l.refused++
	if now := time.Now(); now.Sub(l.logged) >= time.Minute {
		l.log.Warn("connections closed: too many from one client", zap.String("client", ip),
			zap.Int("closed", l.refused), zap.Int("max_connections_per_client", l.max))
		l.refused, l.logged = 0, now
	}
	return false
}

func (l *perClientListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[ip]--; l.held[ip] <= 0 {
		delete(l.held, ip)
	}
}

// clientIP returns the IP address of addr, or addr as a string when it
// has none (a Unix socket).
func clientIP(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return host
	}
	return addr.String()
}

// clientConn gives its client's place back once, when it is closed.
type clientConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *clientConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
