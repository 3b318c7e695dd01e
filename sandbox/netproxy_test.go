package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A proxyFixture is a Proxy on loopback in front of two local HTTP
// servers. The test resolver maps names to documentation addresses
// (TEST-NET-3, which the proxy may reach) and the test dialer maps those
// to the servers on 127.0.0.1: the proxy's checks see what they would see
// on a real network, and nothing leaves the machine.
type proxyFixture struct {
	proxy       *Proxy
	addr        string // the proxy's host:port
	listedAddr  string // the listed server's, direct
	listedHits  atomic.Int64
	unlistHits  atomic.Int64
	mu          sync.Mutex
	dialed      []netip.AddrPort
	resolved    map[string]int
	resolveFunc func(host string, n int) []netip.Addr // n: how many times host was resolved before
}

var (
	listedIP   = netip.MustParseAddr("203.0.113.10")
	unlistedIP = netip.MustParseAddr("203.0.113.20")
	literalIP  = netip.MustParseAddr("203.0.113.30")
)

// testNames is the test resolver's zone.
var testNames = map[string][]netip.Addr{
	"listed.test":    {listedIP},
	"unlisted.test":  {unlistedIP},
	"a.svc.test":     {listedIP},
	"svc.test":       {listedIP},
	"evilsvc.test":   {listedIP},
	"loop.test":      {netip.MustParseAddr("127.0.0.1")},
	"meta.test":      {netip.MustParseAddr("169.254.169.254")},
	"v6loop.test":    {netip.MustParseAddr("::1")},
	"mapped.test":    {netip.MustParseAddr("::ffff:169.254.169.254")},
	"private.test":   {netip.MustParseAddr("10.0.0.7")},
	"ula.test":       {netip.MustParseAddr("fd00::7")},
	"mixed.test":     {listedIP, netip.MustParseAddr("127.0.0.1")},
	"zero.test":      {netip.MustParseAddr("0.0.0.0")},
	"nat64.test":     {netip.MustParseAddr("64:ff9b::7f00:1")},
	"rebind.test":    nil, // see resolveFunc
	"literalok.test": {literalIP},
	"siit.test":      {netip.MustParseAddr("::ffff:0:127.0.0.1")},
	"discard.test":   {netip.MustParseAddr("100::1")},
}

func newProxyFixture(t testing.TB, p *Proxy) *proxyFixture {
	t.Helper()
	f := &proxyFixture{proxy: p, resolved: map[string]int{}}
	listed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.listedHits.Add(1)
		if r.URL.Path == "/big" {
			w.Write(make([]byte, 1<<20))
			return
		}
		io.WriteString(w, "listed "+r.Host)
	}))
	t.Cleanup(listed.Close)
	unlisted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.unlistHits.Add(1)
		io.WriteString(w, "unlisted")
	}))
	t.Cleanup(unlisted.Close)
	backends := map[netip.Addr]string{
		listedIP:   listed.Listener.Addr().String(),
		unlistedIP: unlisted.Listener.Addr().String(),
		literalIP:  listed.Listener.Addr().String(),
	}
	p.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
		f.mu.Lock()
		n := f.resolved[host]
		f.resolved[host]++
		fn := f.resolveFunc
		f.mu.Unlock()
		if fn != nil {
			if a := fn(host, n); a != nil {
				return a, nil
			}
		}
		if a, ok := testNames[host]; ok && a != nil {
			return a, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	p.Dial = func(ctx context.Context, a netip.AddrPort) (net.Conn, error) {
		f.mu.Lock()
		f.dialed = append(f.dialed, a)
		f.mu.Unlock()
		to, ok := backends[a.Addr()]
		if !ok {
			// Only a checked address reaches here: a test that ends here
			// found a hole in the checks.
			return nil, fmt.Errorf("test dialer: %v is no test backend", a)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", to)
	}
	f.addr = serveTestProxy(t, p)
	f.listedAddr = listed.Listener.Addr().String()
	return f
}

// get fetches url through the proxy as a plain HTTP proxy request.
func (f *proxyFixture) get(t *testing.T, url string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", url)
	return readResponse(t, c)
}

// connect opens a CONNECT tunnel to hostport and, when it is granted,
// sends one GET through it.
func (f *proxyFixture) connect(t *testing.T, hostport string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", hostport, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", hostport)
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET through the tunnel: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func readResponse(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func testRules() []HostRule {
	return []HostRule{
		{Host: "listed.test", Ports: []int{80}},
		{Host: "*.svc.test", Ports: []int{80}},
		{Host: "loop.test", Ports: []int{80}}, {Host: "meta.test", Ports: []int{80}},
		{Host: "v6loop.test", Ports: []int{80}}, {Host: "mapped.test", Ports: []int{80}},
		{Host: "private.test", Ports: []int{80}}, {Host: "ula.test", Ports: []int{80}},
		{Host: "mixed.test", Ports: []int{80}}, {Host: "zero.test", Ports: []int{80}},
		{Host: "nat64.test", Ports: []int{80}}, {Host: "rebind.test", Ports: []int{80}},
		{Host: "203.0.113.30", Ports: []int{80}},
		{Host: "siit.test", Ports: []int{80}}, {Host: "discard.test", Ports: []int{80}},
	}
}

// TestProxyCatalog is the network rows (N) of the attack catalog: each
// row is an attempt a sandboxed program makes through the proxy, refused,
// with the row's control (the same request to what the list allows gets
// through). Every refusal is checked three ways: the client's 403, the
// Denial recorded with host, port and client, and no connection made to
// the unlisted server.
func TestProxyCatalog(t *testing.T) {
	rows := []struct {
		id, name string
		connect  string // CONNECT target, or
		get      string // plain-HTTP URL
		reason   string // in the denial
		control  string // a CONNECT target the list allows, reached
	}{
		{"N1", "a name not in the list (CONNECT)", "unlisted.test:80", "", "not in the allow list", "listed.test:80"},
		{"N2", "a name not in the list (plain HTTP)", "", "http://unlisted.test/", "not in the allow list", "listed.test:80"},
		{"N3", "a listed name on a port not listed", "listed.test:22", "", "not in the allow list", "listed.test:80"},
		{"N4", "an IPv4 literal", "127.0.0.1:80", "", "IP literal", "203.0.113.30:80"},
		{"N5", "an IPv4 literal in plain HTTP", "", "http://169.254.169.254/latest/meta-data/", "IP literal", "203.0.113.30:80"},
		{"N6", "an IPv6 literal", "[::1]:80", "", "IP literal", "203.0.113.30:80"},
		{"N7", "an IPv4-mapped IPv6 literal", "[::ffff:127.0.0.1]:80", "", "IP literal", "[::ffff:203.0.113.30]:80"},
		{"N8", "an IPv6 literal with a zone", "[fe80::1%25eth0]:80", "", "zone", "203.0.113.30:80"},
		{"N9", "an address written as a decimal name", "2130706433:80", "", "written as a name", "listed.test:80"},
		{"N10", "an address written as a hex name", "0x7f.1:80", "", "written as a name", "listed.test:80"},
		{"N11", "a listed name resolving to 127.0.0.1", "loop.test:80", "", "loopback 127.0.0.1", "listed.test:80"},
		{"N12", "a listed name resolving to 169.254.169.254", "meta.test:80", "", "link-local 169.254.169.254", "listed.test:80"},
		{"N13", "a listed name resolving to ::1", "v6loop.test:80", "", "loopback ::1", "listed.test:80"},
		{"N14", "a listed name resolving to ::ffff:169.254.169.254", "mapped.test:80", "", "link-local", "listed.test:80"},
		{"N15", "a listed name resolving to 10.0.0.7", "private.test:80", "", "private 10.0.0.7", "listed.test:80"},
		{"N16", "a listed name resolving to fd00::7", "ula.test:80", "", "private fd00::7", "listed.test:80"},
		{"N17", "a listed name with a public and a loopback answer", "mixed.test:80", "", "loopback 127.0.0.1", "listed.test:80"},
		{"N18", "a listed name resolving to 0.0.0.0", "zero.test:80", "", "unspecified", "listed.test:80"},
		{"N19", "a listed name resolving to NAT64 of 127.0.0.1", "nat64.test:80", "", "NAT64", "listed.test:80"},
		{"N20", "the wildcard's own suffix", "svc.test:80", "", "not in the allow list", "a.svc.test:80"},
		{"N21", "a name ending like the wildcard without its dot", "evilsvc.test:80", "", "not in the allow list", "a.svc.test:80"},
		{"N22", "plain HTTP to a listed name on another port", "", "http://listed.test:8080/", "not in the allow list", "listed.test:80"},
		{"N29", "a listed name resolving to IPv4-translated ::ffff:0:127.0.0.1 (SIIT)", "siit.test:80", "", "outside global unicast", "listed.test:80"},
		{"N30", "a listed name resolving to discard-only 100::1", "discard.test:80", "", "outside global unicast", "listed.test:80"},
	}
	for _, r := range rows {
		t.Run(r.id, func(t *testing.T) {
			f := newProxyFixture(t, &Proxy{Rules: testRules(), Client: "attacker " + r.id})
			// Control first: the list's own target is reached.
			if code, body := f.connect(t, r.control); code != 200 || !strings.HasPrefix(body, "listed") {
				t.Fatalf("control CONNECT %s = %d %q, want the listed server", r.control, code, body)
			}
			var code int
			var body string
			if r.connect != "" {
				code, body = f.connect(t, r.connect)
			} else {
				code, body = f.get(t, r.get)
			}
			if code != http.StatusForbidden {
				t.Fatalf("%s: %s got %d %q, want 403", r.id, r.name, code, body)
			}
			d, _ := f.proxy.Denials()
			if len(d) != 1 || !strings.Contains(d[0].Reason, r.reason) || d[0].Client != "attacker "+r.id || d[0].Port == 0 || d[0].Host == "" {
				t.Fatalf("%s: denials = %+v, want one with reason %q", r.id, d, r.reason)
			}
			if n := f.unlistHits.Load(); n != 0 {
				t.Errorf("%s: the unlisted server got %d requests", r.id, n)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.dialed) != 1 {
				t.Errorf("%s: dialed %v, want the control's one connection", r.id, f.dialed)
			}
		})
	}
}

// TestProxyNoRebinding (N23): a name that resolves to a public address
// when checked and to 127.0.0.1 the next time is connected to at the
// address that was checked, and resolved once per connection. The
// control: a proxy that resolved again to connect would have dialed
// 127.0.0.1 (the second answer), which the test dialer would refuse.
func TestProxyNoRebinding(t *testing.T) {
	f := newProxyFixture(t, &Proxy{Rules: testRules()})
	f.resolveFunc = func(host string, n int) []netip.Addr {
		if host != "rebind.test" {
			return nil
		}
		if n%2 == 0 {
			return []netip.Addr{listedIP}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	if code, body := f.connect(t, "rebind.test:80"); code != 200 || !strings.HasPrefix(body, "listed") {
		t.Fatalf("CONNECT rebind.test = %d %q, want the checked address's server", code, body)
	}
	f.mu.Lock()
	resolved, dialed := f.resolved["rebind.test"], f.dialed
	f.mu.Unlock()
	if resolved != 1 || len(dialed) != 1 || dialed[0].Addr() != listedIP {
		t.Fatalf("resolved %d times, dialed %v; want once, at %v", resolved, dialed, listedIP)
	}
	// The second connection gets the rebound answer, checks it, and is
	// refused.
	if code, _ := f.connect(t, "rebind.test:80"); code != http.StatusForbidden {
		t.Fatalf("second CONNECT = %d, want 403 on the loopback answer", code)
	}
}

// TestProxyPlainHTTPOneRequest (N24): a second request pipelined on a
// plain-HTTP connection cannot name another host unchecked: the proxy
// forwards the first request alone, marked to close.
func TestProxyPlainHTTPOneRequest(t *testing.T) {
	f := newProxyFixture(t, &Proxy{Rules: testRules()})
	c, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET http://listed.test/ HTTP/1.1\r\nHost: listed.test\r\n\r\nGET http://unlisted.test/ HTTP/1.1\r\nHost: unlisted.test\r\n\r\n")
	all, _ := io.ReadAll(c)
	if !strings.Contains(string(all), "listed listed.test") || strings.Contains(string(all), "unlisted") {
		t.Fatalf("pipelined responses = %q, want the listed one only", all)
	}
	if f.unlistHits.Load() != 0 || f.listedHits.Load() != 1 {
		t.Fatalf("hits listed %d unlisted %d, want 1 and 0", f.listedHits.Load(), f.unlistHits.Load())
	}
	// Control: the plain form reaches the listed server.
	if code, body := f.get(t, "http://listed.test/"); code != 200 || body != "listed listed.test" {
		t.Fatalf("GET = %d %q", code, body)
	}
}

// TestProxyBounds (N25-N27): the proxy bounds connections, header time
// and bytes.
func TestProxyBounds(t *testing.T) {
	t.Run("N25 connections", func(t *testing.T) {
		f := newProxyFixture(t, &Proxy{Rules: testRules(), MaxConns: 2})
		var held []net.Conn
		for range 2 {
			c, err := net.Dial("tcp", f.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			held = append(held, c)
		}
		// Both slots are taken once the proxy holds both connections;
		// the tunnel makes sure the first two were accepted first.
		for _, c := range held {
			fmt.Fprintf(c, "CONNECT listed.test:80 HTTP/1.1\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
				t.Fatalf("tunnel: %v %v", resp, err)
			}
		}
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if code, _ := readResponse(t, c); code != http.StatusServiceUnavailable {
			t.Fatalf("third connection = %d, want 503", code)
		}
		// Control: a slot freed is served again.
		held[0].Close()
		for i := 0; ; i++ {
			c, err := net.Dial("tcp", f.addr)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "GET http://listed.test/ HTTP/1.1\r\n\r\n")
			code, _ := readResponse(t, c)
			c.Close()
			if code == 200 {
				break
			}
			if i == 200 {
				t.Fatalf("no slot came free: %d", code)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("N26 slow headers", func(t *testing.T) {
		f := newProxyFixture(t, &Proxy{Rules: testRules(), HeaderTimeout: 50 * time.Millisecond})
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "CONNECT listed.te")
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("a client that never ends its headers: read %d, %v; want the proxy to close", n, err)
		}
	})
	t.Run("N27 bytes", func(t *testing.T) {
		f := newProxyFixture(t, &Proxy{Rules: testRules(), MaxBytes: 64 << 10})
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET http://listed.test/big HTTP/1.1\r\n\r\n")
		all, _ := io.ReadAll(c)
		if len(all) >= 1<<20 || len(all) > 64<<10 {
			t.Fatalf("relayed %d bytes, want at most the 64 KiB budget", len(all))
		}
		// Control: without the bound the whole body arrives.
		g := newProxyFixture(t, &Proxy{Rules: testRules()})
		c2, err := net.Dial("tcp", g.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		c2.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c2, "GET http://listed.test/big HTTP/1.1\r\n\r\n")
		if all, _ := io.ReadAll(c2); len(all) < 1<<20 {
			t.Fatalf("unbounded relay got %d bytes", len(all))
		}
	})
}

func TestInternalRange(t *testing.T) {
	for _, tc := range []struct {
		addr, want string
	}{
		{"127.0.0.1", "loopback"}, {"127.255.0.1", "loopback"}, {"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"}, {"169.254.169.254", "link-local"}, {"fe80::1", "link-local"},
		{"10.1.2.3", "private"}, {"172.16.0.1", "private"}, {"192.168.1.1", "private"}, {"fc00::1", "private"},
		{"0.0.0.0", "unspecified"}, {"::", "unspecified"}, {"100.64.0.1", "carrier-grade NAT"},
		{"239.1.1.1", "multicast"}, {"ff05::1", "multicast"}, {"224.0.0.1", "link-local"}, {"255.255.255.255", "broadcast"},
		{"::127.0.0.1", "IPv4-compatible IPv6"}, {"64:ff9b::a9fe:a9fe", "NAT64"}, {"2002:7f00:1::", "6to4"},
		// IPv6 outside 2000::/3 that no named range above covers: refused
		// as not modelled (N29, N30).
		{"::ffff:0:127.0.0.1", "IPv6 outside global unicast"}, {"::ffff:0:a9fe:a9fe", "IPv6 outside global unicast"},
		{"100::1", "IPv6 outside global unicast"}, {"4000::1", "IPv6 outside global unicast"}, {"e000::1", "IPv6 outside global unicast"},
		// Controls: public addresses pass.
		{"203.0.113.10", ""}, {"93.184.215.14", ""}, {"2606:4700::1111", ""}, {"::ffff:8.8.8.8", ""},
	} {
		if got := internalRange(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("internalRange(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// TestProxyLogsDenial: each refusal is one Warn record naming host, port,
// reason and client; an allowed connection logs nothing (the control).
func TestProxyLogsDenial(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(b)
	}), nil))
	f := newProxyFixture(t, &Proxy{Rules: testRules(), Client: "npx server", Log: log})
	if code, _ := f.connect(t, "listed.test:80"); code != 200 {
		t.Fatalf("control CONNECT = %d", code)
	}
	mu.Lock()
	if buf.Len() != 0 {
		t.Fatalf("an allowed connection logged %q", buf.String())
	}
	mu.Unlock()
	if code, _ := f.connect(t, "meta.test:80"); code != 403 {
		t.Fatalf("CONNECT meta.test = %d, want 403", code)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"level=WARN", "host=meta.test", "port=80", "addr=169.254.169.254", `client="npx server"`, "link-local"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log %q lacks %q", buf.String(), want)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// TestProxyCloseEndsServing: Close is the proxy's death. Control: the
// listed host is reached and a tunnel is open. After Close the tunnel
// is ended, nothing accepts at the proxy's address (a connection is
// refused, not accepted and dropped nor left queued), and Serve on the
// closed proxy returns at once, closing its listener.
func TestProxyCloseEndsServing(t *testing.T) {
	f := newProxyFixture(t, &Proxy{Rules: testRules()})
	if code, body := f.get(t, "http://listed.test/"); code != 200 || !strings.HasPrefix(body, "listed") {
		t.Fatalf("control: %d %q", code, body)
	}
	tunnel, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer tunnel.Close()
	tunnel.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(tunnel, "CONNECT listed.test:80 HTTP/1.1\r\nHost: listed.test:80\r\n\r\n")
	br := bufio.NewReader(tunnel)
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("control tunnel: %v %v", resp, err)
	}

	f.proxy.Close()
	if n, err := br.Read(make([]byte, 1)); err == nil {
		t.Errorf("the open tunnel still carries data after Close (%d bytes)", n)
	}
	if c, err := net.DialTimeout("tcp", f.addr, 5*time.Second); err == nil {
		c.Close()
		t.Errorf("a connection to the closed proxy's address was accepted")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.proxy.Serve(l); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve on a closed proxy = %v, want net.ErrClosed", err)
	}
	if c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second); err == nil {
		c.Close()
		t.Errorf("Serve on a closed proxy left its listener open")
	}
	if f.listedHits.Load() != 1 {
		t.Errorf("the listed server got %d requests, want the control's 1", f.listedHits.Load())
	}
}

// serveTestProxy serves p on a loopback port until the test ends, when p
// and its listener are closed, and returns the port's address.
func serveTestProxy(t testing.TB, p *Proxy) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	t.Cleanup(func() { l.Close(); p.Close() })
	return l.Addr().String()
}
