package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServerEnv makes the test binary an MCP server with one tool,
// remote_echo, over stdio, for the --mcp tests.
const mcpServerEnv = "CLAWTOOL_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	sandbox.Main()
	if os.Getenv(mcpServerEnv) == "1" {
		s := mcp.NewServer(&mcp.Implementation{Name: "test-remote", Version: "0"}, nil)
		type in struct {
			Text string `json:"text"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "remote_echo", Description: "Echoes text, remotely."},
			func(_ context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "remote: " + in.Text}}}, nil, nil
			})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// remoteServer returns the --mcp value that starts the test MCP server.
func remoteServer(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("env %s=1 '%s'", mcpServerEnv, exe)
}

func TestMCPFlagsAddTools(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"list", "--mcp", remoteServer(t)}, nil, &out, &errOut)
	if code != exitOK || !strings.Contains(out.String(), "remote_echo") || !strings.Contains(out.String(), "Echoes text, remotely.") {
		t.Errorf("list --mcp: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}

	out.Reset()
	errOut.Reset()
	code = run(t.Context(), []string{"call", "--mcp", remoteServer(t), "remote_echo", `{"text":"hi"}`}, nil, &out, &errOut)
	if code != exitOK || !strings.Contains(out.String(), `"output": "remote: hi"`) {
		t.Errorf("call --mcp: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}

	out.Reset()
	errOut.Reset()
	code = run(t.Context(), []string{"call", "--mcp", "/nonexistent/mcp-server", "remote_echo"}, nil, &out, &errOut)
	if code != exitToolError || !strings.Contains(errOut.String(), "/nonexistent/mcp-server") {
		t.Errorf("call --mcp with a missing server: exit %d, want %d\nstderr: %s", code, exitToolError, errOut.String())
	}
}

// TestServeStdio speaks raw JSON-RPC to clawtool serve over stdio, with
// a second server's tools added by --mcp.
func TestServeStdio(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"serve", "--mcp", remoteServer(t)}, inR, outW, io.Discard)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	roundTrip := func(req string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, req+"\n"); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(req, `"id"`) && lines.Scan() {
			var resp map[string]any
			if err := json.Unmarshal(lines.Bytes(), &resp); err != nil {
				t.Fatalf("response %q: %v", lines.Text(), err)
			}
			return resp
		}
		return nil
	}
	roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	roundTrip(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	list := roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var names []string
	for _, tl := range list["result"].(map[string]any)["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if !strings.Contains(strings.Join(names, " "), "remote_echo") {
		t.Errorf("tools/list: %v, want remote_echo among them", names)
	}
	call := roundTrip(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"remote_echo","arguments":{"text":"x"}}}`)
	want := map[string]any{"content": []any{map[string]any{"type": "text", "text": "remote: x"}}}
	if diff := cmp.Diff(want, call["result"]); diff != "" {
		t.Errorf("tools/call remote_echo (-want +got):\n%s", diff)
	}
	bad := roundTrip(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"remote_echo","arguments":{"text":7}}}`)
	if r, _ := bad["result"].(map[string]any); r == nil || r["isError"] != true {
		t.Errorf("tools/call with a wrong type: %v, want an isError result", bad)
	}
	unknown := roundTrip(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":{}}}`)
	if e, _ := unknown["error"].(map[string]any); e == nil || e["code"] != float64(-32602) {
		t.Errorf("tools/call nope: %v, want error -32602", unknown)
	}
	inW.Close()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("serve exited %d after stdin closed", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after stdin closed")
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"npx -y server", []string{"npx", "-y", "server"}},
		{"  node  'a b'  \"c d\" ", []string{"node", "a b", "c d"}},
		{`cmd "x\"y" a\ b ''`, []string{"cmd", `x"y`, "a b", ""}},
		{"", nil},
	}
	for _, tt := range tests {
		got, err := splitCommand(tt.in)
		if err != nil {
			t.Errorf("splitCommand(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("splitCommand(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
	for _, bad := range []string{"'open", `"open`} {
		if _, err := splitCommand(bad); err == nil {
			t.Errorf("splitCommand(%q): no error", bad)
		}
	}
}

func TestLoopbackDefault(t *testing.T) {
	for in, want := range map[string]string{
		"8080":           "127.0.0.1:8080",
		":8080":          "127.0.0.1:8080",
		"127.0.0.1:0":    "127.0.0.1:0",
		"[::1]:9":        "[::1]:9",
		"localhost:1234": "localhost:1234",
	} {
		if got := loopbackDefault(in); got != want {
			t.Errorf("loopbackDefault(%q) = %q, want %q", in, got, want)
		}
	}
}
