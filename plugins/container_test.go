package plugins

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/container"
)

// testImage is the image .ci/docker-engine.sh builds from busybox-static.
const testImage = "clawtool-test/busybox:1"

// requireEngine fails in CI without a container engine that has the test
// image (.ci/docker-engine.sh provides both) and skips elsewhere.
func requireEngine(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // ok-wallclock: a bound
	defer cancel()
	c, err := container.New(ctx, container.Options{Image: testImage, Owner: "clawtool-plugins-test"})
	if err == nil {
		r, rerr := c.Run(ctx, sandbox.Policy{}, []string{"true"}, nil)
		if rerr == nil && !r.OK() {
			rerr = &sandbox.ExitError{Result: r}
		}
		err = rerr
		c.Close()
	}
	if err == nil {
		return
	}
	reason := err.Error() + " (run .ci/docker-engine.sh)"
	if os.Getenv("CI") == "true" {
		t.Fatal(reason)
	}
	t.Skip(reason)
}

// buildStaticEvil builds testdata/evilserver without cgo: a static
// program that runs in the test image, which has no C library.
func buildStaticEvil(t *testing.T) (dir, evil string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "plugins-evil-static-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	evil = filepath.Join(dir, "evilserver")
	cmd := exec.Command("go", "build", "-o", evil, "./testdata/evilserver")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir, evil
}

// TestContainerServerNetwork (rows NC1-NC7) runs the malicious server
// (testdata/evilserver) as a stdio MCP server in a container of the test
// image, chosen by its entry's "image", under a sandboxPolicy with an
// allow list, through the configuration: it lists and calls its tools
// over the container's streamed stdin and stdout; the listed host is
// reached through the supervisor's proxy (the control), every other form
// is refused and reported in Status and the log, and the server keeps
// running. Host-side checks: the unlisted and trap servers got nothing
// and the proxy dialed the listed address alone. An unconfined entry of
// the same program reaches the trap directly (the control of the direct
// rows), and an entry whose image the engine lacks fails alone, saying
// so.
func TestContainerServerNetwork(t *testing.T) {
	requireEngine(t)
	bin, evil := buildStaticEvil(t)
	f := newNetFixture(t)
	_, trapPort, _ := net.SplitHostPort(f.trap.Listener.Addr().String())
	dir := t.TempDir()
	policy := `{"network": "allow", "allow": ["listed.test:80", "loop.test:80", "meta.test:80"], "readOnly": [` + jsonString(bin) + `]}`
	if err := os.WriteFile(filepath.Join(dir, "sandbox.json"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"sandboxPolicy": "sandbox.json", "mcpServers": map[string]any{
		"evil":    map[string]any{"command": evil, "image": testImage},
		"missing": map[string]any{"command": evil, "image": "clawtool-test/no-such-image:1", "prefix": "missing_"},
		"control": map[string]any{"command": evil, "unsandboxed": true, "prefix": "control_"},
	}})
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	reg := tool.NewRegistry()
	h := NewHost(reg, WithLogger(slog.New(slog.NewTextHandler(&log, nil))), WithConnectTimeout(3*time.Minute))
	h.proxyHook = f.hook
	h.containerOwner = "clawtool-plugins-test"
	defer h.Close()
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	status := func(name string) Status {
		for _, s := range h.Status() {
			if s.Name == name {
				return s
			}
		}
		return Status{}
	}
	if st := status("missing"); st.State != Failed || !strings.Contains(st.Err, "no-such-image") || !strings.Contains(st.Err, "never") {
		t.Errorf("the entry without its image: %+v, want failed, naming the image", st)
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
		reason        string
	}{
		{"NC1", "a name not in the list", "http://unlisted.test/", false, "not in the allow list"},
		{"NC2", "an IPv4 literal (the trap, on the host's loopback)", "http://" + trap + "/", false, "an IP literal not in the allow list"},
		{"NC3", "a listed name resolving to 127.0.0.1", "http://loop.test/", false, "resolves to loopback 127.0.0.1"},
		{"NC4", "a listed name resolving to 169.254.169.254", "http://meta.test/", false, "resolves to link-local 169.254.169.254"},
		{"NC5", "an IPv6 literal", "http://[::1]:" + trapPort + "/", false, "an IP literal not in the allow list"},
		{"NC6", "the trap, connected to directly (ignoring the proxy)", "http://" + trap + "/", true, ""},
		{"NC7", "the metadata address, connected to directly", "http://169.254.169.254/", true, ""},
	}
	proxied := 0
	for _, r := range rows {
		got := fetch("fetch", r.url, r.direct)
		switch {
		case r.direct && !strings.HasPrefix(got, "refused: "):
			t.Errorf("%s %s: %q, want refused", r.id, r.name, got)
		case !r.direct && (!strings.HasPrefix(got, "status 403: ") || !strings.Contains(got, r.reason)):
			t.Errorf("%s %s: %q, want a 403 saying %q", r.id, r.name, got, r.reason)
		}
		if !r.direct {
			proxied++
		}
	}
	if got := fetch("fetch", "http://listed.test/", false); got != "status 200: listed" {
		t.Errorf("after the refusals, the listed host: %q", got)
	}
	f.reachedListedOnly(t, 2)
	st := status("evil")
	if st.State != Ready || st.Confinement != ConfinedContainer || st.Image != testImage || st.Network != "allow" || st.Tools != 4 { // attempts, fetch, files, getenv
		t.Errorf("status: %+v", st)
	}
	if st.NetworkDenied != proxied {
		t.Errorf("status: %d denials, want %d: %+v", st.NetworkDenied, proxied, st.NetworkDenials)
	}
	for _, d := range st.NetworkDenials {
		if d.Client != `MCP server "evil"` {
			t.Errorf("denial %+v: want the server named", d)
		}
	}
	if n := strings.Count(log.String(), "event=networkDenied"); n != proxied {
		t.Errorf("%d denials logged, want %d", n, proxied)
	}
	// Control: without the sandbox, the same program reaches the trap.
	if got := fetch("control_fetch", "http://"+trap+"/", true); !strings.Contains(got, "trap") || f.hits["trap"].Load() != 1 {
		t.Errorf("control, unconfined: %q, trap hits %d", got, f.hits["trap"].Load())
	}
}

// TestContainerServerSecrets: the environment of a server in a container
// is the sandbox's allowlist plus the variables its entry names, as for
// the native sandbox. An entry passing a secret-looking variable without
// naming it in "secrets" fails before its container starts, never
// showing the value; named, the server in the container gets it and
// Status lists its name; a plain variable of the entry gets through; a
// secret of the host's own environment does not, while an unconfined
// entry of the same program inherits it (the control that the attack
// works without the container).
func TestContainerServerSecrets(t *testing.T) {
	requireEngine(t)
	const hostSecret, given = "host-secret-value-4711", "ghp-literal-value-0815"
	t.Setenv("CLAWTOOL_TEST_API_KEY", hostSecret)
	bin, evil := buildStaticEvil(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sandbox.json"), []byte(`{"readOnly": [`+jsonString(bin)+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"sandboxPolicy": "sandbox.json", "mcpServers": map[string]any{
		"refused": map[string]any{"command": evil, "image": testImage, "prefix": "refused_", "env": map[string]any{"GITHUB_TOKEN": given}},
		"named":   map[string]any{"command": evil, "image": testImage, "prefix": "named_", "env": map[string]any{"GITHUB_TOKEN": given, "PLAIN_SETTING": "on"}, "secrets": []string{"GITHUB_TOKEN"}},
		"control": map[string]any{"command": evil, "unsandboxed": true, "prefix": "control_"},
	}})
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	h := NewHost(reg, WithConnectTimeout(3*time.Minute))
	h.containerOwner = "clawtool-plugins-test"
	defer h.Close()
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	st := map[string]Status{}
	for _, s := range h.Status() {
		st[s.Name] = s
	}
	if r := st["refused"]; r.State != Failed || !strings.Contains(r.Err, `env "GITHUB_TOKEN" looks like a secret`) || strings.Contains(r.Err, given) {
		t.Errorf("refused: %+v", r)
	}
	if n := st["named"]; n.State != Ready || n.Confinement != ConfinedContainer || strings.Join(n.Secrets, ",") != "GITHUB_TOKEN" {
		t.Fatalf("named: %+v", n)
	}
	getenv := func(name, variable string) string {
		t.Helper()
		res := reg.Execute(t.Context(), name, json.RawMessage(`{"name": `+jsonString(variable)+`}`))
		if res.IsError {
			t.Fatalf("%s: %+v %+v", name, res, h.Status())
		}
		return strings.TrimPrefix(res.Output, "=")
	}
	if got := getenv("named_getenv", "GITHUB_TOKEN"); got != given {
		t.Errorf("the named secret in the container: %q", got)
	}
	if got := getenv("named_getenv", "PLAIN_SETTING"); got != "on" {
		t.Errorf("the entry's plain variable in the container: %q", got)
	}
	if got := getenv("named_getenv", "CLAWTOOL_TEST_API_KEY"); got != "" {
		t.Errorf("the host's secret reached the container: %q", got)
	}
	if got := getenv("control_getenv", "CLAWTOOL_TEST_API_KEY"); got != hostSecret {
		t.Errorf("control: the unconfined server does not inherit the host's secret: %q", got)
	}
}

// TestContainerServerNoEngine: a server whose entry asks for a container
// fails alone when no engine answers, saying so, and never runs
// unconfined; the control, an unconfined entry of the same command,
// loads.
func TestContainerServerNoEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	_, evil := buildStaticEvil(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"boxed":   map[string]any{"command": evil, "image": testImage, "args": []string{marker, marker, "127.0.0.1:1", "none"}},
		"control": map[string]any{"command": evil, "prefix": "control_"},
	}})
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	h := NewHost(reg)
	h.containerOwner = "clawtool-plugins-test"
	defer h.Close()
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	for _, st := range h.Status() {
		switch st.Name {
		case "boxed":
			if st.State != Failed || st.Confinement != ConfinedContainer || !strings.Contains(st.Err, "no container engine reachable") || !strings.Contains(st.Err, "never runs unconfined") {
				t.Errorf("boxed: %+v, want failed for the missing engine", st)
			}
		case "control":
			if st.State != Ready {
				t.Errorf("control: %+v, want ready", st)
			}
		}
	}
	// The evil server writes its second argument at start: it never ran.
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the boxed server ran somewhere: %v", err)
	}
}
