package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/acceptretry"
)

// A Proxy is the way out of a [NetworkAllow] sandbox: an HTTP proxy
// (CONNECT, and plain HTTP in absolute form) that runs outside the
// sandboxed process and connects only to what its Rules allow. It checks
// the name first, then resolves it itself, refuses any address in an
// internal range (see [HostRule]) unless a rule names that IP literal, and
// connects to the very address it checked: a name is resolved once per
// connection, so a DNS answer that changes between check and connect
// (rebinding) changes nothing. Inside a CONNECT tunnel it judges the
// client's first bytes, since one address may serve many sites: a TLS
// server name or an HTTP Host must be the CONNECT host (see
// tunnelStart). Every refusal is recorded (see
// [Proxy.Denials]) and logged. A request's line and headers together
// may be at most 64 KiB; more is answered 431 and refused.
//
// Set the fields before the first Serve; a Proxy must not be copied after.
type Proxy struct {
	// Rules are the hosts and ports the proxy connects to.
	Rules []HostRule
	// Client names who uses the proxy, for the denials (the command or
	// server of the run).
	Client string
	// MaxConns bounds the connections served at once; one more is
	// answered 503 and closed. Zero means 64.
	MaxConns int
	// HeaderTimeout bounds the time a client takes to send its request
	// line and headers. Zero means 10s.
	HeaderTimeout time.Duration
	// IdleTimeout ends a relayed connection that moved no byte either way
	// for that long. Zero means 60s.
	IdleTimeout time.Duration
	// MaxDuration ends any relayed connection that lasted that long. Zero
	// means 10 minutes.
	MaxDuration time.Duration
	// MaxBytes bounds the bytes one connection relays, both ways
	// together; the connection is closed at the bound. Zero means 1 GiB.
	MaxBytes int64
	// Resolve returns the addresses of a host name (as listed: lower
	// case, no trailing dot); nil means the system's resolver, asked for
	// the name fully qualified (with a trailing dot) so that none of the
	// host's search domains applies. A Resolve that asks a DNS resolver
	// must do the same. Tests set it to map names of their own.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// LocalNets returns the networks the machine the proxy runs on is
	// on: each interface's address with its prefix. A name may not
	// resolve into one (unless a rule names the address): from the host,
	// the proxy would reach the host's own services listening on all
	// addresses, or its neighbours on the local network, whatever range
	// the addresses are in. nil means the host's interfaces; an error
	// refuses the connection. Tests set it to stand for the host's
	// interfaces.
	LocalNets func() ([]netip.Prefix, error)
	// Dial connects to a checked address; nil means a [net.Dialer] with a
	// 10s timeout. Tests set it to reach their loopback servers.
	Dial func(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
	// Log receives one record per refusal, for the first
	// [MaxNetworkDenials] refusals, and then one record saying the rest
	// are counted, not logged (see [Proxy.Denials]); nil means no log.
	Log *slog.Logger
	// OnDenial, when set, is called with each refusal as it happens (on
	// the connection's goroutine, so it must not block): the way a
	// long-running client's owner (an MCP server's host) reports denials
	// while the run goes on, before any Result exists.
	OnDenial func(NetworkDenial)

	// lookup stands for the system's resolver when Resolve is nil (a
	// test's); nil means net.DefaultResolver.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)

	once      sync.Once
	slots     chan struct{}
	mu        sync.Mutex
	denials   []NetworkDenial
	dropped   int
	conns     map[net.Conn]struct{}
	listeners map[net.Listener]struct{}
	closed    bool
	done      chan struct{} // closed by Close: ends a Serve waiting to accept again
}

// Proxy defaults; see the fields of [Proxy].
const (
	DefaultProxyConns  = 64
	DefaultProxyHeader = 10 * time.Second
	DefaultProxyIdle   = 60 * time.Second
	DefaultProxyTotal  = 10 * time.Minute
	DefaultProxyBytes  = 1 << 30
)

// maxProxyHeaderBytes bounds a request's line and headers together: a
// client that sends more is answered 431, refused and closed.
const maxProxyHeaderBytes = 64 << 10

// maxDenialHost bounds the host a denial keeps: a longer one (no host
// name is over 253 bytes) is kept as a prefix with its length.
const maxDenialHost = 256

func (p *Proxy) init() {
	p.once.Do(func() {
		n := p.MaxConns
		if n <= 0 {
			n = DefaultProxyConns
		}
		p.slots = make(chan struct{}, n)
		p.conns = map[net.Conn]struct{}{}
		p.listeners = map[net.Listener]struct{}{}
		p.done = make(chan struct{})
	})
}

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Denials returns the refusals so far (at most [MaxNetworkDenials]) and
// the number of further refusals that were counted but not kept.
func (p *Proxy) Denials() ([]NetworkDenial, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.denials), p.dropped
}

// Serve accepts connections on l and serves each until l is closed or
// the proxy is (see [Proxy.Close]); it returns the error that ended
// accepting, [net.ErrClosed] at once for a closed proxy (closing l
// then). Closing l does not end connections being relayed: [Proxy.Close]
// does.
//
// A temporary accept error (the process or system out of descriptors,
// EMFILE or ENFILE; out of buffers or memory, ENOBUFS or ENOMEM; a client
// gone before it was accepted, ECONNABORTED) does not end Serve: it waits
// 5 ms, doubled after each further failure up to 1 s, and accepts again
// (as net/http's Server.Serve does), so a passing shortage does not cut
// the run's network for good. [Proxy.Close] ends such a wait at once.
func (p *Proxy) Serve(l net.Listener) error {
	p.init()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return net.ErrClosed
	}
	p.listeners[l] = struct{}{}
	p.mu.Unlock()
	defer func() { p.mu.Lock(); delete(p.listeners, l); p.mu.Unlock() }()
	var backoff acceptretry.Backoff
	for {
		c, err := l.Accept()
		if err != nil {
			if !acceptretry.Temporary(err) {
				return err
			}
			if !backoff.Wait(p.done) {
				return net.ErrClosed
			}
			continue
		}
		backoff.Reset()
		select {
		case p.slots <- struct{}{}:
		default:
			c.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
			c.Close()
			continue
		}
		if !p.track(c) {
			<-p.slots
			c.Close()
			continue
		}
		go func() {
			defer func() { p.untrack(c); c.Close(); <-p.slots }()
			p.serveConn(c)
		}()
	}
}

// Close ends the proxy: it closes the listeners Serve accepts on (so
// Serve returns) and every connection being served, and a closed proxy
// serves nothing again. For a sandboxed run that is the end of its
// network, not of its confinement: nothing listens at its proxy address
// any more, and its network namespace has no other route.
func (p *Proxy) Close() {
	p.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		close(p.done)
	}
	p.closed = true
	for l := range p.listeners {
		l.Close()
	}
	for c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) deny(host string, port int, addr, reason string) *NetworkDenial {
	if len(host) > maxDenialHost {
		host = fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(host[:maxDenialHost], ""), len(host))
	}
	d := NetworkDenial{Host: host, Port: port, Addr: addr, Reason: reason, Client: p.Client}
	p.mu.Lock()
	kept := len(p.denials) < MaxNetworkDenials
	if kept {
		p.denials = append(p.denials, d)
	} else {
		p.dropped++
	}
	firstDropped := p.dropped == 1 && !kept
	p.mu.Unlock()
	// The log gets what Denials keeps, and one record when the rest
	// begins: the proxy runs on the host, and a command that opens
	// denied connections in a loop would otherwise write the host's log
	// as fast as it connects.
	if p.Log != nil && kept {
		p.Log.Warn("sandbox: network denied", "host", host, "port", port, "addr", addr, "reason", reason, "client", p.Client)
	} else if p.Log != nil && firstDropped {
		p.Log.Warn(fmt.Sprintf("sandbox: more than %d network denials; the rest are counted (Result.NetworkDenialsDropped), not logged", MaxNetworkDenials), "client", p.Client)
	}
	if p.OnDenial != nil {
		p.OnDenial(d)
	}
	return &d
}

func (p *Proxy) serveConn(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(orDuration(p.HeaderTimeout, DefaultProxyHeader)))
	// The request line and headers are read through a bound: the proxy
	// runs on the host, outside the run's memory limit, and
	// http.ReadRequest alone would keep a line without end. The bound is
	// lifted once they are read; the relay has its own (MaxBytes).
	lr := &io.LimitedReader{R: c, N: maxProxyHeaderBytes}
	br := bufio.NewReaderSize(lr, 4096)
	req, err := http.ReadRequest(br)
	if err != nil {
		if lr.N <= 0 {
			d := p.deny("", 0, "", fmt.Sprintf("request headers over %d bytes", maxProxyHeaderBytes))
			reply(c, http.StatusRequestHeaderFieldsTooLarge, d.Reason)
		}
		return
	}
	lr.N = math.MaxInt64
	c.SetReadDeadline(time.Time{})
	var hostport string
	if req.Method == http.MethodConnect {
		hostport = req.RequestURI
	} else {
		if req.URL.Scheme != "http" || req.URL.Host == "" {
			reply(c, http.StatusBadRequest, "the proxy takes CONNECT host:port or an absolute http:// URL")
			return
		}
		hostport = req.URL.Host
		if req.URL.Port() == "" {
			hostport = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	}
	host, portStr, err := net.SplitHostPort(hostport)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port < 1 || port > 65535 {
		d := p.deny(hostport, 0, "", "not host:port")
		reply(c, http.StatusForbidden, d.Reason)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	target, d := p.check(ctx, host, port)
	if d != nil {
		cancel()
		reply(c, http.StatusForbidden, fmt.Sprintf("%s port %d refused: %s", host, port, d.Reason))
		return
	}
	up, err := p.dial(ctx, target)
	cancel()
	if err != nil {
		reply(c, http.StatusBadGateway, "connect failed")
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer func() { p.untrack(up); up.Close() }()
	if req.Method == http.MethodConnect {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		t, d := p.tunnelStart(c, br, host, port, target)
		switch {
		case d != nil:
			if t.inner != nil {
				reply(c, http.StatusForbidden, fmt.Sprintf("%s port %d refused: %s", host, port, d.Reason))
			}
		case t.inner != nil:
			p.forwardOne(c, t.inner, up)
		case t.hello != nil:
			if p.tlsStart(c, br, up, t.hello, t.sni, host, port, target.Addr().String()) {
				p.relay(c, br, up, p.maxBytes(), true)
			}
		default:
			p.relay(c, br, up, p.maxBytes(), true)
		}
		return
	}
	p.forwardOne(c, req, up)
}

// forwardOne sends req, a plain HTTP request whose host was checked, to
// up and relays the answer: one request per connection, sent in origin
// form with Connection: close, so that a second request on the same
// connection cannot name another host without being checked.
func (p *Proxy) forwardOne(c net.Conn, req *http.Request, up net.Conn) {
	req.Close = true
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.RequestURI = ""
	idle := orDuration(p.IdleTimeout, DefaultProxyIdle)
	c.SetReadDeadline(time.Now().Add(idle))
	up.SetWriteDeadline(time.Now().Add(idle))
	body := &countingReader{r: req.Body, left: p.maxBytes()}
	req.Body = body
	if req.Write(up) != nil || body.left < 0 {
		return
	}
	p.relay(c, nil, up, body.left, false)
}

// countingReader fails once more than left bytes were read.
type countingReader struct {
	r    io.ReadCloser
	left int64
}

func (r *countingReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.left -= int64(n)
	if r.left < 0 {
		return n, errBudget
	}
	return n, err
}

func (r *countingReader) Close() error { return r.r.Close() }

func (p *Proxy) maxBytes() int64 {
	if p.MaxBytes <= 0 {
		return DefaultProxyBytes
	}
	return p.MaxBytes
}

// reply writes a short response that ends the connection.
func reply(c net.Conn, code int, msg string) {
	body := "clawtool sandbox proxy: " + msg + "\n"
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", code, http.StatusText(code), len(body), body)
}

func (p *Proxy) dial(ctx context.Context, a netip.AddrPort) (net.Conn, error) {
	if p.Dial != nil {
		return p.Dial(ctx, a)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", a.String())
}

// check decides whether host:port may be reached and, if so, at which
// address. It resolves a name at most once.
func (p *Proxy) check(ctx context.Context, host string, port int) (netip.AddrPort, *NetworkDenial) {
	asked := host
	trimmed := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ".")
	host = strings.ToLower(trimmed)
	if ip, err := netip.ParseAddr(host); err == nil || strings.Contains(host, "%") {
		if err != nil || ip.Zone() != "" {
			return netip.AddrPort{}, p.deny(asked, port, "", "an IP literal with a zone")
		}
		if !p.literalListed(ip, port) {
			return netip.AddrPort{}, p.deny(asked, port, "", "an IP literal not in the allow list")
		}
		return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
	}
	if !validHostName(trimmed) {
		// Judged before lower-casing, which turns the Kelvin sign into
		// "k": the name asked must be the name listed, in ASCII.
		return netip.AddrPort{}, p.deny(asked, port, "", "not a host name")
	}
	if numericName(host) {
		// 2130706433, 0x7f.1, 127.1: forms a C resolver reads as an
		// address.
		return netip.AddrPort{}, p.deny(asked, port, "", "an IP address written as a name")
	}
	if !p.nameListed(host, port) {
		return netip.AddrPort{}, p.deny(asked, port, "", "not in the allow list")
	}
	resolve := p.Resolve
	if resolve == nil {
		lookup := p.lookup
		if lookup == nil {
			lookup = func(ctx context.Context, h string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", h)
			}
		}
		resolve = func(ctx context.Context, h string) ([]netip.Addr, error) {
			// Fully qualified: with a trailing dot the resolver applies
			// none of the host's search domains, which would make a
			// listed "api" (or a name that does not resolve as it is,
			// or any name under ndots) the company's api.corp.internal,
			// a host no rule names. A single label reaches here only
			// when a rule names it exactly (a wildcard needs a dot).
			return lookup(ctx, h+".")
		}
	}
	addrs, err := resolve(ctx, host)
	if err != nil || len(addrs) == 0 {
		return netip.AddrPort{}, p.deny(asked, port, "", "does not resolve")
	}
	for _, a := range addrs {
		if why := internalRange(a); why != "" && !p.literalListed(a, port) {
			// One internal answer refuses the name: a name that mixes
			// public and internal answers is a rebinding attempt.
			return netip.AddrPort{}, p.deny(asked, port, a.String(), "resolves to "+why+" "+a.String())
		}
	}
	nets, err := p.localNets()
	if err != nil {
		return netip.AddrPort{}, p.deny(asked, port, "", "the machine's own networks cannot be read: "+err.Error())
	}
	for _, a := range addrs {
		for _, n := range nets {
			if n.Contains(a.Unmap()) && !p.literalListed(a, port) {
				what := "the network " + n.Masked().String() + " of this machine"
				if n.Addr() == a.Unmap() {
					what = "this machine's own address"
				}
				return netip.AddrPort{}, p.deny(asked, port, a.String(), "resolves to "+what+" "+a.Unmap().String())
			}
		}
	}
	return netip.AddrPortFrom(addrs[0].Unmap(), uint16(port)), nil
}

// localNets returns the networks of the machine's interfaces, their
// addresses unmapped and without zones.
func (p *Proxy) localNets() ([]netip.Prefix, error) {
	var nets []netip.Prefix
	if p.LocalNets != nil {
		got, err := p.LocalNets()
		if err != nil {
			return nil, err
		}
		nets = slices.Clone(got)
	} else {
		ifs, err := net.InterfaceAddrs()
		if err != nil {
			return nil, err
		}
		for _, a := range ifs {
			pr, err := netip.ParsePrefix(a.String())
			if err != nil {
				return nil, fmt.Errorf("interface address %q: %w", a.String(), err)
			}
			nets = append(nets, pr)
		}
	}
	for i, n := range nets {
		a, bits := n.Addr(), n.Bits()
		if a.Is4In6() {
			a, bits = a.Unmap(), max(bits-96, 0)
		}
		nets[i] = netip.PrefixFrom(a.WithZone(""), bits)
		if !nets[i].IsValid() {
			return nil, fmt.Errorf("interface network %v is not one", n)
		}
	}
	return nets, nil
}

func rulePorts(r HostRule) []int {
	if len(r.Ports) == 0 {
		return defaultAllowPorts
	}
	return r.Ports
}

func (p *Proxy) literalListed(ip netip.Addr, port int) bool {
	for _, r := range p.Rules {
		if a, err := netip.ParseAddr(r.Host); err == nil && a.Unmap() == ip.Unmap() && slices.Contains(rulePorts(r), port) {
			return true
		}
	}
	return false
}

func (p *Proxy) nameListed(host string, port int) bool {
	for _, r := range p.Rules {
		rh := strings.ToLower(strings.TrimSuffix(r.Host, "."))
		if _, err := netip.ParseAddr(rh); err == nil {
			continue
		}
		match := rh == host
		if suffix, ok := strings.CutPrefix(rh, "*."); ok {
			match = strings.HasSuffix(host, "."+suffix)
		}
		if match && slices.Contains(rulePorts(r), port) {
			return true
		}
	}
	return false
}

// numericName reports a name whose last label is all digits or a 0x
// number: what inet_aton would take for an address.
func numericName(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if strings.HasPrefix(last, "0x") {
		return true
	}
	return strings.Trim(last, "0123456789") == ""
}

// internalPrefixes are the ranges a name may not resolve to, besides what
// netip classifies (loopback, private, link-local, multicast,
// unspecified).
var internalPrefixes = []struct {
	p    netip.Prefix
	name string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible IPv6"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

// internalRange names the internal range a is in, or "" for an address
// the proxy may reach. IPv4-mapped IPv6 addresses are judged as IPv4.
func internalRange(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "an invalid address"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsPrivate():
		return "private"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	}
	if a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return "broadcast"
	}
	for _, ip := range internalPrefixes {
		if ip.p.Contains(a) {
			return ip.name
		}
	}
	// The ranges above are what the proxy models; an IPv6 address outside
	// the global unicast space (IPv4-translated ::ffff:0:0/96, discard
	// 100::/64, anything reserved) is not, and is refused.
	if a.Is6() && !globalUnicast6.Contains(a) {
		return "IPv6 outside global unicast"
	}
	return ""
}

// globalUnicast6 is the IPv6 global unicast space (RFC 4291 §2.4).
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// errBudget ends a relay whose connection moved more than MaxBytes.
var errBudget = errors.New("sandbox proxy: byte budget spent")

// relay copies between the client c (whose buffered reader br may hold
// bytes already read) and up, within the idle, total and byte bounds;
// both ways when both is set, else from up to c only.
func (p *Proxy) relay(c net.Conn, br io.Reader, up net.Conn, budget int64, both bool) {
	idle := orDuration(p.IdleTimeout, DefaultProxyIdle)
	end := time.Now().Add(orDuration(p.MaxDuration, DefaultProxyTotal))
	var mu sync.Mutex
	take := func(n int) bool {
		mu.Lock()
		defer mu.Unlock()
		budget -= int64(n)
		return budget >= 0
	}
	var src io.Reader = c
	if br != nil {
		src = br
	}
	copyDir := func(dst, srcConn net.Conn, r io.Reader) {
		buf := make([]byte, 32<<10)
		for {
			deadline := min(time.Now().Add(idle).UnixNano(), end.UnixNano())
			srcConn.SetReadDeadline(time.Unix(0, deadline))
			n, err := r.Read(buf)
			if n > 0 {
				if !take(n) {
					break
				}
				// A read in either direction keeps the other alive.
				c.SetReadDeadline(time.Unix(0, min(time.Now().Add(idle).UnixNano(), end.UnixNano())))
				up.SetReadDeadline(time.Unix(0, min(time.Now().Add(idle).UnixNano(), end.UnixNano())))
				dst.SetWriteDeadline(time.Unix(0, min(time.Now().Add(idle).UnixNano(), end.UnixNano())))
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		c.Close()
		up.Close()
	}
	if !both {
		copyDir(c, up, up)
		return
	}
	done := make(chan struct{})
	go func() { copyDir(up, c, src); close(done) }()
	copyDir(c, up, up)
	<-done
}

// ProxyPort is the port on the sandbox's own loopback where a
// [NetworkAllow] run finds its proxy. In the native sandbox the listening
// socket is made by the helper inside the run's network namespace before
// the command starts, and handed to the supervisor, which accepts on it
// outside the sandbox: nothing of the proxy runs in the sandbox, and the
// namespace has no other interface than that loopback. A container
// backend's forwarder listens there and joins each connection to the
// proxy's unix socket, bound into the container.
const ProxyPort = 3128

// proxyVars are the variables that name the proxy to the command.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// ProxyEnv returns env with the proxy variables of a [NetworkAllow] run:
// HTTP_PROXY, HTTPS_PROXY and ALL_PROXY, in upper and lower case, set to
// http://127.0.0.1:[ProxyPort] (replacing any env set), and NO_PROXY and
// no_proxy removed. env is not changed.
func ProxyEnv(env []string) []string {
	url := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
	out := make([]string, 0, len(env)+len(proxyVars))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.EqualFold(name, "NO_PROXY") || slices.ContainsFunc(proxyVars, func(v string) bool { return strings.EqualFold(v, name) }) {
			continue
		}
		out = append(out, kv)
	}
	for _, v := range proxyVars {
		out = append(out, v+"="+url)
	}
	return out
}
