package sandbox

import (
	"bufio"
	"bytes"
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
// ClientHello (its records) before it judges the server name. A hello is a few kilobytes, post-quantum key shares
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
// set; t.inner too when the refusal can be answered in HTTP). For TLS,
// t holds the hello, which [Proxy.tlsStart] forwards (and, after a
// HelloRetryRequest, judges the second hello the same way).
func (p *Proxy) tunnelStart(c net.Conn, br *bufio.Reader, host string, port int, target netip.AddrPort) (t tunnel, d *NetworkDenial) {
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
			return tunnel{}, &NetworkDenial{} // gone: nothing to record
		}
		return tunnel{}, denyTunnel("a tunnel whose client sent nothing within the header timeout")
	}
	switch {
	case first[0] == 0x16: // a TLS handshake record
		raw, err := readHandshakeRecords(br)
		var sni string
		var exts []uint16
		if err == nil {
			sni, exts, err = parseClientHello(raw)
		}
		switch {
		case err != nil:
			return tunnel{}, denyTunnel("a TLS hello that cannot be read: " + err.Error())
		case containsUint16(exts, extensionECH):
			return tunnel{}, denyTunnel("an encrypted TLS hello (ECH): its server name is not the one served")
		case isLiteral && sni != "":
			return tunnel{}, denyTunnel(fmt.Sprintf("a TLS server name %q in a tunnel to an IP literal", clip(sni)))
		case !isLiteral && sni == "":
			return tunnel{}, denyTunnel("a TLS hello without a server name")
		case !isLiteral && !sameName(sni, name):
			return tunnel{}, denyTunnel(fmt.Sprintf("a TLS server name %q that is not the tunnel's host", clip(sni)))
		}
		return tunnel{hello: raw, sni: sni}, nil
	}
	if b, err := br.Peek(4); err == nil && string(b) == "SSH-" {
		return tunnel{}, nil
	}
	// An HTTP/1 request, read within the header bound as the CONNECT was.
	lr := &io.LimitedReader{R: br, N: maxProxyHeaderBytes}
	req, err := http.ReadRequest(bufio.NewReaderSize(lr, 4096))
	if err != nil {
		return tunnel{}, denyTunnel("a tunnel whose first bytes are neither TLS, HTTP/1 nor SSH")
	}
	if req.ProtoMajor != 1 || req.Method == http.MethodConnect {
		return tunnel{inner: req}, denyTunnel("an HTTP request in a tunnel that is not HTTP/1")
	}
	lr.N = math.MaxInt64
	if !sameHost(req.Host, name, literal, isLiteral, port) {
		return tunnel{inner: req}, denyTunnel(fmt.Sprintf("an HTTP Host %q that is not the tunnel's host", clip(req.Host)))
	}
	req.Host = net.JoinHostPort(name, strconv.Itoa(port))
	if !isLiteral && port == 80 {
		req.Host = name
	}
	return tunnel{inner: req}, nil
}

// A tunnel is what tunnelStart found at a tunnel's start: an HTTP/1
// request to forward (inner), a TLS hello read and judged (hello, sni),
// or neither (an SSH line, left in the reader).
type tunnel struct {
	inner *http.Request
	hello []byte
	sni   string
}

// sameName reports whether a, a name the client sent, is the host name
// b: letters, digits, hyphens and underscores only, compared in ASCII
// lower case (strings.EqualFold would take "ſ" for "s" and the Kelvin
// sign for "k", which a server reads as other names).
func sameName(a, b string) bool {
	return validHostName(a) && !strings.HasSuffix(a, ".") && strings.ToLower(a) == strings.ToLower(b)
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
	h = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), ".")
	if isLiteral {
		a, err := netip.ParseAddr(h)
		return err == nil && a.Zone() == "" && a.Unmap() == literal.Unmap()
	}
	return sameName(h, name)
}

// helloRetryRandom is the random of a ServerHello that is a
// HelloRetryRequest (RFC 8446 §4.1.3).
var helloRetryRandom = [32]byte{
	0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
	0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
}

// maxRecord is the largest TLS record a peer may send (RFC 8446 §5.2).
const maxRecord = 1<<14 + 256

// readHandshakeRecords reads whole TLS handshake records from r until
// they hold exactly one whole handshake message, and returns them as
// read: the proxy forwards exactly those bytes and judges what follows
// on its own. Records that end inside a second message, a record that is
// not a handshake record, or more than maxClientHello bytes are errors.
func readHandshakeRecords(r io.Reader) ([]byte, error) {
	var raw, msg []byte
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, err
		}
		n := int(hdr[3])<<8 | int(hdr[4])
		switch {
		case hdr[0] != 0x16:
			return nil, fmt.Errorf("a record of type %d, not a handshake record", hdr[0])
		case n == 0 || n > maxRecord:
			return nil, fmt.Errorf("a record of %d bytes", n)
		case len(raw)+5+n > maxClientHello:
			return nil, fmt.Errorf("over %d bytes", maxClientHello)
		}
		raw = append(raw, hdr[:]...)
		at := len(raw)
		raw = append(raw, make([]byte, n)...)
		if _, err := io.ReadFull(r, raw[at:]); err != nil {
			return nil, err
		}
		msg = append(msg, raw[at:]...)
		if len(msg) < 4 {
			continue
		}
		switch want := 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])); {
		case len(msg) == want:
			return raw, nil
		case len(msg) > want:
			return nil, errors.New("records that hold more than the hello")
		}
	}
}

// parseClientHello reads the ClientHello in raw (as readHandshakeRecords
// returned it) through crypto/tls, and returns its server name and
// extensions.
func parseClientHello(raw []byte) (sni string, exts []uint16, err error) {
	if len(raw) < 6 || raw[5] != 0x01 {
		return "", nil, errors.New("not a ClientHello")
	}
	var got *tls.ClientHelloInfo
	srv := tls.Server(&helloConn{r: bytes.NewReader(raw)}, &tls.Config{GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
		got = chi
		return nil, errHelloRead
	}})
	herr := srv.Handshake()
	if got == nil {
		if herr == nil {
			herr = errors.New("no hello")
		}
		return "", nil, herr
	}
	return got.ServerName, got.Extensions, nil
}

// A helloConn feeds crypto/tls the hello's bytes and swallows what it
// writes (an alert): the proxy only reads the hello.
type helloConn struct {
	net.Conn // nil: only the methods below are used
	r        io.Reader
}

func (c *helloConn) Read(b []byte) (int, error)         { return c.r.Read(b) }
func (c *helloConn) Write(b []byte) (int, error)        { return len(b), nil }
func (c *helloConn) Close() error                       { return nil }
func (c *helloConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (c *helloConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (c *helloConn) SetDeadline(t time.Time) error      { return nil }
func (c *helloConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *helloConn) SetWriteDeadline(t time.Time) error { return nil }

// isHelloRetry reports whether the server's first record, header hdr and
// body, is a HelloRetryRequest; ok is false for a ServerHello too short
// in its record to tell.
func isHelloRetry(hdr [5]byte, body []byte) (retry, ok bool) {
	if hdr[0] != 0x16 || len(body) == 0 || body[0] != 0x02 {
		return false, true // not a ServerHello (an alert, TLS 1.2 or less)
	}
	if len(body) < 6+32 {
		return false, false
	}
	return [32]byte(body[6:38]) == helloRetryRandom, true
}

// tlsStart forwards a tunnel's first ClientHello (hello, already judged)
// to up, passes the server's first record back to c and, when that is a
// HelloRetryRequest, judges the client's second hello as the first: it
// must name the same server. Only then does the relay start; it returns
// false when the tunnel is to be cut.
func (p *Proxy) tlsStart(c net.Conn, br *bufio.Reader, up net.Conn, hello []byte, sni, host string, port int, addr string) bool {
	idle := orDuration(p.IdleTimeout, DefaultProxyIdle)
	up.SetWriteDeadline(time.Now().Add(idle))
	if _, err := up.Write(hello); err != nil {
		return false
	}
	up.SetReadDeadline(time.Now().Add(idle))
	var hdr [5]byte
	if _, err := io.ReadFull(up, hdr[:]); err != nil {
		return false
	}
	n := int(hdr[3])<<8 | int(hdr[4])
	if n > maxRecord+2048 {
		return false
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(up, body); err != nil {
		return false
	}
	c.SetWriteDeadline(time.Now().Add(idle))
	if _, err := c.Write(append(hdr[:], body...)); err != nil {
		return false
	}
	retry, ok := isHelloRetry(hdr, body)
	if !ok {
		p.deny(host, port, addr, "a TLS server hello the proxy cannot read")
		return false
	}
	if !retry {
		return true
	}
	// The client answers a HelloRetryRequest with change_cipher_spec
	// records (optional) and a second ClientHello, in the clear.
	c.SetReadDeadline(time.Now().Add(orDuration(p.HeaderTimeout, DefaultProxyHeader)))
	defer c.SetReadDeadline(time.Time{})
	var ccs []byte
	for {
		b, err := br.Peek(5)
		if err != nil {
			return false
		}
		if b[0] != 0x14 {
			break
		}
		m := 5 + (int(b[3])<<8 | int(b[4]))
		if m > 5+8 || len(ccs) > 64 {
			p.deny(host, port, addr, "a TLS change_cipher_spec the proxy does not model")
			return false
		}
		rec := make([]byte, m)
		if _, err := io.ReadFull(br, rec); err != nil {
			return false
		}
		ccs = append(ccs, rec...)
	}
	raw, err := readHandshakeRecords(br)
	if err != nil {
		p.deny(host, port, addr, "a second TLS hello that cannot be read: "+err.Error())
		return false
	}
	sni2, exts, err := parseClientHello(raw)
	switch {
	case err != nil:
		p.deny(host, port, addr, "a second TLS hello that cannot be read: "+err.Error())
		return false
	case containsUint16(exts, extensionECH):
		p.deny(host, port, addr, "an encrypted second TLS hello (ECH)")
		return false
	case !sameName(sni2, sni):
		p.deny(host, port, addr, fmt.Sprintf("a second TLS hello naming %q, not %q as the first", clip(sni2), clip(sni)))
		return false
	}
	up.SetWriteDeadline(time.Now().Add(idle))
	if _, err := up.Write(append(ccs, raw...)); err != nil {
		return false
	}
	return true
}

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
