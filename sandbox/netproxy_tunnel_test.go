package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A frontFixture is a Proxy in front of one "front": a server on one
// address that serves many sites, chosen by the TLS server name (SNI) or
// the HTTP Host, as a CDN or a shared load balancer does. The allow list
// names one site of the front, front.test. Through a tunnel to it, a
// program that names another site inside the tunnel (domain fronting)
// reaches that site: the proxy checked the CONNECT line only.
type frontFixture struct {
	addr     string // the proxy's
	tlsAddr  string // the front's TLS listener, direct
	httpAddr string // the front's plain listener, direct
	mu       sync.Mutex
	names    []string // SNI the front's TLS listener saw
	hosts    []string // Host of every request the front served
}

var (
	frontIP   = netip.MustParseAddr("203.0.113.50")
	frontIPv6 = netip.MustParseAddr("2001:db8::50")
)

func newFrontFixture(t *testing.T, p *Proxy) *frontFixture {
	t.Helper()
	f := &frontFixture{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hosts = append(f.hosts, r.Host)
		f.mu.Unlock()
		io.WriteString(w, "site "+r.Host)
	})
	ts := httptest.NewUnstartedServer(h)
	ts.TLS = &tls.Config{GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
		f.mu.Lock()
		f.names = append(f.names, chi.ServerName)
		f.mu.Unlock()
		return nil, nil
	}}
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	ts.StartTLS()
	t.Cleanup(ts.Close)
	hs := httptest.NewUnstartedServer(h)
	hs.Listener = skipBlankListener{hs.Listener}
	hs.Start()
	t.Cleanup(hs.Close)
	f.tlsAddr, f.httpAddr = ts.Listener.Addr().String(), hs.Listener.Addr().String()
	p.Rules = []HostRule{{Host: "front.test", Ports: []int{443, 80}}, {Host: "2001:db8::50", Ports: []int{443, 80}}}
	p.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host == "front.test" {
			return []netip.Addr{frontIP}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	p.Dial = func(ctx context.Context, a netip.AddrPort) (net.Conn, error) {
		if a.Addr() != frontIP && a.Addr() != frontIPv6 {
			return nil, fmt.Errorf("test dialer: %v is no test backend", a)
		}
		to := f.httpAddr
		if a.Port() == 443 {
			to = f.tlsAddr
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", to)
	}
	f.addr = serveTestProxy(t, p)
	return f
}

// skipBlankListener's connections drop the empty lines a client sends
// before its first request, as RFC 9112 §2.2 lets a server do (and
// common fronts do).
type skipBlankListener struct{ net.Listener }

func (l skipBlankListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &skipBlankConn{Conn: c}, nil
}

type skipBlankConn struct {
	net.Conn
	started bool
}

func (c *skipBlankConn) Read(b []byte) (int, error) {
	for {
		n, err := c.Conn.Read(b)
		if c.started || n == 0 {
			return n, err
		}
		i := 0
		for i < n && (b[i] == '\r' || b[i] == '\n') {
			i++
		}
		if i < n {
			c.started = true
			return copy(b, b[i:n]), err
		}
		if err != nil {
			return 0, err
		}
	}
}

// seen returns the server names and hosts the front saw.
func (f *frontFixture) seen() (names, hosts []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.names), slices.Clone(f.hosts)
}

// tunnel opens a CONNECT tunnel through the proxy, or (proxy "") a
// connection straight to the front's listener for target's port.
func (f *frontFixture) tunnel(t *testing.T, target string, direct bool) net.Conn {
	t.Helper()
	addr := f.addr
	if direct {
		addr = f.httpAddr
		if strings.HasSuffix(target, ":443") {
			addr = f.tlsAddr
		}
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if direct {
		return c
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %v %v", target, resp, err)
	}
	if br.Buffered() != 0 {
		t.Fatalf("CONNECT %s: bytes after the 200", target)
	}
	return c
}

// tlsGet speaks TLS naming sni on c and GETs / with Host host; it returns
// the body, or the error that ended the exchange.
func tlsGet(c net.Conn, sni, host string) (string, error) {
	cfg := &tls.Config{ServerName: sni, InsecureSkipVerify: true}
	tc := tls.Client(c, cfg)
	if err := tc.Handshake(); err != nil {
		return "", err
	}
	return rawGet(tc, host, "")
}

// rawGet sends one GET / with the Host host, then more (a second request,
// pipelined), and returns what came back.
func rawGet(c net.Conn, host, more string) (string, error) {
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n%s", host, more); err != nil {
		return "", err
	}
	var out []string
	br := bufio.NewReader(c)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if len(out) > 0 {
				return strings.Join(out, "|"), nil
			}
			return "", err
		}
		b, _ := io.ReadAll(resp.Body)
		out = append(out, fmt.Sprintf("%d %s", resp.StatusCode, b))
		if more == "" || len(out) == 2 || resp.Close {
			return strings.Join(out, "|"), nil
		}
	}
}

// TestProxyTunnelFronting is rows N32–N38: a program names, inside a
// tunnel granted for a listed name, another site of the same server (a
// TLS server name, an HTTP Host, a second pipelined request). Each row's
// control is the same exchange made straight to the front (no proxy),
// which serves the other site: fronting works there. Through the proxy
// the tunnel is cut, a denial recorded (N36: the second request is never
// read, as on a plain-HTTP connection), and the front served nothing for
// the other site; the listed site, named the same way, is reached.
func TestProxyTunnelFronting(t *testing.T) {
	type exchange func(c net.Conn) (string, error)
	for _, tc := range []struct {
		row, name, target string
		attack, listed    exchange
		reason            string
	}{
		{"N32", "a TLS server name other than the CONNECT host", "front.test:443",
			func(c net.Conn) (string, error) { return tlsGet(c, "other.test", "other.test") },
			func(c net.Conn) (string, error) { return tlsGet(c, "front.test", "front.test") },
			"server name"},
		{"N33", "a TLS hello without a server name to a listed name", "front.test:443",
			func(c net.Conn) (string, error) { return tlsGet(c, "", "other.test") },
			func(c net.Conn) (string, error) { return tlsGet(c, "FRONT.test", "front.test") },
			"server name"},
		{"N34", "a TLS server name to a listed IP literal", "[2001:db8::50]:443",
			func(c net.Conn) (string, error) { return tlsGet(c, "other.test", "other.test") },
			func(c net.Conn) (string, error) { return tlsGet(c, "", "[2001:db8::50]") },
			"server name"},
		{"N35", "an HTTP Host other than the CONNECT host", "front.test:80",
			func(c net.Conn) (string, error) { return rawGet(c, "other.test", "") },
			func(c net.Conn) (string, error) { return rawGet(c, "front.test:80", "") },
			"Host"},
		{"N36", "a second pipelined request for another Host", "front.test:80",
			func(c net.Conn) (string, error) {
				return rawGet(c, "front.test", "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
			},
			func(c net.Conn) (string, error) { return rawGet(c, "front.test.", "") },
			""},
		{"N37", "an HTTP request behind a leading empty line", "front.test:80",
			func(c net.Conn) (string, error) {
				if _, err := io.WriteString(c, "\r\n"); err != nil {
					return "", err
				}
				return rawGet(c, "other.test", "")
			},
			func(c net.Conn) (string, error) { return rawGet(c, "front.test", "") },
			"neither TLS"},
		{"N38", "an HTTP Host other than a listed IP literal", "[2001:db8::50]:80",
			func(c net.Conn) (string, error) { return rawGet(c, "other.test", "") },
			func(c net.Conn) (string, error) { return rawGet(c, "[2001:db8::50]:80", "") },
			"Host"},
	} {
		t.Run(tc.row+" "+tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var denials []NetworkDenial
			f := newFrontFixture(t, &Proxy{OnDenial: func(d NetworkDenial) { mu.Lock(); denials = append(denials, d); mu.Unlock() }})

			// Control: the front serves the other site to whoever names it.
			body, err := tc.attack(f.tunnel(t, tc.target, true))
			if err != nil || !strings.Contains(body, "site other.test") {
				t.Fatalf("control (straight to the front): %q %v; want the other site served", body, err)
			}
			_, hosts := f.seen()
			before := len(hosts)

			// The attack, through the proxy.
			body, err = tc.attack(f.tunnel(t, tc.target, false))
			if strings.Contains(body, "site other.test") {
				t.Fatalf("through the proxy the front served the other site: %q", body)
			}
			if _, hosts := f.seen(); slices.ContainsFunc(hosts[before:], func(h string) bool { return strings.Contains(h, "other") }) {
				t.Fatalf("through the proxy the front served %q", hosts[before:])
			}
			mu.Lock()
			got := slices.Clone(denials)
			mu.Unlock()
			switch {
			case tc.reason == "" && len(got) != 0:
				t.Fatalf("denials %+v, want none (the second request is never read)", got)
			case tc.reason != "" && (len(got) != 1 || !strings.Contains(got[0].Reason, tc.reason)):
				t.Fatalf("denials %+v (%q %v), want one naming %q", got, body, err, tc.reason)
			}

			// The listed site, through the proxy, is reached.
			body, err = tc.listed(f.tunnel(t, tc.target, false))
			if err != nil || !strings.HasPrefix(body, "200 site ") || strings.Contains(body, "other") {
				t.Fatalf("the listed site through the proxy: %q %v", body, err)
			}
		})
	}
}

// TestProxyTunnelSSH: a tunnel that starts with an SSH version line, a
// protocol without virtual hosts, is relayed as it is (here to the
// front's HTTP listener, whose 400 comes back through the tunnel).
func TestProxyTunnelSSH(t *testing.T) {
	f := newFrontFixture(t, &Proxy{})
	c := f.tunnel(t, "front.test:80", false)
	io.WriteString(c, "SSH-2.0-test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("SSH line through the tunnel: %v %v, want the front's 400 relayed", resp, err)
	}
}

// TestTunnelNameComparison: a name sent inside a tunnel matches the
// CONNECT host in ASCII case only; Unicode folding (which takes "ſ" for
// "s" and the Kelvin sign for "k") would pass names a server reads as
// others.
func TestTunnelNameComparison(t *testing.T) {
	lit := netip.MustParseAddr("2001:db8::50")
	for _, tc := range []struct {
		sent, host string
		want       bool
	}{
		{"front.test", "front.test", true},
		{"FRONT.Test", "front.test", true},
		{"front.teſt", "front.test", false},
		{"\u212aafka.test", "kafka.test", false},
		{"front.test.", "front.test", false}, // an SNI may not end in a dot
		{"other.test", "front.test", false},
		{"", "front.test", false},
	} {
		if got := sameName(tc.sent, tc.host); got != tc.want {
			t.Errorf("sameName(%q, %q) = %v, want %v", tc.sent, tc.host, got, tc.want)
		}
	}
	for _, tc := range []struct {
		header string
		want   bool
	}{
		{"front.test", true}, {"front.test:80", true}, {"Front.Test.:80", true},
		{"front.test:81", false}, {"front.teſt", false}, {"\u212aafka.test", false}, {"front.test:x", false},
	} {
		if got := sameHost(tc.header, "front.test", netip.Addr{}, false, 80); got != tc.want {
			t.Errorf("sameHost(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
	for _, tc := range []struct {
		header string
		want   bool
	}{
		{"[2001:db8::50]", true}, {"[2001:DB8::50]:80", true}, {"[2001:db8::51]", false}, {"front.test", false},
	} {
		if got := sameHost(tc.header, "2001:db8::50", lit, true, 80); got != tc.want {
			t.Errorf("sameHost(%q) on a literal = %v, want %v", tc.header, got, tc.want)
		}
	}
}

// TestProxyNameFolding is row N42: a name asked with a character that
// lower-cases to ASCII (the Kelvin sign to "k") was taken for the listed
// name it became. The control: the listed name in ASCII, upper case
// included, is reached.
func TestProxyNameFolding(t *testing.T) {
	f := newProxyFixture(t, &Proxy{Rules: []HostRule{{Host: "kafka.test", Ports: []int{80}}}})
	f.resolveFunc = func(host string, _ int) []netip.Addr {
		if host == "kafka.test" {
			return []netip.Addr{listedIP}
		}
		return nil
	}
	for _, target := range []string{"kafka.test:80", "KAFKA.test:80"} {
		if code, body := f.connect(t, target); code != 200 || !strings.HasPrefix(body, "listed") {
			t.Fatalf("control %s: %d %q", target, code, body)
		}
	}
	hits := f.listedHits.Load()
	if code, body := f.connect(t, "\u212aafka.test:80"); code != http.StatusForbidden || !strings.Contains(body, "not a host name") {
		t.Fatalf("the Kelvin sign: %d %q, want 403, not a host name", code, body)
	}
	if code, body := f.get(t, "http://\u212aafka.test/"); code != http.StatusForbidden || !strings.Contains(body, "not a host name") {
		t.Fatalf("the Kelvin sign in plain HTTP: %d %q, want 403, not a host name", code, body)
	}
	if f.listedHits.Load() != hits {
		t.Fatalf("the listed server got %d requests for the folded name", f.listedHits.Load()-hits)
	}
}
