package plugins

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// claudeDesktop is a configuration file as Claude Desktop writes it,
// with a key of its own that is not about servers.
const claudeDesktop = `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GH_TOKEN}"}
    },
    "remote": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN}"}}
  }
}`

func lookup(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParseHostFormats(t *testing.T) {
	vars := lookup(map[string]string{"GH_TOKEN": "ghp_secret123", "API_TOKEN": "tok-456"})
	c, err := Parse([]byte(claudeDesktop), vars)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Server{
		"filesystem": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"}},
		"github": {Command: "docker", Args: []string{"run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"},
			Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret123"}},
		"remote": {Type: "http", URL: "https://mcp.example/mcp", Headers: map[string]string{"Authorization": "Bearer tok-456"}},
	}
	if diff := cmp.Diff(want, c.Servers, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if got := c.Redact("token ghp_secret123 and Bearer tok-456"); got != "token [redacted] and Bearer [redacted]" {
		t.Errorf("Redact = %q", got)
	}

	// A reference in args is a secret too; a short value is not hidden.
	ac, err := Parse([]byte(`{"mcpServers": {"x": {"command": "srv", "args": ["--token", "${GH_TOKEN}", "--level", "${LEVEL}"]}}}`),
		lookup(map[string]string{"GH_TOKEN": "ghp_secret123", "LEVEL": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := ac.Redact(strings.Join(ac.Servers["x"].Args, " ")); got != "--token [redacted] --level 2" {
		t.Errorf("Redact(args) = %q", got)
	}

	// The editors' "servers" key reads the same.
	vs, err := Parse([]byte(`{"servers": {"x": {"command": "srv", "args": ["--stdio"]}}}`), vars)
	if err != nil {
		t.Fatal(err)
	}
	if s := vs.Servers["x"]; s.Command != "srv" || len(s.Args) != 1 {
		t.Errorf("servers key: %+v", vs.Servers)
	}
}

func TestParseExtensions(t *testing.T) {
	c, err := Parse([]byte(`{
	  "mcpServers": {"a": {"command": "a", "prefix": "a_", "tools": ["read_*"], "excludeTools": ["read_secret"], "timeout": "5s", "maxTools": 20000}},
	  "wasmModules": {"m": {"path": "m.wasm", "timeout": 1500, "tools": [{"name": "up", "description": "d"}]}},
	  "defaults": {"timeout": "30s", "maxOutput": 1000},
	  "sandboxPolicy": "sandbox.json",
	  "permissions": "perm.json"
	}`), lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Servers["a"]
	for name, keep := range map[string]bool{"read_file": true, "read_secret": false, "write_file": false} {
		if a.keeps(name) != keep {
			t.Errorf("keeps(%q) = %v, want %v", name, !keep, keep)
		}
	}
	if time.Duration(a.Timeout) != 5*time.Second || time.Duration(c.Modules["m"].Timeout) != 1500*time.Millisecond {
		t.Errorf("timeouts: %v %v", a.Timeout, c.Modules["m"].Timeout)
	}
	if a.MaxTools != 20000 {
		t.Errorf("maxTools: %d, want 20000", a.MaxTools)
	}
	if c.SandboxPolicy != "sandbox.json" || c.Permissions != "perm.json" || c.Defaults.MaxOutput != 1000 {
		t.Errorf("policy fields or defaults lost: %+v", c)
	}
	if n := len(c.RegistryOptions()); n != 2 {
		t.Errorf("RegistryOptions: %d options, want 2", n)
	}
}

func TestParseErrors(t *testing.T) {
	vars := lookup(map[string]string{"SECRET": "hunter2-very-secret"})
	for _, tc := range []struct {
		name, config, want string
	}{
		{"malformed", `{"mcpServers": {`, "not a valid configuration"},
		{"trailing", `{"mcpServers": {}} {}`, "text after the JSON object"},
		{"unset variable", `{"mcpServers": {"a": {"command": "x", "env": {"K": "${NOPE}"}}}}`, `server "a": env "K": environment variable NOPE is not set`},
		{"a secret env does not set", `{"mcpServers": {"a": {"command": "x", "env": {"GH_TOKEN": "t"}, "secrets": ["GITHUB_TOKEN"]}}}`, `server "a": "secrets" names "GITHUB_TOKEN", which "env" does not set`},
		{"an image for a URL server", `{"mcpServers": {"a": {"url": "https://x.example/mcp", "image": "node:22"}}}`, `server "a": "image" runs a stdio server in a container`},
		{"an image for an unsandboxed server", `{"mcpServers": {"a": {"command": "x", "image": "node:22", "unsandboxed": true}}}`, `server "a": "image" runs a stdio server in a container`},
		{"secrets of a URL server", `{"mcpServers": {"a": {"url": "https://x.example/mcp", "secrets": ["GITHUB_TOKEN"]}}}`, `"secrets" names "GITHUB_TOKEN", which "env" does not set`},
		{"neither", `{"mcpServers": {"a": {"args": ["x"]}}}`, `server "a": neither "command" nor "url"`},
		{"both", `{"mcpServers": {"a": {"command": "x", "url": "http://127.0.0.1/mcp"}}}`, `both "command" and "url"`},
		{"sse", `{"mcpServers": {"a": {"type": "sse", "url": "http://127.0.0.1/sse"}}}`, "not supported"},
		{"bad prefix", `{"mcpServers": {"a": {"command": "x", "prefix": "a.b"}}}`, `prefix "a.b"`},
		{"bad pattern", `{"mcpServers": {"a": {"command": "x", "tools": ["["]}}}`, `tool pattern "["`},
		{"module without tools", `{"wasmModules": {"m": {"path": "m.wasm"}}}`, `module "m": "tools" is empty`},
		{"module tool name", `{"wasmModules": {"m": {"path": "m.wasm", "tools": [{"name": "a b"}]}}}`, `tool "a b"`},
		{"same name", `{"mcpServers": {"m": {"command": "x"}}, "wasmModules": {"m": {"path": "m.wasm", "tools": [{"name": "t"}]}}}`, "a server has the same name"},
		{"bad duration", `{"defaults": {"timeout": "soon"}}`, "not a valid configuration"},
		{"bad abi", `{"wasmModules": {"m": {"path": "m.wasm", "abi": "library", "tools": [{"name": "t"}]}}}`, `"abi" "library": want "command" or "reactor"`},
		{"instances", `{"wasmModules": {"m": {"path": "m.wasm", "instances": 99, "tools": [{"name": "t"}]}}}`, `"instances" must be between 0 and 16`},
		{"negative maxTools", `{"mcpServers": {"a": {"command": "x", "maxTools": -1}}}`, `"maxTools" -1: want a number of tools from 1 to 100000`},
		{"huge maxTools", `{"mcpServers": {"a": {"command": "x", "maxTools": 100001}}}`, `"maxTools" 100001: want a number of tools from 1 to 100000`},
		{"fractional maxTools", `{"mcpServers": {"a": {"command": "x", "maxTools": 1.5}}}`, "not a valid configuration"},
		{"maxTools as text", `{"mcpServers": {"a": {"command": "x", "maxTools": "1000"}}}`, "not a valid configuration"},
		{"secret in url", `{"mcpServers": {"a": {"url": "ftp://${SECRET}", "headers": {"X": "${SECRET}"}}}}`, "not an http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.config), vars)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	x := &expander{lookup: lookup(map[string]string{"A": "1", "B": ""})}
	for in, want := range map[string]string{
		"plain": "plain", "${A}": "1", "x${A}y${B}z": "x1yz", "$$HOME": "$HOME", "cost $5": "cost $5",
	} {
		got, err := x.expand(in, false)
		if err != nil || got != want {
			t.Errorf("expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"${A", "${}", "${MISSING}"} {
		if _, err := x.expand(in, false); err == nil {
			t.Errorf("expand(%q): no error", in)
		}
	}
}
