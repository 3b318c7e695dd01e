package sandbox

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSocketpairFamilies is the attack of reaching a socket family the
// policy does not allow through socketpair(2) instead of socket(2): the
// seccomp filter checked socket's family and let socketpair through for
// any, so a run reached the kernel's lookup of any family, which loads
// the family's module on demand (net-pf-N: TIPC, RDS, … protocol code
// with a history of kernel bugs, loaded at an unprivileged request), and
// TIPC's own socket pairs. Now socketpair is held to AF_UNIX (the only
// family a run may have in pairs), refused with EPERM otherwise, under
// every network mode. The control runs without the filter: the call
// reaches the kernel, which answers for the family itself (here
// EAFNOSUPPORT when the module is absent, or a pair).
func TestSocketpairFamilies(t *testing.T) {
	f := newFixture(t)
	tipc := strconv.Itoa(unix.AF_TIPC)
	for _, network := range []Network{NetworkNone, NetworkHost} {
		p := f.policy()
		p.Network = network
		r := f.sandboxed(t, context.Background(), DefaultNative(), p, "socketpair", tipc)
		if !strings.Contains(string(r.Stdout), "operation not permitted") {
			t.Errorf("network %s: socketpair(AF_TIPC) was not refused by the filter: %q %q", network, r.Stdout, trim(r.Stderr))
		}
		// A pair of unix sockets stays allowed (a pipe with more).
		r = f.sandboxed(t, context.Background(), DefaultNative(), p, "socketpair", strconv.Itoa(unix.AF_UNIX))
		if !strings.HasPrefix(string(r.Stdout), "OK") {
			t.Errorf("network %s: socketpair(AF_UNIX) refused: %q %q", network, r.Stdout, trim(r.Stderr))
		}
	}
	p := f.policy()
	p.Without = append(p.Without, LayerSeccomp)
	r := f.sandboxed(t, context.Background(), DefaultNative(), p, "socketpair", tipc)
	if strings.Contains(string(r.Stdout), "operation not permitted") {
		t.Errorf("control: without the filter socketpair(AF_TIPC) was still refused with EPERM: %q", r.Stdout)
	}
}

// TestInetSocketProtocols is the attack of asking for an IP protocol
// the run's network mode does not model, under the modes that allow IP
// sockets (host, allow): the filter checked the family only, so
// socket(AF_INET, SOCK_DCCP, …), SCTP (132) or L2TP (115) reached the
// kernel's protocol lookup, which loads the protocol's module on demand
// (net-pf-2-proto-33-type-6: DCCP, whose bugs gave root before). Now an
// IP socket is a stream or datagram (with SOCK_NONBLOCK, SOCK_CLOEXEC)
// of protocol 0, TCP, UDP, UDP-Lite, ICMP, ICMPv6 or MPTCP, and anything
// else is EPERM. The controls: TCP and UDP sockets still open, and
// without the filter the attacks reach the kernel.
func TestInetSocketProtocols(t *testing.T) {
	f := newFixture(t)
	attacks := [][3]int{
		{unix.AF_INET, unix.SOCK_DCCP, unix.IPPROTO_DCCP},
		{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP},
		{unix.AF_INET6, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP},
		{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_L2TP},
	}
	allowed := [][3]int{
		{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK, 0},
		{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, unix.IPPROTO_UDP},
		{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP},
	}
	args := func(s [3]int) []string {
		return []string{"socket", strconv.Itoa(s[0]), strconv.Itoa(s[1]), strconv.Itoa(s[2])}
	}
	for _, network := range []Network{NetworkHost, NetworkAllow} {
		p := f.policy()
		p.Network = network
		if network == NetworkAllow {
			p.Allow = []HostRule{{Host: "example.org"}}
		}
		for _, a := range attacks {
			r := f.sandboxed(t, context.Background(), DefaultNative(), p, args(a)...)
			if !strings.Contains(string(r.Stdout), "operation not permitted") {
				t.Errorf("network %s: socket%v was not refused by the filter: %q %q", network, a, r.Stdout, trim(r.Stderr))
			}
		}
		for _, a := range allowed {
			r := f.sandboxed(t, context.Background(), DefaultNative(), p, args(a)...)
			if !strings.HasPrefix(string(r.Stdout), "OK") {
				t.Errorf("network %s: socket%v refused: %q %q", network, a, r.Stdout, trim(r.Stderr))
			}
		}
	}
	p := f.policy()
	p.Network = NetworkHost
	p.Without = append(p.Without, LayerSeccomp)
	for _, a := range attacks {
		r := f.sandboxed(t, context.Background(), DefaultNative(), p, args(a)...)
		if strings.Contains(string(r.Stdout), "operation not permitted") {
			t.Errorf("control: without the filter socket%v was still refused with EPERM: %q", a, r.Stdout)
		}
	}
}
