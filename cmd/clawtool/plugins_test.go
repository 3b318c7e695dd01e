package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/miniopenclaw/tool/sandbox"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool/inspector"
	"github.com/miniopenclaw/tool/internal/golden"
)

// writePluginsConfig writes a configuration naming the test MCP server
// as "remote" (with prefix, when given) and, if missing, a server whose
// command does not exist.
func writePluginsConfig(t *testing.T, file, prefix string, missing bool) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]any{
		"remote": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{mcpServerEnv: "1"}, "prefix": prefix},
	}
	if missing {
		servers["gone"] = map[string]any{"command": "/nonexistent/mcp-server"}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers, "permissions": "perm.json"})
	// The permissions the configuration names apply (configpolicy.go): let every call through.
	if err := os.WriteFile(filepath.Join(filepath.Dir(file), "perm.json"), []byte("permit (principal, action, resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

func TestPluginsCommand(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	file := filepath.Join(t.TempDir(), "config.json")
	writePluginsConfig(t, file, "", true)
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"plugins", "--config", file}, nil, &out, &errOut)
	if code != exitToolError {
		t.Errorf("plugins with a failed entry: exit %d, want %d", code, exitToolError)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 ||
		!strings.HasPrefix(lines[1], "gone ") || !strings.Contains(lines[1], "failed") || !strings.Contains(lines[1], "/nonexistent/mcp-server") ||
		!strings.HasPrefix(lines[2], "remote ") || !strings.Contains(lines[2], "ready") || !strings.Contains(lines[2], " 2 ") ||
		!strings.Contains(out.String(), "permissions: "+filepath.Join(filepath.Dir(file), "perm.json")) {
		t.Errorf("plugins printed:\n%s\nstderr: %s", out.String(), errOut.String())
	}

	out.Reset()
	code = run(t.Context(), []string{"plugins", "--json"}, nil, &out, io.Discard)
	if code != exitUsage {
		t.Errorf("plugins without --config: exit %d, want %d", code, exitUsage)
	}
}

func TestConfigFlag(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	file := filepath.Join(t.TempDir(), "config.json")
	writePluginsConfig(t, file, "r_", true)
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"call", "--config", file, "r_remote_echo", `{"text":"hi"}`}, nil, &out, &errOut)
	if code != exitOK || !strings.Contains(out.String(), "remote: hi") {
		t.Errorf("call --config: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "failed to load") || !strings.Contains(errOut.String(), "/nonexistent/mcp-server") {
		t.Errorf("the failed entry is not reported on stderr: %s", errOut.String())
	}

	out.Reset()
	code = run(t.Context(), []string{"list", "--no-builtins", "--config", file}, nil, &out, io.Discard)
	if code != exitOK || !strings.Contains(out.String(), "r_remote_echo") {
		t.Errorf("list --config: exit %d\n%s", code, out.String())
	}

	if err := os.WriteFile(file, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	code = run(t.Context(), []string{"list", "--config", file}, nil, io.Discard, &errOut)
	if code != exitToolError || !strings.Contains(errOut.String(), "not a valid configuration") {
		t.Errorf("list --config with a malformed file: exit %d, stderr %s", code, errOut.String())
	}
}

// TestServeConfigGateway serves the tools of a configuration file and
// follows its changes: the client gets list_changed and the new names.
func TestServeConfigGateway(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	file := filepath.Join(t.TempDir(), "config.json")
	writePluginsConfig(t, file, "a_", false)
	s := startServe(t, io.Discard, "--no-builtins", "--config", file)
	s.roundTrip(initReq)
	s.send(initialized)
	list := func() []string { return toolNames(s.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)) }
	for !slices.Contains(list(), "a_remote_echo") {
		s.waitChanged()
	}
	writePluginsConfig(t, file, "b_", false)
	for names := list(); !slices.Contains(names, "b_remote_echo") || slices.Contains(names, "a_remote_echo"); names = list() {
		s.waitChanged()
	}
	res := s.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"b_remote_echo","arguments":{"text":"x"}}}`)
	if b, _ := json.Marshal(res); !strings.Contains(string(b), "remote: x") {
		t.Errorf("tools/call after the reload: %s", b)
	}
	if code := s.close(); code != exitOK {
		t.Errorf("serve exit %d", code)
	}
}

// TestPluginsSandboxPolicy checks that the configuration's sandbox policy
// reaches the command: a stdio server runs confined under it (or under
// its own policy, here with the host's network), outside it only when
// marked unsandboxed, and the table and the JSON say which (golden
// file); a server under an allow list has the connections its proxy
// refused it listed.
func TestPluginsSandboxPolicy(t *testing.T) {
	if os.Geteuid() != 0 || !sandbox.Probe().Has(sandbox.LayerLandlock) {
		if os.Getenv("CI") == "true" {
			t.Fatal("the confined servers need root and the sandbox's layers")
		}
		t.Skip("the confined servers need root and the sandbox's layers")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.MkdirTemp("", "clawtool-confined-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	copyExe := filepath.Join(bin, "server")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyExe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	binJSON, _ := json.Marshal(bin)
	for name, text := range map[string]string{
		"sandbox.json": `{"workspace": ".", "readOnly": [` + string(binJSON) + `]}`,
		"net.json":     `{"network": "host", "readOnly": [` + string(binJSON) + `]}`,
		"allow.json":   `{"network": "allow", "allow": ["api.example.com", "*.example.org:443"], "readOnly": [` + string(binJSON) + `]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	server := func(unsandboxed bool, policy string) map[string]any {
		s := map[string]any{"command": copyExe, "args": []string{"-test.run=^$"}, "env": map[string]string{mcpServerEnv: "1"}, "unsandboxed": unsandboxed,
			"prefix": strings.TrimSuffix(policy, ".json") + map[bool]string{true: "free_", false: "boxed_"}[unsandboxed]}
		if policy != "" {
			s["sandboxPolicy"] = policy
		}
		return s
	}
	// allowed tries, at start, a name off its list and the metadata
	// address: nothing leaves the machine (the proxy refuses both before
	// it resolves or dials anything).
	allowed := server(false, "allow.json")
	allowed["env"] = map[string]string{mcpServerEnv: "1", fetchEnv: "http://unlisted.example/,http://169.254.169.254/latest/meta-data/", "EXAMPLE_TOKEN": "literal-token-value"}
	allowed["secrets"] = []string{"EXAMPLE_TOKEN"}
	b, _ := json.Marshal(map[string]any{"sandboxPolicy": "sandbox.json", "mcpServers": map[string]any{
		"boxed": server(false, ""), "free": server(true, ""), "hostnet": server(false, "net.json"), "allowed": allowed,
	}})
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := run(t.Context(), []string{"plugins", "--config", file, "--json"}, nil, &out, io.Discard)
	var st []struct {
		Name, State, Error, Confinement, Network string
		Allow, Secrets                           []string
		NetworkDenials                           []struct{ Host, Reason string }
		NetworkDenied                            int
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if code != exitOK || len(st) != 4 ||
		st[0].Name != "allowed" || st[0].State != "ready" || st[0].Network != "allow" || strings.Join(st[0].Allow, " ") != "api.example.com *.example.org:443" || strings.Join(st[0].Secrets, " ") != "EXAMPLE_TOKEN" ||
		st[0].NetworkDenied != 2 || len(st[0].NetworkDenials) != 2 || st[0].NetworkDenials[0].Host != "unlisted.example" ||
		st[0].NetworkDenials[1].Reason != "an IP literal not in the allow list" ||
		st[1].Name != "boxed" || st[1].State != "ready" || st[1].Confinement != "native" || st[1].Network != "none" ||
		st[2].Name != "free" || st[2].State != "ready" || st[2].Confinement != "unconfined" ||
		st[3].Name != "hostnet" || st[3].State != "ready" || st[3].Network != "host" {
		t.Errorf("exit %d, entries %+v", code, st)
	}
	const secretValue = "literal-token-value"
	if strings.Contains(out.String(), secretValue) {
		t.Errorf("--json shows the secret's value:\n%s", out.String())
	}
	out.Reset()
	code = run(t.Context(), []string{"plugins", "--config", file}, nil, &out, io.Discard)
	got := fmt.Sprintf("$ clawtool plugins --config config.json\n-- exit %d --\n-- stdout --\n%s", code, strings.ReplaceAll(out.String(), dir, "$DIR"))
	golden.File(t, filepath.Join("testdata", "cli", "plugins_confined.golden"), []byte(got))
	if strings.Contains(out.String(), secretValue) {
		t.Errorf("the table shows the secret's value:\n%s", out.String())
	}

	// The inspector's Sources tab: the same names, never the value.
	page := startInspector(t, "inspect", "--addr", "127.0.0.1:0", "--no-builtins", "--config", file)
	u, _ := url.Parse(page)
	scode, body := inspectorGet(t, "http://"+u.Host+"/api/sources", u.Query().Get("token"))
	var sources []inspector.Source
	if err := json.Unmarshal([]byte(body), &sources); err != nil || scode != 200 {
		t.Fatalf("api/sources: %d %s", scode, body)
	}
	if len(sources) != 4 || sources[0].Name != "allowed" || strings.Join(sources[0].Secrets, " ") != "EXAMPLE_TOKEN" ||
		sources[1].Secrets != nil || strings.Contains(body, secretValue) {
		t.Errorf("api/sources: %s, want the allowed entry's secret named, its value nowhere", body)
	}
}

// TestServeConfigKeepsAnnotations serves the same MCP server through
// --mcp and through --config: tools/list must describe its tool with the
// annotations the server stated, false hints included, both ways (they
// were dropped through --config, and clients then took the tool for
// destructive and open-world).
func TestServeConfigKeepsAnnotations(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"remote": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{mcpServerEnv: "1", hintsEnv: "1"}},
	}})
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"title": "Echo", "readOnlyHint": false, "idempotentHint": true, "destructiveHint": false, "openWorldHint": false}
	for _, args := range [][]string{
		{"--mcp", fmt.Sprintf("env %s=1 %s", hintsEnv, remoteServer(t))},
		{"--config", file},
	} {
		t.Run(args[0], func(t *testing.T) {
			s := startServe(t, io.Discard, append([]string{"--no-builtins"}, args...)...)
			s.roundTrip(initReq)
			s.send(initialized)
			var echo map[string]any
			for echo == nil {
				r, _ := s.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)["result"].(map[string]any)
				tools, _ := r["tools"].([]any)
				for _, tl := range tools {
					if m := tl.(map[string]any); m["name"] == "remote_echo" {
						echo = m
					}
				}
				if echo == nil {
					s.waitChanged()
				}
			}
			if diff := cmp.Diff(want, echo["annotations"]); diff != "" {
				t.Errorf("annotations of remote_echo (-want +got):\n%s", diff)
			}
			if code := s.close(); code != exitOK {
				t.Errorf("serve exit %d", code)
			}
		})
	}
}

// manyServer is a configuration entry (or, joined, an --mcp value) for
// the test MCP server of n tools.
func manyServer(t *testing.T, n int) (exe string, env map[string]string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe, map[string]string{manyEnv: fmt.Sprint(n)}
}

// TestToolCapReported loads a server listing 1,500 tools over 15 pages:
// all are imported by default; with a cap of 1,000, exactly 1,000 are,
// and the cut is reported in clawtool plugins (text and --json) and as one
// WARN line in the log, naming what raises the cap; --max-tools does the
// same for --mcp.
func TestToolCapReported(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	exe, env := manyServer(t, 1500)
	file := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"all": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": env, "prefix": "a_"},
		"cut": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": env, "prefix": "c_", "maxTools": 1000},
	}})
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	const cutMsg = `500 tools left out: the server lists more than its cap of 1000 tools (raise it with "maxTools" in its entry, up to 100000)`

	var out bytes.Buffer
	code := run(t.Context(), []string{"plugins", "--config", file, "--json"}, nil, &out, io.Discard)
	var st []map[string]any
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	want := []map[string]any{
		{"name": "all", "kind": "mcp", "state": "ready", "tools": 1500.0, "confinement": "unconfined"},
		{"name": "cut", "kind": "mcp", "state": "ready", "tools": 1000.0, "confinement": "unconfined", "cut": map[string]any{"maxTools": 1000.0, "leftOut": 500.0}, "error": cutMsg},
	}
	if diff := cmp.Diff(want, st); code != exitOK || diff != "" {
		t.Errorf("plugins --json: exit %d, entries (-want +got):\n%s", code, diff)
	}

	out.Reset()
	run(t.Context(), []string{"plugins", "--config", file}, nil, &out, io.Discard)
	if !strings.Contains(out.String(), "cut   mcp   ready  1000   unconfined   "+cutMsg) {
		t.Errorf("plugins printed:\n%s\nwant the cut on the line of \"cut\"", out.String())
	}

	var errOut bytes.Buffer
	out.Reset()
	code = run(t.Context(), []string{"list", "--json", "--no-builtins", "--config", file}, nil, &out, &errOut)
	var tools []any
	if err := json.Unmarshal(out.Bytes(), &tools); code != exitOK || err != nil || len(tools) != 2500 {
		t.Errorf("list --config: exit %d, %d tools (%v), want 2500", code, len(tools), err)
	}
	if lines := strings.Split(strings.TrimSpace(errOut.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") ||
		!strings.Contains(lines[0], `MCP server \"cut\": `+strings.ReplaceAll(cutMsg, `"`, `\"`)) {
		t.Errorf("list --config logged:\n%s\nwant one WARN line with the cut", errOut.String())
	}

	mcpFlag := fmt.Sprintf("env %s=1500 '%s'", manyEnv, exe)
	for _, tt := range []struct {
		args   []string
		tools  int
		stderr string
	}{
		{[]string{"--mcp", mcpFlag}, 1500, ""},
		{[]string{"--max-tools", "1000", "--mcp", mcpFlag}, 1000,
			"clawtool: warning: MCP server \"env " + manyEnv + "=1500 " + exe + "\": 500 tools left out: the server lists more than the cap of 1000 tools (raise it with --max-tools)\n"},
	} {
		out.Reset()
		errOut.Reset()
		code := run(t.Context(), append([]string{"list", "--json", "--no-builtins"}, tt.args...), nil, &out, &errOut)
		var tools []any
		if err := json.Unmarshal(out.Bytes(), &tools); code != exitOK || err != nil || len(tools) != tt.tools || errOut.String() != tt.stderr {
			t.Errorf("list %q: exit %d, %d tools (%v), stderr %q; want %d tools, stderr %q", tt.args, code, len(tools), err, errOut.String(), tt.tools, tt.stderr)
		}
	}
}

// TestPluginsTextShowsWholeError prints a configuration whose server
// fails at start, saying why on standard error at length: the text shows
// the whole error and the end of that standard error (its last 20 lines),
// the secret redacted and the terminal escape made visible, as --json
// does; the table keeps one line per entry (golden file).
func TestPluginsTextShowsWholeError(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("CLAWTOOL_TEST_SECRET", "hunter2-secret")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"crash":  map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{crashEnv: "30", "CRASH_TOKEN": "${CLAWTOOL_TEST_SECRET}"}},
		"remote": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{mcpServerEnv: "1"}},
	}})
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"plugins", "--config", file}, nil, &out, &errOut)
	text := strings.ReplaceAll(out.String(), exe, "$EXE")
	if strings.Contains(text, "hunter2") || strings.ContainsRune(text, 0x1b) {
		t.Errorf("the text shows the secret or a raw terminal escape:\n%s", text)
	}
	got := fmt.Sprintf("$ clawtool plugins --config config.json\n-- exit %d --\n-- stdout --\n%s-- stderr --\n%s", code, text, &errOut)
	golden.File(t, filepath.Join("testdata", "cli", "plugins_crash.golden"), []byte(got))
}

// TestIndentBounded checks the bound on one entry's error in the text of
// clawtool plugins, and that control characters never reach the terminal.
func TestIndentBounded(t *testing.T) {
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprint("l", i))
	}
	got := indentBounded(strings.Join(lines, "\n"), 40, 8<<10)
	if n := strings.Count(got, "\n"); n != 41 || !strings.HasSuffix(got, "  … 60 more lines (clawtool plugins --json gives them all)\n") {
		t.Errorf("100 lines gave %d:\n%s", n, got)
	}
	got = indentBounded(strings.Repeat("x", 5000)+"\n"+strings.Repeat("y", 5000)+"\nz", 40, 8<<10)
	if len(got) > 8<<10+100 || !strings.HasSuffix(got, "  … 2 more lines (clawtool plugins --json gives them all)\n") {
		t.Errorf("two 5,000-byte lines gave %d bytes, ending %q", len(got), got[len(got)-60:])
	}
}
