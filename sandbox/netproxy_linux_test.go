package sandbox

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestNativeAllowList runs curl in the native sandbox under NetworkAllow:
// the listed name is reached through the proxy on the sandbox's loopback,
// the unlisted one is refused and reported in Result.NetworkDenials with
// the command that asked, and the host's loopback server itself is out
// of reach when curl is told to ignore the proxy (the namespace has no
// other route). Host-side check: the unlisted server got no request.
func TestNativeAllowList(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed in the PATH")
	}
	f := newProxyFixture(t, &Proxy{}) // servers, resolver and dialer
	n := newTestNative(t, NativeOptions{Spares: DefaultSpares}, &nativeHooks{proxy: func(p *Proxy) { p.Resolve, p.Dial = f.proxy.Resolve, f.proxy.Dial }})
	pol := Policy{Network: NetworkAllow, Allow: []HostRule{{Host: "listed.test", Ports: []int{80}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	r, err := runOn(n, ctx, pol, "curl", "-sS", "-m", "20", "http://listed.test/")
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != "listed listed.test" || len(r.NetworkDenials) != 0 {
		t.Fatalf("listed: %s stdout %q stderr %q denials %+v", r.Summary(), r.Stdout, r.Stderr, r.NetworkDenials)
	}

	r, err = runOn(n, ctx, pol, "curl", "-sS", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", "http://unlisted.test/")
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != "403" || len(r.NetworkDenials) != 1 {
		t.Fatalf("unlisted: stdout %q stderr %q denials %+v", r.Stdout, r.Stderr, r.NetworkDenials)
	}
	if d := r.NetworkDenials[0]; d.Host != "unlisted.test" || d.Port != 80 || d.Client != "curl" || !strings.Contains(d.Reason, "not in the allow list") {
		t.Fatalf("denial = %+v", d)
	}
	if f.unlistHits.Load() != 0 {
		t.Fatalf("the unlisted server got %d requests", f.unlistHits.Load())
	}

	// No route but the proxy: the host's server, asked for directly.
	_, port, _ := net.SplitHostPort(f.listedAddr)
	r, err = runOn(n, ctx, pol, "curl", "-sS", "-m", "5", "--noproxy", "*", "http://127.0.0.1:"+port+"/")
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || f.listedHits.Load() != 1 {
		t.Fatalf("direct connection out of the sandbox: %s stdout %q, listed server hits %d", r.Summary(), r.Stdout, f.listedHits.Load())
	}
}
