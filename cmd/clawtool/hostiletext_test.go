package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostileTextEnv makes the test binary an MCP server whose text, where
// clawtool prints it, holds terminal escapes: "partial" lists a tool
// whose schema is refused for a property named with an OSC 52 sequence
// (a clipboard write), beside a good tool; "fail" answers tools/list with
// an error whose message holds one.
const hostileTextEnv = "CLAWTOOL_TEST_HOSTILE_TEXT"

// osc52 writes "rm -rf ~" to the clipboard of a terminal that prints it.
const osc52 = "\x1b]52;c;cm0gLXJmIH4=\x07"

func serveHostileText(mode string) {
	if mode == "fail" {
		// By hand: go-sdk's server answers the methods it does not
		// serve (tasks/*) itself, with its own message.
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(nil, 1<<20)
		for in.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(in.Bytes(), &m) != nil || len(m.ID) == 0 {
				continue
			}
			msg, _ := json.Marshal("no " + m.Method + " today" + osc52 + "\x1b[2J \u202edeliaf")
			answer := `"error":{"code":-32000,"message":` + string(msg) + `}`
			if m.Method == "initialize" {
				answer = `"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"hostile","version":"0"}}`
			}
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,%s}`+"\n", m.ID, answer)
		}
		os.Exit(0)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "test-hostile-text", Version: "0"}, nil)
	s.AddReceivingMiddleware(func(h mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return h(ctx, method, req)
			}
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{
				{Name: "good", InputSchema: map[string]any{"type": "object"}},
				{Name: "bad", InputSchema: map[string]any{"type": "object", "properties": map[string]any{osc52: map[string]any{"type": "x"}}}},
			}}, nil
		}
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// TestHostileServerTextEscaped: what a server says reaches clawtool's
// standard error in two ways, the warning about a tool left out (its
// schema's error names the property, as the server spelled it) and the
// error of a server that fails (the server's own message), also that of
// clawtool tasks. Each printed the server's terminal escapes raw; each is
// now written escaped.
func TestHostileServerTextEscaped(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	raw := func(s string) bool { return strings.ContainsAny(s, "\x1b\x07\u202e") }
	if !raw(osc52) {
		t.Fatal("control: the attack holds no escape")
	}
	for _, tt := range []struct {
		name, mode, want string
		args             []string
		code             int
	}{
		{"partial", "partial", `MCP server`, []string{"list", "--no-builtins"}, exitOK},
		{"fail", "fail", `no tools/list today`, []string{"list", "--no-builtins"}, exitToolError},
		{"tasks get", "fail", `no tasks/get today`, []string{"tasks", "get", "t1"}, exitToolError},
		{"tasks cancel", "fail", `no tasks/cancel today`, []string{"tasks", "cancel", "t1"}, exitToolError},
		{"plugins", "fail", `no tools/list today`, []string{"plugins"}, exitToolError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			server := []string{"--mcp", fmt.Sprintf("env %s=%s '%s' -test.run=^$", hostileTextEnv, tt.mode, exe)}
			if tt.name == "plugins" {
				file := filepath.Join(t.TempDir(), "config.json")
				b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
					"hostile": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{hostileTextEnv: tt.mode}},
				}})
				if err := os.WriteFile(file, b, 0o600); err != nil {
					t.Fatal(err)
				}
				server = []string{"--config", file}
			}
			code := run(t.Context(), append(tt.args, server...), nil, &out, &errOut)
			if tt.name == "plugins" {
				// clawtool plugins reports the entry's error on stdout.
				out, errOut = errOut, out
			}
			if code != tt.code || !strings.Contains(errOut.String(), tt.want) || !strings.Contains(errOut.String(), "52;c;cm0gLXJmIH4=") {
				t.Fatalf("exit %d, want %d; stderr:\n%q\nwant it to report the server's text", code, tt.code, errOut.String())
			}
			if raw(errOut.String()) || raw(out.String()) {
				t.Errorf("a raw terminal escape reached the terminal:\n%q", errOut.String())
			}
		})
	}
}
