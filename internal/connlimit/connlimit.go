// Package connlimit bounds the connections a server holds open: in all,
// and from any one remote address. An HTTP server keeps a goroutine and
// its buffers for every connection until the connection's timeouts end
// it, so a client that opens connections faster than they time out holds
// memory and file descriptors without bound; past them the process can no
// longer open a file (its audit log, a sandbox's workspace).
package connlimit

import (
	"net"
	"sync"
)

// Listener is a net.Listener that holds at most Total connections open,
// and at most PerHost from one remote IP address. A connection past
// either bound is accepted and closed at once, so that it costs the
// server nothing but the accept, and Accept goes on to the next.
type Listener struct {
	net.Listener
	total, perHost int

	mu     sync.Mutex
	open   int
	byHost map[string]int
}

// New returns l bounded to total connections in all and perHost from one
// remote IP address; a bound of zero or less is no bound.
func New(l net.Listener, total, perHost int) *Listener {
	return &Listener{Listener: l, total: total, perHost: perHost, byHost: map[string]int{}}
}

// Accept returns the next connection within the bounds, closing those
// past them; it returns the wrapped listener's errors.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := remoteHost(c)
		l.mu.Lock()
		if l.total > 0 && l.open >= l.total || l.perHost > 0 && l.byHost[host] >= l.perHost {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open++
		l.byHost[host]++
		l.mu.Unlock()
		return &conn{Conn: c, l: l, host: host}, nil
	}
}

// Open returns how many connections are open.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func (l *Listener) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byHost[host]--; l.byHost[host] <= 0 {
		delete(l.byHost, host)
	}
}

// remoteHost returns the IP address c comes from, or its whole remote
// address when it has no port.
func remoteHost(c net.Conn) string {
	a := c.RemoteAddr()
	if a == nil {
		return ""
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// conn gives its place back once, at its first Close.
type conn struct {
	net.Conn
	l    *Listener
	host string
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.host) })
	return err
}
