package plugins

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/sandbox"
)

// requireSandbox stops a test that needs the native sandbox: it fails in
// CI, where the sandbox's layers are present, and skips elsewhere.
func requireSandbox(t testing.TB) {
	t.Helper()
	reason := ""
	if os.Geteuid() != 0 {
		reason = "confined servers' tests need root (to give the workspace to the sandbox user)"
	} else {
		r := sandbox.Probe()
		for _, l := range append(sandbox.RequiredLayers(), sandbox.LayerNetNS) {
			if !r.Has(l) {
				reason = "the sandbox lacks " + string(l)
			}
		}
	}
	if reason == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(reason)
	}
	t.Skip(reason)
}

// confinedFixture is fixture with the test binary copied into a
// directory the sandbox user can reach (the go tool's build directory
// is its owner's alone): the policy must list filepath.Dir(Command).
func confinedFixture(t *testing.T, tools ...string) Server {
	t.Helper()
	s := fixture(t, "", tools...)
	s.Command = reachableCopy(t, s.Command)
	return s
}

// reachableCopy copies the executable file into a fresh directory
// anyone may search and returns the copy's path.
func reachableCopy(t *testing.T, file string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "plugins-confined-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(dir, filepath.Base(file))
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// assertOwnedLike checks that file has the owner and group of dir (the
// workspace's owner, the caller), not the sandbox user's.
func assertOwnedLike(t *testing.T, file, dir string) {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, d := fi.Sys().(*syscall.Stat_t), di.Sys().(*syscall.Stat_t)
	if f.Uid != d.Uid || f.Gid != d.Gid {
		t.Errorf("%s belongs to %d:%d, the workspace's owner is %d:%d", file, f.Uid, f.Gid, d.Uid, d.Gid)
	}
}

// TestConfinedServerFailsAlone: a server that cannot run confined (it
// needs /root, which the policy does not grant) fails with a message
// naming what the sandbox refused it, and never runs unconfined; the
// other server of the configuration loads.
func TestConfinedServerFailsAlone(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	fx := confinedFixture(t, "echo")
	if err := os.WriteFile(filepath.Join(dir, "sandbox.json"), []byte(`{"readOnly": [`+jsonString(filepath.Dir(fx.Command))+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	h := NewHost(reg)
	defer h.Close()
	h.Apply(t.Context(), &Config{SandboxPolicy: filepath.Join(dir, "sandbox.json"), Servers: map[string]Server{
		"broken": {Command: "/bin/ls", Args: []string{"/root"}},
		"good":   fx,
	}})
	st := h.Status()
	if len(st) != 2 || st[0].State != Failed || !strings.Contains(st[0].Err, "the sandbox refused it:") ||
		!strings.Contains(st[0].Err, "/root") || !strings.Contains(st[0].Err, "confined: native sandbox, network none") {
		t.Errorf("broken: %+v", st)
	}
	if st[1].State != Ready || st[1].Tools == 0 {
		t.Errorf("good: %+v", st[1])
	}
}

// TestDescribeEnd picks the lines that report a denial out of a confined
// server's standard error.
func TestDescribeEnd(t *testing.T) {
	for _, tt := range []struct {
		err    error
		stderr string
		want   []string
	}{
		{nil, "anything", nil},
		{errors.New("sandbox: start helper: boom"), "", []string{"could not start in the sandbox (it never runs unconfined): sandbox: start helper: boom"}},
		{&sandbox.ExitError{Result: &sandbox.Result{Outcome: sandbox.Exited, ExitCode: 1}},
			"starting\nError: EACCES: permission denied, open '/root/.npm/_cacache'\nbye\n",
			[]string{"exited with status 1", "the sandbox refused it:\n  Error: EACCES: permission denied, open '/root/.npm/_cacache'\n", "the end of its standard error:\n  starting\n"}},
		{&sandbox.ExitError{Result: &sandbox.Result{Outcome: sandbox.Exited, ExitCode: 1, NetworkDenials: []sandbox.NetworkDenial{
			{Host: "registry.example", Port: 443, Reason: "not in the allow list"}, {Host: "a", Port: 1}, {Host: "b", Port: 1}, {Host: "c", Port: 1}, {Host: "d", Port: 1}, {Host: "e", Port: 1}},
			NetworkDenialsDropped: 3}},
			"Error: getaddrinfo EAI_AGAIN\n",
			[]string{"exited with status 1; the network proxy refused it:\n  registry.example port 443: not in the allow list\n  a port 1: \n", "d port 1: \n  (4 more)\n"}},
	} {
		got := describeEnd(tt.err, tt.stderr)
		if tt.want == nil && got != "" {
			t.Errorf("%v: %q, want nothing", tt.err, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: %q lacks %q", tt.err, got, w)
			}
		}
	}
}

// TestConfinedPolicyReloads: a server's own sandboxPolicy file is read
// again with the configuration; a changed policy restarts the server
// under it (here: from no network to the host's).
func TestConfinedPolicyReloads(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	fx := confinedFixture(t, "echo")
	policy := filepath.Join(dir, "own.json")
	write := func(network string) {
		t.Helper()
		if err := os.WriteFile(policy, []byte(`{"network": "`+network+`", "readOnly": [`+jsonString(filepath.Dir(fx.Command))+`]}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fx.SandboxPolicy = policy
	reg := tool.NewRegistry()
	h := NewHost(reg)
	defer h.Close()
	for _, network := range []string{"none", "host"} {
		write(network)
		h.Apply(t.Context(), &Config{Servers: map[string]Server{"s": fx}})
		if st := h.Status(); len(st) != 1 || st[0].State != Ready || st[0].Confinement != ConfinedNative || st[0].Network != network {
			t.Errorf("after writing network %s: %+v", network, st)
		}
	}
}

// TestRecordDenialKeepsLatest: an entry keeps the latest
// MaxStatusDenials network denials for Status and counts them all.
//
// The log is bounded: a server that opens denied connections in a loop
// wrote one record each to the host's log. It gets the first
// sandbox.MaxNetworkDenials and one record saying the rest are counted.
func TestRecordDenialKeepsLatest(t *testing.T) {
	var records []string
	log := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		records = append(records, string(b))
		return len(b), nil
	}), nil))
	e := NewHost(tool.NewRegistry(), WithLogger(log)).newEntry("s", KindServer, &Config{}, "", nil)
	const n = sandbox.MaxNetworkDenials + 40
	for i := range n {
		e.recordDenial(sandbox.NetworkDenial{Host: "h", Port: i + 1})
	}
	st := e.status()
	if st.NetworkDenied != n || len(st.NetworkDenials) != MaxStatusDenials ||
		st.NetworkDenials[0].Port != n-MaxStatusDenials+1 || st.NetworkDenials[MaxStatusDenials-1].Port != n {
		t.Fatalf("%d denied, kept %+v", st.NetworkDenied, st.NetworkDenials)
	}
	if len(records) != sandbox.MaxNetworkDenials+1 || !strings.Contains(records[len(records)-1], "counted") {
		t.Errorf("%d log records for %d denials, want %d, the last saying the rest are counted", len(records), n, sandbox.MaxNetworkDenials+1)
	}
}

// TestFormatRule writes rules back in the form ParseHostRule reads.
func TestFormatRule(t *testing.T) {
	for _, in := range []string{"api.example.com", "*.example.org:443,8443", "[2001:db8::1]:443", "203.0.113.7:80", "2001:db8::1"} {
		r, err := sandbox.ParseHostRule(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := formatRule(r); got != in {
			t.Errorf("%q: formatted %q", in, got)
		}
	}
}

// TestConfinedServerSecrets: a variable whose name looks like a secret
// reaches a confined server only when its entry names it in "secrets".
// Without it the server fails before it runs (host-side: its start log,
// in its workspace, was never written), saying what to do and never the
// value; named, the server gets it (the control), its name is in Status
// and its value, written literally, is redacted; and a secret of the
// host's own environment never reaches a confined server, while an
// unconfined one inherits it (the control that the attack works without
// the sandbox).
func TestConfinedServerSecrets(t *testing.T) {
	requireSandbox(t)
	const hostSecret, given = "host-secret-value-4711", "ghp-literal-value-0815"
	t.Setenv("CLAWTOOL_TEST_API_KEY", hostSecret)
	t.Setenv("CLAWTOOL_TEST_GH", given)
	dir, work, entry := getenvSetup(t)
	startLog := filepath.Join(work, "starts.log")
	b, _ := json.Marshal(map[string]any{"sandboxPolicy": "sandbox.json", "mcpServers": map[string]any{
		"refused": entry("refused_", map[string]any{"GITHUB_TOKEN": "${CLAWTOOL_TEST_GH}", startLogEnv: startLog}, map[string]any{"workspace": work}),
		"named":   entry("named_", map[string]any{"GITHUB_TOKEN": given}, map[string]any{"secrets": []string{"GITHUB_TOKEN"}}),
		"control": entry("control_", nil, map[string]any{"unsandboxed": true}),
	}})
	reg, h := reloadIn(t, dir, b)
	getenv := func(name, variable string) string {
		t.Helper()
		res := reg.Execute(t.Context(), name, json.RawMessage(`{"name": `+jsonString(variable)+`}`))
		if res.IsError {
			t.Fatalf("%s: %+v %+v", name, res, h.Status())
		}
		return strings.TrimPrefix(res.Output, "=")
	}
	st := map[string]Status{}
	for _, s := range h.Status() {
		st[s.Name] = s
	}
	if r := st["refused"]; r.State != Failed || r.Confinement != ConfinedNative || !strings.Contains(r.Err, `env "GITHUB_TOKEN" looks like a secret`) || !strings.Contains(r.Err, `"secrets"`) || strings.Contains(r.Err, given) {
		t.Errorf("refused: %+v", r)
	}
	if _, err := os.Stat(startLog); !os.IsNotExist(err) {
		t.Errorf("the refused server ran: its start log: %v", err)
	}
	if n := st["named"]; n.State != Ready || strings.Join(n.Secrets, ",") != "GITHUB_TOKEN" {
		t.Errorf("named: %+v", n)
	}
	if got := getenv("named_getenv", "GITHUB_TOKEN"); got != given {
		t.Errorf("the named secret in the confined server: %q", got)
	}
	if got := h.Config().Redact("token " + given); got != "token [redacted]" {
		t.Errorf("the literal secret is not redacted: %q", got)
	}
	if got := getenv("named_getenv", "CLAWTOOL_TEST_API_KEY"); got != "" {
		t.Errorf("the host's secret reached the confined server: %q", got)
	}
	if got := getenv("control_getenv", "CLAWTOOL_TEST_API_KEY"); got != hostSecret {
		t.Errorf("control: the unconfined server does not inherit the host's secret: %q", got)
	}
}

// getenvSetup makes what the confined tests of a server's environment
// share: a directory holding a work directory and a sandbox.json that
// grants the fixture's command, and entry, which writes a server entry of
// the fixture with its getenv tool on, env added to its environment and
// more to the entry.
func getenvSetup(t *testing.T) (dir, work string, entry func(prefix string, env, more map[string]any) map[string]any) {
	t.Helper()
	dir = t.TempDir()
	work = filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	fx := confinedFixture(t, "echo")
	if err := os.WriteFile(filepath.Join(dir, "sandbox.json"), []byte(`{"readOnly": [`+jsonString(filepath.Dir(fx.Command))+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	entry = func(prefix string, env, more map[string]any) map[string]any {
		e := map[string]any{"command": fx.Command, "args": fx.Args, "prefix": prefix}
		envs := map[string]any{getenvEnv: "1"}
		for k, v := range fx.Env {
			envs[k] = v
		}
		for k, v := range env {
			envs[k] = v
		}
		e["env"] = envs
		for k, v := range more {
			e[k] = v
		}
		return e
	}
	return dir, work, entry
}

// reloadIn writes the configuration b as config.json in dir and returns
// a host that loaded it, closed when the test ends, and its registry.
func reloadIn(t *testing.T, dir string, b []byte) (*tool.Registry, *Host) {
	t.Helper()
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	h := NewHost(reg)
	t.Cleanup(func() { h.Close() })
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	return reg, h
}
