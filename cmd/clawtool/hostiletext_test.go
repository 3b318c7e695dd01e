package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
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
	s := mcp.NewServer(&mcp.Implementation{Name: "test-hostile-text", Version: "0"}, nil)
	s.AddReceivingMiddleware(func(h mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return h(ctx, method, req)
			}
			if mode == "fail" {
				return nil, fmt.Errorf("no tools today%s\x1b[2J", osc52)
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
// error of a server that fails (the server's own message). Both printed
// the server's terminal escapes raw; both are now written escaped.
func TestHostileServerTextEscaped(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	raw := func(s string) bool { return strings.ContainsAny(s, "\x1b\x07") }
	if !raw(osc52) {
		t.Fatal("control: the attack holds no escape")
	}
	for _, tt := range []struct {
		mode, want string
		code       int
	}{
		{"partial", `MCP server`, exitOK},
		{"fail", `no tools today`, exitToolError},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(t.Context(), []string{"list", "--no-builtins", "--mcp", fmt.Sprintf("env %s=%s '%s' -test.run=^$", hostileTextEnv, tt.mode, exe)}, nil, &out, &errOut)
			if code != tt.code || !strings.Contains(errOut.String(), tt.want) || !strings.Contains(errOut.String(), "52;c;cm0gLXJmIH4=") {
				t.Fatalf("exit %d, want %d; stderr:\n%q\nwant it to report the server's text", code, tt.code, errOut.String())
			}
			if raw(errOut.String()) || raw(out.String()) {
				t.Errorf("a raw terminal escape reached the terminal:\n%q", errOut.String())
			}
		})
	}
}
