package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/sandbox"
)

// netFixture stands in for the network of a confined server under an
// allow list, on loopback only: the proxy's test resolver maps names to
// documentation addresses (TEST-NET-3) or to the internal addresses an
// attacker would aim at, and its test dialer maps the documentation
// addresses to local servers and refuses anything else, recording every
// address the proxy dialed.
type netFixture struct {
	listed, unlisted, trap *httptest.Server
	hits                   map[string]*atomic.Int64 // by server: listed, unlisted, trap
	mu                     sync.Mutex
	dialed                 []netip.AddrPort
}

var (
	netListedIP   = netip.MustParseAddr("203.0.113.10")
	netUnlistedIP = netip.MustParseAddr("203.0.113.20")
)

func newNetFixture(t *testing.T) *netFixture {
	f := &netFixture{hits: map[string]*atomic.Int64{"listed": {}, "unlisted": {}, "trap": {}}}
	serve := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.hits[name].Add(1)
			fmt.Fprint(w, name)
		}))
		t.Cleanup(s.Close)
		return s
	}
	f.listed, f.unlisted, f.trap = serve("listed"), serve("unlisted"), serve("trap")
	return f
}

// hook is the Host's proxyHook: the test resolver and dialer.
func (f *netFixture) hook(p *sandbox.Proxy) {
	zone := map[string][]netip.Addr{
		"listed.test":   {netListedIP},
		"unlisted.test": {netUnlistedIP},
		"loop.test":     {netip.MustParseAddr("127.0.0.1")},
		"meta.test":     {netip.MustParseAddr("169.254.169.254")},
		"v6loop.test":   {netip.MustParseAddr("::1")},
	}
	p.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := zone[host]; ok {
			return a, nil
		}
		return nil, errors.New("no such test name")
	}
	p.Dial = func(ctx context.Context, a netip.AddrPort) (net.Conn, error) {
		f.mu.Lock()
		f.dialed = append(f.dialed, a)
		f.mu.Unlock()
		var to *httptest.Server
		switch a {
		case netip.AddrPortFrom(netListedIP, 80):
			to = f.listed
		case netip.AddrPortFrom(netUnlistedIP, 80):
			to = f.unlisted
		default:
			return nil, fmt.Errorf("the test dialer reaches no %s", a)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", to.Listener.Addr().String())
	}
}

// syncBuffer is a bytes.Buffer safe for the log's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestConfinedServerNetwork runs the malicious server (testdata/
// evilserver) confined by a sandboxPolicy with an allow list, through
// the configuration, and has it try the network while it runs: the
// listed host is reached through the supervisor's proxy (the control),
// every other form is refused, each refusal is reported in the entry's
// Status (host, port, reason, the server that asked) and the host's log,
// and the server keeps running (the listed host is reached again after
// the refusals). Host-side checks: the unlisted and trap servers got
// nothing, and the proxy dialed the listed address alone. A second,
// unconfined entry of the same program reaches the trap server directly:
// the control that the trap is reachable without the sandbox.
func TestConfinedServerNetwork(t *testing.T) {
	requireSandbox(t)
	bin, evil := buildEvil(t)
	f := newNetFixture(t)
	_, trapPort, _ := net.SplitHostPort(f.trap.Listener.Addr().String())
	dir := t.TempDir()
	policy := `{"network": "allow", "allow": ["listed.test:80", "loop.test:80", "meta.test:80", "v6loop.test:80"], "readOnly": [` + jsonString(bin) + `]}`
	if err := os.WriteFile(filepath.Join(dir, "sandbox.json"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"sandboxPolicy": "sandbox.json", "mcpServers": map[string]any{
		"evil":    map[string]any{"command": evil},
		"control": map[string]any{"command": evil, "unsandboxed": true, "prefix": "control_"},
	}})
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	reg := tool.NewRegistry()
	h := NewHost(reg, WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	h.proxyHook = f.hook
	defer h.Close()
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	fetch := func(name, url string, direct bool) string {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"url": url, "direct": direct})
		res := reg.Execute(t.Context(), name, args)
		if res.IsError {
			t.Fatalf("%s %s: the server does not answer: %+v %+v", name, url, res, h.Status())
		}
		return res.Output
	}

	if got := fetch("fetch", "http://listed.test/", false); got != "status 200: listed" {
		t.Fatalf("control, the listed host: %q (status %+v)", got, h.Status())
	}
	trap := "127.0.0.1:" + trapPort
	rows := []struct {
		id, name, url string
		direct        bool
		reason        string // the denial's; "" for an attempt that never reaches the proxy
	}{
		{"NP1", "a name not in the list", "http://unlisted.test/", false, "not in the allow list"},
		{"NP2", "an IPv4 literal (the trap, on the host's loopback)", "http://" + trap + "/", false, "an IP literal not in the allow list"},
		{"NP3", "a listed name resolving to 127.0.0.1", "http://loop.test/", false, "resolves to loopback 127.0.0.1"},
		{"NP4", "a listed name resolving to 169.254.169.254", "http://meta.test/", false, "resolves to link-local 169.254.169.254"},
		{"NP5", "the metadata address as a literal", "http://169.254.169.254/latest/meta-data/", false, "an IP literal not in the allow list"},
		{"NP6", "an IPv6 literal", "http://[::1]:" + trapPort + "/", false, "an IP literal not in the allow list"},
		{"NP7", "an IPv4-mapped IPv6 literal", "http://[::ffff:127.0.0.1]:" + trapPort + "/", false, "an IP literal not in the allow list"},
		{"NP8", "a listed name resolving to ::1", "http://v6loop.test/", false, "resolves to loopback ::1"},
		{"NP9", "the trap, connected to directly (ignoring the proxy)", "http://" + trap + "/", true, ""},
		{"NP10", "the metadata address, connected to directly", "http://169.254.169.254/", true, ""},
	}
	proxied := 0
	for _, r := range rows {
		got := fetch("fetch", r.url, r.direct)
		switch {
		case r.direct && !strings.HasPrefix(got, "refused: "):
			t.Errorf("%s %s: %q, want refused", r.id, r.name, got)
		case !r.direct && !strings.HasPrefix(got, "status 403: ") || !r.direct && !strings.Contains(got, r.reason):
			t.Errorf("%s %s: %q, want a 403 saying %q", r.id, r.name, got, r.reason)
		}
		if !r.direct {
			proxied++
		}
	}
	if got := fetch("fetch", "http://listed.test/", false); got != "status 200: listed" {
		t.Errorf("after the refusals, the listed host: %q", got)
	}

	// Host side.
	for name, want := range map[string]int64{"listed": 2, "unlisted": 0, "trap": 0} {
		if n := f.hits[name].Load(); n != want {
			t.Errorf("the %s server got %d requests, want %d", name, n, want)
		}
	}
	f.mu.Lock()
	for _, a := range f.dialed {
		if a != netip.AddrPortFrom(netListedIP, 80) {
			t.Errorf("the proxy dialed %s", a)
		}
	}
	f.mu.Unlock()
	var st Status
	for _, s := range h.Status() {
		if s.Name == "evil" {
			st = s
		}
	}
	if st.State != Ready || st.Confinement != ConfinedNative || st.Network != "allow" || strings.Join(st.Allow, " ") != "listed.test:80 loop.test:80 meta.test:80 v6loop.test:80" {
		t.Errorf("status: %+v", st)
	}
	if st.NetworkDenied != proxied || len(st.NetworkDenials) != proxied {
		t.Errorf("status: %d denials (%d kept), want %d: %+v", st.NetworkDenied, len(st.NetworkDenials), proxied, st.NetworkDenials)
	}
	i := 0
	for _, r := range rows {
		if r.direct || i >= len(st.NetworkDenials) {
			continue
		}
		d := st.NetworkDenials[i]
		i++
		if d.Client != `MCP server "evil"` || d.Reason != r.reason && !strings.HasPrefix(r.reason, "resolves to ") || !strings.Contains(d.Reason, strings.TrimPrefix(r.reason, "resolves to ")) {
			t.Errorf("%s: denial %+v, want reason %q", r.id, d, r.reason)
		}
	}
	if n := strings.Count(log.String(), "event=networkDenied"); n != proxied {
		t.Errorf("%d denials logged, want %d:\n%s", n, proxied, log.String())
	}

	// Control: without the sandbox, the same program reaches the trap.
	if got := fetch("control_fetch", "http://"+trap+"/", true); !strings.Contains(got, "trap") || f.hits["trap"].Load() != 1 {
		t.Errorf("control, unconfined: %q, trap hits %d", got, f.hits["trap"].Load())
	}
}
