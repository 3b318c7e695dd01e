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
//
// The rebinding names answer, at each lookup in turn, the listed
// server's address and then an internal one (127.0.0.1, 169.254.169.254),
// as a DNS server an attacker runs with a zero TTL would; the test dialer
// takes those internal addresses, on port 80, to the trap server: a
// proxy that connected to a rebound answer would reach it.
type netFixture struct {
	listed, unlisted, trap *httptest.Server
	hits                   map[string]*atomic.Int64 // by server: listed, unlisted, trap
	mu                     sync.Mutex
	dialed                 []netip.AddrPort
	resolved               map[string]int // lookups by name
}

var (
	netListedIP   = netip.MustParseAddr("203.0.113.10")
	netUnlistedIP = netip.MustParseAddr("203.0.113.20")
)

// reachedListedOnly checks the host side of a run of the network rows:
// the listed server got listed requests, the unlisted and trap servers
// none, and the proxy dialed the listed address alone.
func (f *netFixture) reachedListedOnly(t *testing.T, listed int64) {
	t.Helper()
	for name, want := range map[string]int64{"listed": listed, "unlisted": 0, "trap": 0} {
		if n := f.hits[name].Load(); n != want {
			t.Errorf("the %s server got %d requests, want %d", name, n, want)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.dialed {
		if a != netip.AddrPortFrom(netListedIP, 80) {
			t.Errorf("the proxy dialed %s", a)
		}
	}
}

func newNetFixture(t *testing.T) *netFixture {
	f := &netFixture{hits: map[string]*atomic.Int64{"listed": {}, "unlisted": {}, "trap": {}}, resolved: map[string]int{}}
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
		"mixed.test":    {netListedIP, netip.MustParseAddr("127.0.0.1")},
	}
	rebind := map[string]netip.Addr{
		"rebind.test":     netip.MustParseAddr("127.0.0.1"),
		"rebindmeta.test": netip.MustParseAddr("169.254.169.254"),
	}
	p.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		f.mu.Lock()
		n := f.resolved[host]
		f.resolved[host]++
		f.mu.Unlock()
		if internal, ok := rebind[host]; ok {
			if n%2 == 0 {
				return []netip.Addr{netListedIP}, nil
			}
			return []netip.Addr{internal}, nil
		}
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
		case netip.MustParseAddrPort("127.0.0.1:80"), netip.MustParseAddrPort("169.254.169.254:80"):
			to = f.trap // what a rebound answer aims at
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
	f.reachedListedOnly(t, 2)
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

// TestConfinedServerRebinding (NP11–NP13): the malicious server, confined
// under an allow list through the configuration, asks the proxy for
// listed names whose DNS answer changes from the listed server's address
// to an internal one between lookups (DNS rebinding), and for a name
// answering both at once. The proxy looks a name up once per connection
// and connects to the address it checked, so the first connection
// reaches the listed server and the next, whose lookup answers 127.0.0.1
// or 169.254.169.254, is refused, reported in Status and the log, and
// the server keeps running. Host-side: the trap server the internal
// addresses lead to got nothing, the proxy dialed the listed address
// alone, and it looked each name up exactly once per connection (a proxy
// that looked up again to connect would have got the internal answer).
// The control: a second confined entry whose allow list also names the
// internal addresses (the range refusal lifted) reaches the trap through
// the same rebinding names, so the refusal is what stops the attack.
func TestConfinedServerRebinding(t *testing.T) {
	requireSandbox(t)
	bin, evil := buildEvil(t)
	f := newNetFixture(t)
	dir := t.TempDir()
	for name, allow := range map[string]string{
		"sandbox.json": `"listed.test:80", "rebind.test:80", "rebindmeta.test:80", "mixed.test:80"`,
		"lax.json":     `"rebind.test:80", "rebindmeta.test:80", "127.0.0.1:80", "169.254.169.254:80"`,
	} {
		policy := `{"network": "allow", "allow": [` + allow + `], "readOnly": [` + jsonString(bin) + `]}`
		if err := os.WriteFile(filepath.Join(dir, name), []byte(policy), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(map[string]any{"sandboxPolicy": "sandbox.json", "mcpServers": map[string]any{
		"evil": map[string]any{"command": evil},
		"lax":  map[string]any{"command": evil, "sandboxPolicy": "lax.json", "prefix": "lax_"},
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
	fetch := func(name, url string) string {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"url": url})
		res := reg.Execute(t.Context(), name, args)
		if res.IsError {
			t.Fatalf("%s %s: the server does not answer: %+v %+v", name, url, res, h.Status())
		}
		return res.Output
	}

	// In order: each lookup of a rebinding name answers the other
	// address of its pair, starting with the listed one.
	steps := []struct {
		id, url, want string // want: the whole answer, or a 403's reason
	}{
		{"control", "http://listed.test/", "status 200: listed"},
		{"NP11", "http://rebind.test/", "status 200: listed"},             // checked 203.0.113.10, connected there
		{"NP11", "http://rebind.test/", "resolves to loopback 127.0.0.1"}, // the rebound answer, checked
		{"NP11", "http://rebind.test/", "status 200: listed"},             // still running, the name works again
		{"NP12", "http://rebindmeta.test/", "status 200: listed"},
		{"NP12", "http://rebindmeta.test/", "resolves to link-local 169.254.169.254"},
		{"NP13", "http://mixed.test/", "resolves to loopback 127.0.0.1"}, // one internal answer among public ones
		{"after", "http://listed.test/", "status 200: listed"},
	}
	var reasons []string
	for _, s := range steps {
		got := fetch("fetch", s.url)
		if strings.HasPrefix(s.want, "status ") {
			if got != s.want {
				t.Errorf("%s %s: %q, want %q", s.id, s.url, got, s.want)
			}
			continue
		}
		reasons = append(reasons, s.want)
		if !strings.HasPrefix(got, "status 403: ") || !strings.Contains(got, s.want) {
			t.Errorf("%s %s: %q, want a 403 saying %q", s.id, s.url, got, s.want)
		}
	}

	// Host side, before the control.
	f.reachedListedOnly(t, 5)
	f.mu.Lock()
	for name, want := range map[string]int{"rebind.test": 3, "rebindmeta.test": 2, "mixed.test": 1} {
		if n := f.resolved[name]; n != want {
			t.Errorf("%s was looked up %d times for %d connections", name, n, want)
		}
	}
	f.mu.Unlock()
	var st Status
	for _, s := range h.Status() {
		if s.Name == "evil" {
			st = s
		}
	}
	if st.State != Ready || st.NetworkDenied != len(reasons) || len(st.NetworkDenials) != len(reasons) {
		t.Fatalf("status: %+v, want ready with %d denials", st, len(reasons))
	}
	for i, d := range st.NetworkDenials {
		if d.Client != `MCP server "evil"` || !strings.Contains(d.Reason, reasons[i]) || d.Port != 80 || d.Addr == "" {
			t.Errorf("denial %d: %+v, want %q", i, d, reasons[i])
		}
	}
	if n := strings.Count(log.String(), "event=networkDenied"); n != len(reasons) {
		t.Errorf("%d denials logged, want %d:\n%s", n, len(reasons), log.String())
	}

	// Control: the internal addresses listed, the same names' rebound
	// answers reach the trap. rebind.test was looked up three times, so
	// its next answer is 127.0.0.1; rebindmeta.test twice, so its next
	// is the listed address, then 169.254.169.254.
	if got := fetch("lax_fetch", "http://rebind.test/"); got != "status 200: trap" {
		t.Errorf("control, rebind.test with 127.0.0.1 listed: %q", got)
	}
	if got := fetch("lax_fetch", "http://rebindmeta.test/"); got != "status 200: listed" {
		t.Errorf("control, rebindmeta.test's public answer: %q", got)
	}
	if got := fetch("lax_fetch", "http://rebindmeta.test/"); got != "status 200: trap" {
		t.Errorf("control, rebindmeta.test with 169.254.169.254 listed: %q", got)
	}
	if n := f.hits["trap"].Load(); n != 2 {
		t.Errorf("control: the trap got %d requests, want 2", n)
	}
}

// TestConfinedServerProxyDeath: the proxy of a confined server dies
// while the server runs, and that ends the server's network, not its
// confinement. The control: before, the server reaches its listed host
// through the proxy, and an unconfined entry of the same program reads
// the fake ~/.ssh key, writes outside its workspace and reaches the
// listed server's loopback address directly. After the proxy is closed
// (its listener and connections, as when its supervisor's side fails),
// the listed host is out of reach through the proxy's address, the loopback servers are out of reach directly (no
// fallback route), and the server still cannot read the key nor write
// outside its workspace; it keeps answering. Host-side: no server got a
// request after the proxy's death, nothing was written outside.
func TestConfinedServerProxyDeath(t *testing.T) {
	requireSandbox(t)
	bin, evil := buildEvil(t) // before HOME changes: go build's caches are under it
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	const secret = "FAKE-PRIVATE-KEY-4712"
	key := filepath.Join(home, ".ssh", "id_ed25519")
	if err := os.WriteFile(key, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newNetFixture(t)
	var (
		mu      sync.Mutex
		proxies []*sandbox.Proxy
	)
	hook := func(p *sandbox.Proxy) {
		f.hook(p)
		mu.Lock()
		proxies = append(proxies, p)
		mu.Unlock()
	}
	dir := t.TempDir()
	workspace := filepath.Join(dir, "work")
	if err := os.Mkdir(workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	policy := `{"network": "allow", "allow": ["listed.test:80"], "readOnly": [` + jsonString(bin) + `]}`
	if err := os.WriteFile(filepath.Join(dir, "sandbox.json"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"sandboxPolicy": "sandbox.json", "mcpServers": map[string]any{
		"evil":    map[string]any{"command": evil, "workspace": workspace},
		"control": map[string]any{"command": evil, "unsandboxed": true, "prefix": "control_"},
	}})
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	h := NewHost(reg)
	h.proxyHook = hook
	defer h.Close()
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) string {
		t.Helper()
		b, _ := json.Marshal(args)
		res := reg.Execute(t.Context(), name, b)
		if res.IsError {
			t.Fatalf("%s: the server does not answer: %+v %+v", name, res, h.Status())
		}
		return res.Output
	}
	// files tries the key and a write outside the workspace (a file of
	// the host's /tmp; the sandbox's /tmp is its own).
	files := func(name, outside string) string {
		t.Helper()
		return call(name, map[string]any{"read": key, "write": outside})
	}

	// Controls.
	if got := call("fetch", map[string]any{"url": "http://listed.test/"}); got != "status 200: listed" {
		t.Fatalf("control, the listed host through the proxy: %q", got)
	}
	controlOut := filepath.Join(dir, "control-outside.txt")
	if got := files("control_files", controlOut); !strings.Contains(got, secret) || !strings.Contains(got, "write: done") {
		t.Fatalf("control, unconfined files: %q", got)
	}
	if _, err := os.Stat(controlOut); err != nil {
		t.Fatalf("control, unconfined write: %v", err)
	}
	mu.Lock()
	if len(proxies) != 1 {
		t.Fatalf("%d proxies configured, want the confined server's one", len(proxies))
	}
	proxy := proxies[0]
	mu.Unlock()

	_, trapPort, _ := net.SplitHostPort(f.trap.Listener.Addr().String())
	_, listedPort, _ := net.SplitHostPort(f.listed.Listener.Addr().String())
	if got := call("control_fetch", map[string]any{"url": "http://127.0.0.1:" + listedPort + "/", "direct": true}); !strings.Contains(got, "listed") {
		t.Fatalf("control, unconfined, the listed server directly: %q", got)
	}

	proxy.Close() // the proxy dies; the server runs on
	listedHits := f.hits["listed"].Load()
	for _, r := range []struct {
		what, url string
		direct    bool
	}{
		{"the listed host through the proxy's address", "http://listed.test/", false},
		{"the listed server's loopback address, directly", "http://127.0.0.1:" + listedPort + "/", true},
		{"the trap, directly", "http://127.0.0.1:" + trapPort + "/", true},
		{"the proxy's address, directly", "http://127.0.0.1:" + fmt.Sprint(sandbox.ProxyPort) + "/", true},
	} {
		if got := call("fetch", map[string]any{"url": r.url, "direct": r.direct}); !strings.HasPrefix(got, "refused: ") {
			t.Errorf("after the proxy's death, %s: %q, want refused", r.what, got)
		}
	}
	outside := filepath.Join(dir, "outside.txt")
	got := files("files", outside)
	if strings.Contains(got, secret) || !strings.Contains(got, "read: refused: ") || !strings.Contains(got, "write: refused: ") && !strings.Contains(got, "write: done") {
		t.Errorf("after the proxy's death, files: %q, want the key refused", got)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("after the proxy's death, the server wrote %s on the host", outside)
	}
	if n := f.hits["listed"].Load(); n != listedHits || f.hits["trap"].Load() != 0 || f.hits["unlisted"].Load() != 0 {
		t.Errorf("after the proxy's death the servers got requests: listed %d (was %d), trap %d, unlisted %d",
			n, listedHits, f.hits["trap"].Load(), f.hits["unlisted"].Load())
	}
	for _, s := range h.Status() {
		if s.Name == "evil" && (s.State != Ready || s.Restarts != 0) {
			t.Errorf("status after the proxy's death: %+v, want still ready", s)
		}
	}
}
