package mcptool_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
)

// stdioFixtureEnv makes the test binary a misbehaving MCP server over
// stdio instead of running tests (see stdioFixture).
const stdioFixtureEnv = "MCPTOOL_STDIO_FIXTURE"

// peerFixture, set by the peer tests, plays a part the peers need.
var peerFixture func()

func TestMain(m *testing.M) {
	if mode := os.Getenv(stdioFixtureEnv); mode != "" {
		os.Exit(stdioFixture(mode))
	}
	if peerFixture != nil {
		peerFixture()
	}
	os.Exit(m.Run())
}

// fixtureCmd returns the command that runs the test binary as the stdio
// fixture mode.
func fixtureCmd(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), stdioFixtureEnv+"="+mode)
	return cmd
}

// stdioFixture serves MCP over stdio the way some real servers do:
//   - banner: prints a banner line and a JSON line that is not a message
//     on standard output before serving echo;
//   - crash: serves echo and crash, which writes to standard error and
//     exits with status 3;
//   - roots: a hand-written server whose tool "roots" asks the client for
//     roots/list without params (as mcp-go servers do) and returns the
//     answer.
func stdioFixture(mode string) int {
	reg := tool.NewRegistry()
	reg.Register(echo{})
	switch mode {
	case "banner":
		fmt.Println("Starting the time server v1.0.6 ...")
		fmt.Println(`{"status":"ready"}`)
	case "crash":
		crash, _ := tool.New("crash", "Crashes the server.", func(context.Context, struct{}) (string, error) {
			fmt.Fprintln(os.Stderr, "loading the cheese")
			fmt.Fprintln(os.Stderr, "panic: out of cheese")
			os.Exit(3)
			return "", nil
		})
		reg.Register(crash)
	case "roots":
		return rootsServer()
	}
	if err := mcptool.NewServer(reg).ServeStdio(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// rootsServer is a JSON-RPC loop that sends roots/list without params.
func rootsServer() int {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	var callID json.RawMessage
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil {
			return 1
		}
		reply := func(result any) {
			out.Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
		}
		switch {
		case msg.Method == "initialize":
			reply(map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "roots", "version": "0"}})
		case msg.Method == "tools/list":
			reply(map[string]any{"tools": []any{map[string]any{"name": "roots", "inputSchema": map[string]any{"type": "object"}}}})
		case msg.Method == "tools/call":
			callID = msg.ID
			out.Encode(map[string]any{"jsonrpc": "2.0", "id": "roots-1", "method": "roots/list"})
		case string(msg.ID) == `"roots-1"`:
			answer := string(msg.Result)
			if msg.Error != nil {
				answer = "error: " + string(msg.Error)
			}
			out.Encode(map[string]any{"jsonrpc": "2.0", "id": callID, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": answer}}}})
		case msg.ID != nil && msg.Method != "":
			reply(map[string]any{})
		}
	}
	return 0
}
