package sandbox

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// TestProxyOwnNetworks is rows N40 and N41: a listed name resolves to an
// address of the machine the proxy runs on (N40), or of its local
// network (N41), that is in no internal range: a global or documentation
// address on an interface (this test machine's eth0 is 192.0.2.2/24).
// The proxy, on the host, would reach the host's own services listening
// on all addresses, or its neighbours. The test's LocalNets stands for
// the host's interfaces: the control (the host on another network)
// reaches the listed server; with its address as the host's, or in the
// host's network, it is refused, and so is any name when the host's
// networks cannot be read.
func TestProxyOwnNetworks(t *testing.T) {
	nets := func(p ...string) func() ([]netip.Prefix, error) {
		return func() ([]netip.Prefix, error) {
			var out []netip.Prefix
			for _, s := range p {
				out = append(out, netip.MustParsePrefix(s))
			}
			return out, nil
		}
	}
	for _, tc := range []struct {
		row, name string
		local     func() ([]netip.Prefix, error)
		code      int
		why       string
	}{
		{"", "control: the host is on another network", nets("127.0.0.1/8", "198.51.100.7/24", "2001:db8::7/64"), 200, ""},
		{"N40", "the listed name's address is the host's", nets("203.0.113.10/32"), 403, "this machine's own address 203.0.113.10"},
		{"N40", "the host's, IPv4-mapped", nets("::ffff:203.0.113.10/128"), 403, "this machine's own address 203.0.113.10"},
		{"N41", "the listed name's address is on the host's network", nets("203.0.113.2/24"), 403, "the network 203.0.113.0/24 of this machine"},
		{"N40", "the host's networks cannot be read", func() ([]netip.Prefix, error) { return nil, errors.New("netlink: no") }, 403, "cannot be read"},
	} {
		t.Run(tc.row+" "+tc.name, func(t *testing.T) {
			f := newProxyFixture(t, &Proxy{Rules: testRules(), LocalNets: tc.local})
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

// TestLocalNetsDefault: without LocalNets the proxy takes the network of
// every address of the host's interfaces.
func TestLocalNetsDefault(t *testing.T) {
	got, err := (&Proxy{}).localNets()
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
			found = found || g.Addr() == p.Addr().Unmap().WithZone("") && g.Contains(p.Addr().Unmap().WithZone(""))
		}
		if !found {
			t.Errorf("the host's network %v is not among %v", p, got)
		}
	}
}
