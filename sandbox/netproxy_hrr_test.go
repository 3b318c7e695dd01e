package sandbox

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// helloBytes returns the TLS 1.3 ClientHello a Go client sends naming
// sni, as its records.
func helloBytes(t testing.TB, sni string) []byte {
	t.Helper()
	a, b := net.Pipe()
	go tls.Client(a, &tls.Config{ServerName: sni, InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}).Handshake()
	defer a.Close()
	defer b.Close()
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	raw, err := readHandshakeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// hrrRecord is a HelloRetryRequest as a front sends it: a ServerHello
// record whose random is the HRR value (RFC 8446 §4.1.3).
func hrrRecord() []byte {
	body := []byte{0x03, 0x03}
	body = append(body, helloRetryRandom[:]...)
	body = append(body, 0)                                                                // session id
	body = append(body, 0x13, 0x01)                                                       // TLS_AES_128_GCM_SHA256
	body = append(body, 0)                                                                // compression
	ext := []byte{0x00, 0x2b, 0x00, 0x02, 0x03, 0x04, 0x00, 0x33, 0x00, 0x02, 0x00, 0x17} // supported_versions 1.3, key_share P-256
	body = append(body, byte(len(ext)>>8), byte(len(ext)))
	body = append(body, ext...)
	msg := append([]byte{0x02, 0, byte(len(body) >> 8), byte(len(body))}, body...)
	return append([]byte{0x16, 0x03, 0x03, byte(len(msg) >> 8), byte(len(msg))}, msg...)
}

// An hrrFront is a TLS front that answers every first ClientHello with a
// HelloRetryRequest and routes the connection by the second hello's
// server name, as a front that does not compare the two would.
type hrrFront struct {
	ln     net.Listener
	mu     sync.Mutex
	routed []string // the server name of each second hello
}

func newHRRFront(t *testing.T) *hrrFront {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &hrrFront{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				if _, err := readHandshakeRecords(c); err != nil {
					return
				}
				c.Write(hrrRecord())
				for {
					var hdr [5]byte
					if _, err := io.ReadFull(c, hdr[:1]); err != nil {
						return
					}
					if hdr[0] != 0x14 { // not a change_cipher_spec
						raw, err := readHandshakeRecords(io.MultiReader(bytes.NewReader(hdr[:1]), c))
						if err != nil {
							return
						}
						sni, _, err := parseClientHello(raw)
						if err != nil {
							return
						}
						f.mu.Lock()
						f.routed = append(f.routed, sni)
						f.mu.Unlock()
						io.WriteString(c, "site "+sni)
						return
					}
					if _, err := io.ReadFull(c, hdr[1:]); err != nil {
						return
					}
					io.CopyN(io.Discard, c, int64(hdr[3])<<8|int64(hdr[4]))
				}
			}()
		}
	}()
	return f
}

func (f *hrrFront) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.routed...)
}

// TestProxyTunnelHelloRetry is row N39: a tunnel's first ClientHello
// names the listed host, the front asks for another (a
// HelloRetryRequest), and the second hello names another site. The
// control sends the same flights straight to the front, which routes by
// the second hello: fronting works there. Through the proxy the tunnel
// is cut before the second hello reaches the front; a second hello that
// names the listed host again passes.
func TestProxyTunnelHelloRetry(t *testing.T) {
	front := newHRRFront(t)
	var mu sync.Mutex
	var denials []NetworkDenial
	p := &Proxy{
		Rules:    []HostRule{{Host: "front.test", Ports: []int{443}}},
		OnDenial: func(d NetworkDenial) { mu.Lock(); denials = append(denials, d); mu.Unlock() },
		Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			if host == "front.test" {
				return []netip.Addr{frontIP}, nil
			}
			return nil, fmt.Errorf("no such host %s", host)
		},
		Dial: func(ctx context.Context, a netip.AddrPort) (net.Conn, error) {
			if a.Addr() != frontIP {
				return nil, errors.New("test dialer: no test backend")
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", front.ln.Addr().String())
		},
	}
	proxyAddr := serveTestProxy(t, p)
	ff := &frontFixture{addr: proxyAddr, tlsAddr: front.ln.Addr().String()}

	first := helloBytes(t, "front.test")
	exchange := func(c net.Conn, second string) string {
		if _, err := c.Write(first); err != nil {
			return ""
		}
		var hdr [5]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return ""
		}
		if _, err := io.CopyN(io.Discard, c, int64(hdr[3])<<8|int64(hdr[4])); err != nil {
			return ""
		}
		c.Write([]byte{0x14, 0x03, 0x03, 0x00, 0x01, 0x01}) // change_cipher_spec, as clients send after an HRR
		c.Write(helloBytes(t, second))
		b, _ := io.ReadAll(c)
		return string(b)
	}

	if got := exchange(ff.tunnel(t, "front.test:443", true), "other.test"); got != "site other.test" {
		t.Fatalf("control (straight to the front): %q, want the other site", got)
	}
	if got := exchange(ff.tunnel(t, "front.test:443", false), "other.test"); strings.Contains(got, "other") {
		t.Fatalf("through the proxy the front routed to %q", got)
	}
	if r := front.seen(); len(r) != 1 {
		t.Fatalf("the front routed %q, want only the control's", r)
	}
	mu.Lock()
	got := append([]NetworkDenial(nil), denials...)
	mu.Unlock()
	if len(got) != 1 || !strings.Contains(got[0].Reason, "second TLS hello") {
		t.Fatalf("denials %+v, want one for the second hello", got)
	}
	if got := exchange(ff.tunnel(t, "front.test:443", false), "front.test"); got != "site front.test" {
		t.Fatalf("a second hello naming the listed host through the proxy: %q", got)
	}
}

// TestProxyTunnelHelloBounded: a "ClientHello" that declares 16 MiB and
// keeps coming is read to maxClientHello and refused; the front gets
// nothing of it. The control: a real hello through the same proxy
// reaches the front.
func TestProxyTunnelHelloBounded(t *testing.T) {
	var mu sync.Mutex
	var denials []NetworkDenial
	f := newFrontFixture(t, &Proxy{OnDenial: func(d NetworkDenial) { mu.Lock(); denials = append(denials, d); mu.Unlock() }})
	if body, err := tlsGet(f.tunnel(t, "front.test:443", false), "front.test", "front.test"); err != nil || body != "200 site front.test" {
		t.Fatalf("control: %q %v", body, err)
	}
	names, _ := f.seen()
	c := f.tunnel(t, "front.test:443", false)
	rec := make([]byte, 5+1<<14)
	copy(rec, []byte{0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0xff, 0xff, 0xff})
	sent := 0
	for sent < 1<<20 {
		if _, err := c.Write(rec); err != nil {
			break
		}
		sent += len(rec)
		rec[5] = 0 // the next records go on with the same message
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("the proxy answered %d bytes to an endless hello", n)
	}
	if now, _ := f.seen(); len(now) != len(names) {
		t.Fatalf("the front saw hellos %q", now[len(names):])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(denials) != 1 || !strings.Contains(denials[0].Reason, "over 65536 bytes") {
		t.Fatalf("denials %+v, want one for the hello's size", denials)
	}
}

// FuzzClientHello: whatever a tunnel's client sends, reading its hello
// ends (no panic, no read past maxClientHello) and a hello it accepts
// is exactly the records it read.
func FuzzClientHello(f *testing.F) {
	hello := helloBytes(f, "front.test")
	f.Add(hello)
	f.Add(hello[:len(hello)/2])
	f.Add(append(append([]byte{}, hello...), hello...))
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0xff, 0xff, 0xff})
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x01, 0x01})
	f.Add(hrrRecord())
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &countingReader{r: io.NopCloser(bytes.NewReader(b)), left: 1 << 40}
		raw, err := readHandshakeRecords(r)
		if read := 1<<40 - r.left; read > maxClientHello+5+maxRecord {
			t.Fatalf("read %d bytes", read)
		}
		if err != nil {
			return
		}
		if !bytes.HasPrefix(b, raw) {
			t.Fatalf("the records returned are not the bytes read")
		}
		parseClientHello(raw)
	})
}
