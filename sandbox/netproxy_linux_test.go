package sandbox

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"sync"
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
	var logged lockedBuffer           // the backend's own NetworkLog, not a global
	n := newTestNative(t, NativeOptions{Spares: DefaultSpares, NetworkLog: slog.New(slog.NewTextHandler(&logged, nil))},
		&nativeHooks{proxy: func(p *Proxy) { p.Resolve, p.Dial = f.proxy.Resolve, f.proxy.Dial }})
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
	if got := logged.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "unlisted.test") {
		t.Errorf("NativeOptions.NetworkLog got %q, want a warning naming unlisted.test", got)
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

// TestCmdConfigureProxy: a Cmd's ConfigureProxy names the client and
// receives each denial as it happens (OnDenial), and cannot widen the
// policy: Rules it sets are replaced by Policy.Allow, so the unlisted
// name stays refused (host-side: its server got nothing). Control: the
// listed name is reached through the same configured proxy.
func TestCmdConfigureProxy(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed in the PATH")
	}
	f := newProxyFixture(t, &Proxy{})
	pol := Policy{Network: NetworkAllow, Allow: []HostRule{{Host: "listed.test", Ports: []int{80}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu  sync.Mutex
		got []NetworkDenial
	)
	configure := func(p *Proxy) {
		p.Resolve, p.Dial = f.proxy.Resolve, f.proxy.Dial
		p.Client = "server \"evil\""
		p.Rules = []HostRule{{Host: "*.test", Ports: []int{80}}} // an attempt to widen
		p.OnDenial = func(d NetworkDenial) { mu.Lock(); got = append(got, d); mu.Unlock() }
	}
	cmd := CommandContext(ctx, pol, "curl", "-sS", "-m", "20", "http://listed.test/")
	cmd.ConfigureProxy = configure
	if out, err := cmd.Output(); err != nil || string(out) != "listed listed.test" {
		t.Fatalf("control: %q %v", out, err)
	}
	cmd = CommandContext(ctx, pol, "curl", "-sS", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", "http://unlisted.test/")
	cmd.ConfigureProxy = configure
	out, err := cmd.Output()
	if err != nil || string(out) != "403" {
		t.Fatalf("unlisted: %q %v", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].Host != "unlisted.test" || got[0].Client != "server \"evil\"" || !strings.Contains(got[0].Reason, "not in the allow list") {
		t.Fatalf("OnDenial got %+v", got)
	}
	if rd := cmd.Result.NetworkDenials; len(rd) != 1 || rd[0] != got[0] {
		t.Fatalf("Result.NetworkDenials = %+v, OnDenial got %+v", rd, got)
	}
	if f.unlistHits.Load() != 0 {
		t.Fatalf("the unlisted server got %d requests", f.unlistHits.Load())
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
