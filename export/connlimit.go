package export

import (
	"context"
	"net"
	"net/http"
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
// already. Under the server's connection cap (capListener) it keeps one
// client — 700 connections trickling headers — from taking every place,
// and from having the others' connections closed to make room for its
// own.
type perClientListener struct {
	net.Listener
	max    int
	log    *zap.Logger
	closes func() // counts a connection closed

	mu      sync.Mutex
	held    map[string]int
	refused int       // since the last log line
	logged  time.Time // when the last log line was written
}

func newPerClientListener(l net.Listener, max int, log *zap.Logger, closes func()) *perClientListener {
	return &perClientListener{Listener: l, max: max, log: log, closes: closes, held: map[string]int{}}
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
		l.closes()
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

// capListener holds at most max connections, and never stops accepting:
// when a connection arrives with max held, the held connection that has
// gone longest without progress is closed to make room. Progress is being
// accepted, a request's headers read (its handler starts) and an answer
// written (its handler returns); so the connection closed is the one
// trickling its headers the longest, idle between requests the longest,
// or stuck the longest in an answer its client does not read.
//
// Whoever else holds the connections, a client that sends its request at
// once (a probe, a scrape) is accepted at once and answered: to close it
// before its headers are read, the others would have to make progress on
// every held connection within that time. With the per-client cap beneath
// it, one client cannot take every place; with the shedding, many cannot
// either.
type capListener struct {
	net.Listener
	max  int
	log  *zap.Logger
	shed func() // counts a connection closed to make room

	mu     sync.Mutex
	conns  map[*capConn]struct{}
	closed int       // since the last log line
	logged time.Time // when the last log line was written
}

func newCapListener(l net.Listener, max int, log *zap.Logger, shed func()) *capListener {
	return &capListener{Listener: l, max: max, log: log, shed: shed, conns: make(map[*capConn]struct{}, max)}
}

func (l *capListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &capConn{Conn: c, l: l, since: time.Now()}
	l.mu.Lock()
	var victim *capConn
	if len(l.conns) >= l.max {
		for h := range l.conns {
			if victim == nil || h.since.Before(victim.since) {
				victim = h
			}
		}
		delete(l.conns, victim)
		victim.dropped = true
		l.closed++
		if now := time.Now(); now.Sub(l.logged) >= time.Minute {
			l.log.Warn("connections closed: the connection cap is full",
				zap.Int("closed", l.closed), zap.Int("max_connections", l.max))
			l.closed, l.logged = 0, now
		}
	}
	l.conns[cc] = struct{}{}
	l.mu.Unlock()
	if victim != nil {
		victim.Conn.Close()
		l.shed()
	}
	return cc, nil
}

// held returns the number of connections held.
func (l *capListener) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// progress marks c as having made progress now.
func (l *capListener) progress(c *capConn) {
	l.mu.Lock()
	c.since = time.Now()
	l.mu.Unlock()
}

func (l *capListener) release(c *capConn) {
	l.mu.Lock()
	if !c.dropped {
		delete(l.conns, c)
		c.dropped = true
	}
	l.mu.Unlock()
}

// capConn is a connection a capListener holds.
type capConn struct {
	net.Conn
	l *capListener
	// since and dropped are guarded by l.mu: when c last made progress,
	// and whether it no longer holds a place.
	since   time.Time
	dropped bool
}

func (c *capConn) Close() error {
	c.l.release(c)
	return c.Conn.Close()
}

// connKey is the context key of the capConn a request came on.
type connKey struct{}

// withConn is http.Server.ConnContext: it keeps the request's connection
// (beneath TLS) in its context, for markProgress.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	if cc, ok := c.(*capConn); ok {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

// markProgress marks the request's connection as having made progress
// when its handler starts and when it returns.
func markProgress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := r.Context().Value(connKey{}).(*capConn)
		if ok {
			c.l.progress(c)
			defer c.l.progress(c)
		}
		next.ServeHTTP(w, r)
	})
}
