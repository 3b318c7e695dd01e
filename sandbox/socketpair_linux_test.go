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
