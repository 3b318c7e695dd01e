package sandbox

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// TestProxyOwnAddress is row N40: a listed name resolves to an address of
// the machine the proxy runs on that is in no internal range (a global
// or documentation address on an interface: this test machine's eth0 has
// 192.0.2.2). The proxy, on the host, would reach the host's own
// services listening on all addresses. The test's LocalAddrs stands for
// the host's interfaces and names the listed server's address: the
// control (another address as the host's) reaches it; as the host's
// own, it is refused, and so is any name when the host's addresses
// cannot be read.
func TestProxyOwnAddress(t *testing.T) {
	for _, tc := range []struct {
		name  string
		local func() ([]netip.Addr, error)
		code  int
		why   string
	}{
		{"control: another address is the host's", func() ([]netip.Addr, error) { return []netip.Addr{unlistedIP}, nil }, 200, ""},
		{"the listed name's address is the host's", func() ([]netip.Addr, error) { return []netip.Addr{listedIP}, nil }, 403, "this machine's own address 203.0.113.10"},
		{"the host's, IPv4-mapped", func() ([]netip.Addr, error) { return []netip.Addr{netip.AddrFrom16(listedIP.As16())}, nil }, 403, "this machine's own address"},
		{"the host's addresses cannot be read", func() ([]netip.Addr, error) { return nil, errors.New("netlink: no") }, 403, "cannot be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newProxyFixture(t, &Proxy{Rules: testRules(), LocalAddrs: tc.local})
			code, body := f.connect(t, "listed.test:80")
			if code != tc.code || !strings.Contains(body, tc.why) {
				t.Fatalf("CONNECT listed.test:80 = %d %q, want %d naming %q", code, body, tc.code, tc.why)
			}
			if tc.code == http.StatusForbidden && f.listedHits.Load() != 0 {
				t.Fatalf("the host's service got %d requests", f.listedHits.Load())
			}
		})
	}
}

// TestLocalAddrsDefault: without LocalAddrs the proxy takes every
// address of the host's interfaces.
func TestLocalAddrsDefault(t *testing.T) {
	got, err := (&Proxy{}).localAddrs()
	if err != nil {
		t.Fatal(err)
	}
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ifs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil {
			t.Fatalf("interface address %v: %v", a, err)
		}
		found := false
		for _, g := range got {
			found = found || g == p.Addr().Unmap()
		}
		if !found {
			t.Errorf("the host's address %v is not among %v", p.Addr(), got)
		}
	}
}
