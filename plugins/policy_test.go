package plugins

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"go.uber.org/goleak"
)

// TestConfigSandboxPolicy: ReadFile reads the policy the configuration
// names (with sandbox.ReadPolicyFile, tested in package sandbox), relative
// to it; one that is not valid makes the whole file invalid.
func TestConfigSandboxPolicy(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		t.Helper()
		p := filepath.Join(dir, "policy.json")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write(`{"network": "allow"}`)
	conf := filepath.Join(dir, "config.json")
	writeConfig(t, conf, []byte(`{"sandboxPolicy": "policy.json"}`))
	if _, err := ReadFile(conf); err == nil || !strings.Contains(err.Error(), "sandboxPolicy") {
		t.Errorf("a configuration naming a bad policy: error %v", err)
	}
	write(`{"workspace": "work"}`)
	c, err := ReadFile(conf)
	if err != nil || c.Sandbox == nil || c.Sandbox.Workspace != filepath.Join(dir, "work") {
		t.Errorf("ReadFile: %+v, %v", c, err)
	}
}

// TestSandboxPolicyModules checks that the policy's paths are the files a
// module sees, and that its limits bound the module's.
func TestSandboxPolicyModules(t *testing.T) {
	dir := t.TempDir()
	ws, outside := filepath.Join(dir, "work"), filepath.Join(dir, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "hello.txt"), []byte("hello from "+filepath.Base(d)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"workspace": "work", "limits": {"output": 100, "cpu": "2s"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	mod := reactorModule(t)
	reg, h := loadConfig(t, `{
	  "sandboxPolicy": "`+policy+`",
	  "wasmModules": {
	    "r": {"path": "`+mod+`", "timeout": "1m", "tools": `+reactorTools+`},
	    "inside": {"path": "`+mod+`", "prefix": "in_", "workspace": "`+ws+`", "tools": `+reactorTools+`},
	    "wider": {"path": "`+mod+`", "prefix": "w_", "workspace": "`+outside+`", "tools": `+reactorTools+`}
	  }
	}`)
	st := map[string]Status{}
	for _, s := range h.Status() {
		st[s.Name] = s
	}
	if st["r"].State != Ready || st["inside"].State != Ready {
		t.Fatalf("status: %+v", st)
	}
	if s := st["wider"]; s.State != Failed || !strings.Contains(s.Err, `"workspace" "`+outside+`" is not inside a path "sandboxPolicy" grants`) {
		t.Errorf("a module asking for more than the policy grants: %+v", s)
	}
	for _, tc := range []struct {
		tool, args string
		kind       tool.ErrorKind
		want       string
	}{
		// The policy's workspace, at its own path.
		{"read", `{"path":"` + filepath.Join(ws, "hello.txt") + `"}`, "", "hello from work"},
		{"read", `{"path":"` + filepath.Join(outside, "hello.txt") + `"}`, tool.KindToolError, "open " + outside},
		{"read", `{"path":"/etc/hostname"}`, tool.KindToolError, "open /etc/hostname"},
		// The module's own workspace, inside the policy's, at "/".
		{"in_read", `{"path":"/hello.txt"}`, "", "hello from work"},
		// The policy's output limit is below the defaults'.
		{"big", `{"n":50}`, "", strings.Repeat("x", 50)},
		{"big", `{"n":500}`, tool.KindToolError, "larger than the limit of 100 bytes"},
		// Its CPU limit is below the module's timeout.
		{"spin", `{}`, tool.KindTimeout, "stopped at its deadline of 2s"},
	} {
		res := call(t, reg, tc.tool, tc.args)
		if res.Kind != tc.kind || !strings.Contains(res.Output+res.Error, tc.want) || strings.Contains(res.Output+res.Error, "hello from outside") {
			t.Errorf("%s(%s) = %+v, want kind %q and %q in it", tc.tool, tc.args, res, tc.kind, tc.want)
		}
	}
}

// TestSandboxPolicyMemory checks that the policy's memory limit caps the
// module's pages: the example module does not start in 1 MiB.
func TestSandboxPolicyMemory(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"limits": {"memory": 1048576}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, h := loadConfig(t, `{
	  "sandboxPolicy": "`+policy+`",
	  "wasmModules": {"r": {"path": "`+reactorModule(t)+`", "memoryPages": 1024, "tools": `+reactorTools+`}}
	}`)
	if st := h.Status(); len(st) != 1 || st[0].State != Failed || !strings.Contains(st[0].Err, "the limit is 16 (Options.MemoryPages)") {
		t.Fatalf("a module over the policy's memory limit loaded: %+v", st)
	}
}

// TestSandboxPolicyServers checks that a stdio server runs confined
// under the configuration's sandbox policy, and outside it only when it
// is marked unsandboxed; Status says which, with the network policy.
func TestSandboxPolicyServers(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSpawnThread)
	requireSandbox(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	fx := confinedFixture(t, "echo")
	if err := os.WriteFile(policy, []byte(`{"workspace": ".", "readOnly": [`+jsonString(filepath.Dir(fx.Command))+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	h := NewHost(reg)
	defer h.Close()
	c := &Config{
		SandboxPolicy: policy,
		Servers: map[string]Server{
			"plain":       withPrefix(fx, "p_"),
			"unsandboxed": withPrefix(fixture(t, "", "echo"), "u_"),
		},
	}
	u := c.Servers["unsandboxed"]
	u.Unsandboxed = true
	c.Servers["unsandboxed"] = u
	h.Apply(t.Context(), c)
	st := h.Status()
	if len(st) != 2 || st[0].Name != "plain" || st[0].State != Ready || st[0].Tools != 2 ||
		st[0].Confinement != ConfinedNative || st[0].Network != "none" {
		t.Errorf("plain: %+v", st)
	}
	if st[1].State != Ready || st[1].Tools != 2 || st[1].Confinement != Unconfined {
		t.Errorf("unsandboxed: %+v", st[1])
	}
	if res := reg.Execute(t.Context(), "p_echo", json.RawMessage(`{"text":"in the sandbox"}`)); res.IsError || !strings.Contains(res.Output, "in the sandbox") {
		t.Errorf("p_echo: %+v", res)
	}
	// A policy that cannot be read fails every entry: none loads without it.
	h.Apply(t.Context(), &Config{SandboxPolicy: filepath.Join(dir, "missing.json"), Servers: c.Servers})
	for _, s := range h.Status() {
		if s.State != Failed || !strings.Contains(s.Err, "sandboxPolicy") {
			t.Errorf("under an unreadable policy: %+v", s)
		}
	}
	if n := len(reg.List()); n != 0 {
		t.Errorf("%d tools loaded under an unreadable policy", n)
	}
}
