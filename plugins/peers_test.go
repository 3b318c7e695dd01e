//go:build peers

// Tests against the real MCP servers installed from npm by
// .ci/mcp-peers.sh, which sets MCP_PEERS_DIR:
//
//	MCP_PEERS_DIR=.ci/mcp-peers go test -tags peers ./plugins/...

package plugins

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

// TestPeerClaudeDesktopConfig loads a configuration file as Claude
// Desktop users write it, naming server-everything and
// server-filesystem through npx, unchanged; npx finds the packages
// installed in the working directory.
func TestPeerClaudeDesktopConfig(t *testing.T) {
	dir := os.Getenv("MCP_PEERS_DIR")
	if dir == "" {
		t.Skip("MCP_PEERS_DIR is not set; run .ci/mcp-peers.sh")
	}
	dir, _ = filepath.Abs(dir)
	t.Chdir(filepath.Join(dir, "peers"))
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "note.txt"), []byte("plugins were here"), 0o600); err != nil {
		t.Fatal(err)
	}
	rootJSON, _ := json.Marshal(root)
	file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	config := `{
  "mcpServers": {
    "everything": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-everything"]
    },
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", ` + string(rootJSON) + `]
    }
  }
}`
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	h := NewHost(reg)
	defer h.Close()
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	for _, s := range h.Status() {
		if s.State != Ready || s.Tools == 0 {
			t.Errorf("%s: %+v", s.Name, s)
		}
	}
	if !slices.ContainsFunc(names(reg), func(n string) bool { return n == "echo" }) {
		t.Fatalf("no echo tool among %v", names(reg))
	}
	if res := reg.Execute(t.Context(), "echo", json.RawMessage(`{"message":"hello peers"}`)); res.IsError || !strings.Contains(res.Output, "hello peers") {
		t.Errorf("echo: %+v", res)
	}
	arg, _ := json.Marshal(map[string]string{"path": filepath.Join(root, "note.txt")})
	if res := reg.Execute(t.Context(), "read_text_file", arg); res.IsError || !strings.Contains(res.Output, "plugins were here") {
		t.Errorf("read_text_file: %+v", res)
	}
}

// TestPeerConfinedClaudeDesktopConfig is TestPeerClaudeDesktopConfig
// with every server confined by the configuration's sandboxPolicy: the
// native sandbox, no network, the peers' packages readable (npx finds
// them through --prefix, the working directory being the workspace),
// server-filesystem's root its workspace. The same tools work.
func TestPeerConfinedClaudeDesktopConfig(t *testing.T) {
	dir := os.Getenv("MCP_PEERS_DIR")
	if dir == "" {
		t.Skip("MCP_PEERS_DIR is not set; run .ci/mcp-peers.sh")
	}
	requireSandbox(t)
	dir, _ = filepath.Abs(dir)
	peers := filepath.Join(dir, "peers")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "note.txt"), []byte("plugins were here"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgDir := t.TempDir()
	policy := filepath.Join(cfgDir, "sandbox.json")
	if err := os.WriteFile(policy, []byte(`{"readOnly": [`+jsonString(peers)+`], "limits": {"cpu": "60s"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// npx --prefix finds the package; its bin directory on PATH starts it.
	bin := filepath.Join(peers, "node_modules", ".bin") + ":/usr/local/bin:/usr/bin:/bin"
	file := filepath.Join(cfgDir, "claude_desktop_config.json")
	config := `{
  "sandboxPolicy": "sandbox.json",
  "mcpServers": {
    "everything": {
      "command": "npx",
      "args": ["--prefix", ` + jsonString(peers) + `, "-y", "@modelcontextprotocol/server-everything"],
      "env": {"PATH": ` + jsonString(bin) + `}
    },
    "filesystem": {
      "command": "npx",
      "args": ["--prefix", ` + jsonString(peers) + `, "-y", "@modelcontextprotocol/server-filesystem", ` + jsonString(root) + `],
      "workspace": ` + jsonString(root) + `,
      "env": {"PATH": ` + jsonString(bin) + `}
    }
  }
}`
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	h := NewHost(reg)
	defer h.Close()
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	for _, s := range h.Status() {
		if s.State != Ready || s.Tools == 0 || s.Confinement != ConfinedNative || s.Network != "none" {
			t.Errorf("%s: %+v", s.Name, s)
		}
	}
	if res := reg.Execute(t.Context(), "echo", json.RawMessage(`{"message":"hello peers"}`)); res.IsError || !strings.Contains(res.Output, "hello peers") {
		t.Errorf("echo: %+v", res)
	}
	arg, _ := json.Marshal(map[string]string{"path": filepath.Join(root, "note.txt")})
	if res := reg.Execute(t.Context(), "read_text_file", arg); res.IsError || !strings.Contains(res.Output, "plugins were here") {
		t.Errorf("read_text_file: %+v", res)
	}
	// What the confined server writes in its workspace is the caller's.
	arg, _ = json.Marshal(map[string]string{"path": filepath.Join(root, "made.txt"), "content": "written confined"})
	if res := reg.Execute(t.Context(), "write_file", arg); res.IsError {
		t.Fatalf("write_file: %+v", res)
	}
	assertOwnedLike(t, filepath.Join(root, "made.txt"), root)

	// The same tools as unconfined: the file without its sandboxPolicy,
	// loaded into a registry of its own.
	var c map[string]any
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		t.Fatal(err)
	}
	delete(c, "sandboxPolicy")
	b, _ := json.Marshal(c)
	plainFile := filepath.Join(cfgDir, "unconfined.json")
	if err := os.WriteFile(plainFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	plain := tool.NewRegistry()
	hp := NewHost(plain)
	defer hp.Close()
	if err := hp.Reload(t.Context(), plainFile); err != nil {
		t.Fatal(err)
	}
	names := func(r *tool.Registry) []string {
		var out []string
		for _, x := range r.List() {
			out = append(out, x.Name())
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(reg), names(plain); !slices.Equal(got, want) || len(got) == 0 {
		t.Errorf("confined tools %v, unconfined %v", got, want)
	}
}
