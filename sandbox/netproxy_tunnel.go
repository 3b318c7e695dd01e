package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// maxClientHello bounds the bytes the proxy reads of a tunnel's TLS
// ClientHello (its records, and anything sent with it) before it judges
// the server name. A hello is a few kilobytes, post-quantum key shares
// included.
const maxClientHello = 64 << 10

// extensionECH is the TLS extension of an encrypted ClientHello: its
// outer server name is not the one the server acts on.
const extensionECH = 0xfe0d

// errHelloRead ends the TLS parse once the ClientHello was read.
var errHelloRead = errors.New("sandbox proxy: client hello read")

// tunnelStart judges what a CONNECT tunnel's client sends first, since
// one address may serve many sites (a CDN, a shared load balancer) and
// the site is named inside the tunnel, where the CONNECT line's check
// does not reach. The proxy models three beginnings:
//
//   - a TLS ClientHello: its server name (SNI) must be the CONNECT host
//     (case and a trailing dot aside), and absent when the host is an IP
//     literal; a hello that cannot be parsed, names no server for a name,
//     or is encrypted (ECH, whose outer name is not the one served) is
//     refused;
//   - an HTTP/1 request: its Host must be the CONNECT host (and port, if
//     it names one); it is then forwarded as a plain-HTTP request is, one
//     per connection (inner is returned);
//   - an SSH version line ("SSH-"), a protocol without virtual hosts.
//
// Anything else, or nothing within the header timeout, is refused (d is
// set; inner too when the refusal can be answered in HTTP). src is what
// the relay reads from the client: the bytes read to judge, then the
// rest.
func (p *Proxy) tunnelStart(c net.Conn, br *bufio.Reader, host string, port int, target netip.AddrPort) (src io.Reader, inner *http.Request, d *NetworkDenial) {
	timeout := orDuration(p.HeaderTimeout, DefaultProxyHeader)
	c.SetReadDeadline(time.Now().Add(timeout))
	defer c.SetReadDeadline(time.Time{})
	name := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "."))
	literal, err := netip.ParseAddr(name)
	isLiteral := err == nil
	addr := target.Addr().String()
	denyTunnel := func(reason string) *NetworkDenial {
		return p.deny(host, port, addr, reason)
	}
	first, err := br.Peek(1)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, &NetworkDenial{} // gone: nothing to record
		}
		return nil, nil, denyTunnel("a tunnel whose client sent nothing within the header timeout")
	}
	switch {
	case first[0] == 0x16: // a TLS handshake record
		sni, exts, read, err := readClientHello(c, br, timeout)
		switch {
		case err != nil:
			return nil, nil, denyTunnel("a TLS hello that cannot be read: " + err.Error())
		case containsUint16(exts, extensionECH):
			return nil, nil, denyTunnel("an encrypted TLS hello (ECH): its server name is not the one served")
		case isLiteral && sni != "":
			return nil, nil, denyTunnel(fmt.Sprintf("a TLS server name %q in a tunnel to an IP literal", clip(sni)))
		case !isLiteral && sni == "":
			return nil, nil, denyTunnel("a TLS hello without a server name")
		case !isLiteral && !strings.EqualFold(sni, name):
			return nil, nil, denyTunnel(fmt.Sprintf("a TLS server name %q that is not the tunnel's host", clip(sni)))
		}
		return io.MultiReader(bytes.NewReader(read), br), nil, nil
	}
	if b, err := br.Peek(4); err == nil && string(b) == "SSH-" {
		return br, nil, nil
	}
	// An HTTP/1 request, read within the header bound as the CONNECT was.
	lr := &io.LimitedReader{R: br, N: maxProxyHeaderBytes}
	req, err := http.ReadRequest(bufio.NewReaderSize(lr, 4096))
	if err != nil {
		return nil, nil, denyTunnel("a tunnel whose first bytes are neither TLS, HTTP/1 nor SSH")
	}
	if req.ProtoMajor != 1 || req.Method == http.MethodConnect {
		return nil, req, denyTunnel("an HTTP request in a tunnel that is not HTTP/1")
	}
	lr.N = math.MaxInt64
	if !sameHost(req.Host, name, literal, isLiteral, port) {
		return nil, req, denyTunnel(fmt.Sprintf("an HTTP Host %q that is not the tunnel's host", clip(req.Host)))
	}
	req.Host = net.JoinHostPort(name, strconv.Itoa(port))
	if !isLiteral && port == 80 {
		req.Host = name
	}
	return nil, req, nil
}

// sameHost reports whether an HTTP Host names the tunnel's host (and its
// port, if it names one).
func sameHost(hostHeader, name string, literal netip.Addr, isLiteral bool, port int) bool {
	h, ps, err := net.SplitHostPort(hostHeader)
	if err != nil {
		h, ps = hostHeader, ""
	}
	if ps != "" {
		if n, err := strconv.Atoi(ps); err != nil || n != port {
			return false
		}
	}
	h = strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), "."))
	if isLiteral {
		a, err := netip.ParseAddr(h)
		return err == nil && a.Zone() == "" && a.Unmap() == literal.Unmap()
	}
	return h != "" && h == name
}

// readClientHello reads a TLS ClientHello from br through crypto/tls and
// returns its server name, its extensions, and every byte read, for the
// relay to send on. It reads at most maxClientHello bytes, within
// timeout, and writes nothing to the client.
func readClientHello(c net.Conn, br *bufio.Reader, timeout time.Duration) (sni string, exts []uint16, read []byte, err error) {
	rc := &recordingConn{Conn: c, r: io.LimitReader(br, maxClientHello)}
	var got *tls.ClientHelloInfo
	srv := tls.Server(rc, &tls.Config{GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
		got = chi
		return nil, errHelloRead
	}})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	herr := srv.HandshakeContext(ctx)
	if got == nil {
		if herr == nil {
			herr = errors.New("no hello")
		}
		if rc.buf.Len() >= maxClientHello {
			herr = fmt.Errorf("over %d bytes", maxClientHello)
		}
		return "", nil, nil, herr
	}
	return got.ServerName, got.Extensions, rc.buf.Bytes(), nil
}

// A recordingConn feeds crypto/tls the client's bytes, keeping a copy,
// and swallows what it writes (an alert): the proxy only reads the hello.
type recordingConn struct {
	net.Conn
	r   io.Reader
	buf bytes.Buffer
}

func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.buf.Write(b[:n])
	return n, err
}

func (c *recordingConn) Write(b []byte) (int, error)        { return len(b), nil }
func (c *recordingConn) Close() error                       { return nil }
func (c *recordingConn) SetDeadline(t time.Time) error      { return nil }
func (c *recordingConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *recordingConn) SetWriteDeadline(t time.Time) error { return nil }

func containsUint16(s []uint16, v uint16) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// clip bounds a client's string quoted in a denial.
func clip(s string) string {
	if len(s) > 128 {
		return strings.ToValidUTF8(s[:128], "") + "..."
	}
	return s
}
