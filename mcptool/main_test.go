package mcptool_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
//   - tasks: serves echo and echo_task, whose calls run only as tasks;
//   - stubborn: serves echo, ignores SIGTERM, and stays after its input
//     ends;
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
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		mcptool.NewServer(reg).ServeStdio(context.Background())
		time.Sleep(time.Hour)
		return 0
	case "tasks":
		reg.Register(tool.Must(tool.New("echo_task", "Echoes, as a task.", func(ctx context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			tool.ReportProgress(ctx, 1, 1, "echoing")
			return in.Text, nil
		}, tool.WithTask(tool.TaskRequired))))
		reg.Register(tool.Must(tool.New("ask_task", "Asks for a name, as a task.", func(ctx context.Context, _ struct {
			Text string `json:"text,omitempty"`
		}) (string, error) {
			if res, ok := mcptool.InputResponses(ctx)["name"].(*mcp.ElicitResult); ok {
				return fmt.Sprint("hello ", res.Content["name"]), nil
			}
			return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}, "")
		}, tool.WithTask(tool.TaskRequired))))
	}
	if err := mcptool.NewServer(reg).ServeStdio(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// rootsServer is a JSON-RPC loop that speaks 2026-07-28 (server/discover)
// and answers the first tools/call of "roots" with an input request for
// roots/list without params, as mcp-go servers send it; the retry,
// carrying the client's answer, gets that answer back as text.
func rootsServer() int {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				InputResponses json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil {
			return 1
		}
		reply := func(result any) {
			out.Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
		}
		info := map[string]any{"name": "roots", "version": "0"}
		switch {
		case msg.Method == "server/discover":
			reply(map[string]any{"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": info})
		case msg.Method == "tools/list":
			reply(map[string]any{"tools": []any{map[string]any{"name": "roots", "inputSchema": map[string]any{"type": "object"}}}})
		case msg.Method == "tools/call" && msg.Params.InputResponses == nil:
			reply(map[string]any{"resultType": "input_required", "inputRequests": map[string]any{"r1": map[string]any{"method": "roots/list"}}})
		case msg.Method == "tools/call":
			reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": string(msg.Params.InputResponses)}}})
		case msg.ID != nil && msg.Method != "":
			reply(map[string]any{})
		}
	}
	return 0
}
