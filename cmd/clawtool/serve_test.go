package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServerEnv makes the test binary an MCP server with one tool,
// remote_echo, over stdio, for the --mcp tests.
const mcpServerEnv = "CLAWTOOL_TEST_MCP_SERVER"

// asCLIEnv makes the test binary clawtool itself, for --mcp "clawtool
// serve"; gateEnv makes the test MCP server wait for the file it names
// before it serves, a server slow to start.
const (
	asCLIEnv = "CLAWTOOL_TEST_AS_CLI"
	gateEnv  = "CLAWTOOL_TEST_GATE"
)

// fetchEnv makes the test MCP server GET each URL of its value
// (comma-separated) through the proxy of its HTTP_PROXY before it
// serves, ignoring what happens: a confined server that tries the
// network at start.
const fetchEnv = "CLAWTOOL_TEST_FETCH"

// manyEnv makes the test binary an MCP server of N tools, t0000…, 100 a
// tools/list page.
const manyEnv = "CLAWTOOL_TEST_MANY"

// crashEnv makes the test binary an MCP server that writes N lines to
// standard error, then a last one with a terminal escape and the value of
// $CRASH_TOKEN, and exits with status 3 before it answers.
const crashEnv = "CLAWTOOL_TEST_CRASH"

// hintsEnv makes the test MCP server state remote_echo's annotations
// (fixtureHints), among them hints that are false, which MCP reads as
// true when they are absent.
const hintsEnv = "CLAWTOOL_TEST_HINTS"

// fixtureHints are the annotations remote_echo states with hintsEnv.
var fixtureHints = &mcp.ToolAnnotations{Title: "Echo", IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)}

func TestMain(m *testing.M) {
	if os.Getenv(asCLIEnv) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if gate := os.Getenv(gateEnv); gate != "" {
		// Wait for the gate, but not past a test that failed before
		// opening it: give up when the parent is gone or after a bound.
		parent := os.Getppid()
		for giveUp := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(gate); err == nil {
				break
			}
			if os.Getppid() != parent || time.Now().After(giveUp) {
				os.Exit(3)
			}
		}
	}
	if urls := os.Getenv(fetchEnv); urls != "" {
		c := &http.Client{Timeout: 20 * time.Second}
		for u := range strings.SplitSeq(urls, ",") {
			if resp, err := c.Get(u); err == nil {
				resp.Body.Close()
			}
		}
	}
	if n, err := strconv.Atoi(os.Getenv(crashEnv)); err == nil {
		// A server that fails at start, saying why on standard error at
		// length, a secret from its environment among the lines.
		for i := 1; i <= n; i++ {
			fmt.Fprintf(os.Stderr, "crash line %d of %d\n", i, n)
		}
		fmt.Fprintf(os.Stderr, "\x1b[31mfatal:\x1b[0m cannot log in with token %s\n", os.Getenv("CRASH_TOKEN"))
		os.Exit(3)
	}
	if mode := os.Getenv(hostileTextEnv); mode != "" {
		serveHostileText(mode)
	}
	if n, err := strconv.Atoi(os.Getenv(manyEnv)); err == nil {
		s := mcp.NewServer(&mcp.Implementation{Name: "test-many", Version: "0"}, &mcp.ServerOptions{PageSize: 100})
		for i := range n {
			s.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%04d", i), Description: "One of many.", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
				})
		}
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(mcpServerEnv) == "1" {
		s := mcp.NewServer(&mcp.Implementation{Name: "test-remote", Version: "0"}, nil)
		type in struct {
			Text string `json:"text"`
		}
		echo := &mcp.Tool{Name: "remote_echo", Description: "Echoes text, remotely."}
		if os.Getenv(hintsEnv) == "1" {
			echo.Annotations = fixtureHints
		}
		mcp.AddTool(s, echo,
			func(_ context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "remote: " + in.Text}}}, nil, nil
			})
		type gated struct {
			Gate string `json:"gate"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "remote_wait", Description: "Waits until the file gate exists."},
			func(ctx context.Context, _ *mcp.CallToolRequest, in gated) (*mcp.CallToolResult, any, error) {
				for {
					if _, err := os.Stat(in.Gate); err == nil {
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "opened"}}}, nil, nil
					}
					select {
					case <-ctx.Done():
						return nil, nil, ctx.Err()
					case <-time.After(10 * time.Millisecond):
					}
				}
			})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Approval requests go to the state directory: the tests' own, never
	// the user's. Processes the tests start inherit it.
	state, err := os.MkdirTemp("", "clawtool-test-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
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

// wait bounds every wait for serve; hitting it is a failure, not a
// timing assertion.
const wait = 20 * time.Second

// clawtoolCommand returns the --mcp value that runs this test binary as
// clawtool with args.
func clawtoolCommand(t *testing.T, args string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("env %s=1 '%s' %s", asCLIEnv, exe, args)
}

// TestServeImportsInBackground starts serve with a server that does not
// start until the test lets it: serve answers at once, and the server's
// tools come later with list_changed.
func TestServeImportsInBackground(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	s := startServe(t, io.Discard, "--mcp", fmt.Sprintf("env %s=%s %s", gateEnv, gate, remoteServer(t)))
	s.roundTrip(initReq) // before the fix, no answer until the import was done
	s.send(initialized)
	// Methods other than tools/list and tools/call are answered while the
	// import is pending.
	if pong := s.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); pong["result"] == nil {
		t.Fatalf("ping while importing: %v", pong)
	}
	// tools/list waits for the import, so a client that lists once sees
	// every tool: the answer can only come after the gate opens.
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if names := toolNames(s.next()); !slices.Contains(names, "remote_echo") {
		t.Fatalf("tools/list answered before the import finished: %v", names)
	}
	if code := s.close(); code != exitOK {
		t.Errorf("serve exited %d", code)
	}
}

// TestPrefixAndNoBuiltins aggregates clawtool serve into clawtool list:
// names the built-ins already hold are reported on one line, and
// --no-builtins or --prefix leave nothing to report.
func TestPrefixAndNoBuiltins(t *testing.T) {
	inner := clawtoolCommand(t, "serve")
	for _, tt := range []struct {
		name       string
		args       []string
		wantTools  []string
		wantStderr string // a substring; "" means stderr must be empty
		wantCode   int
	}{
		{"plain", []string{"--mcp", inner}, []string{"calc", "convert_units", "current_time", "kv", "wait"},
			`5 of its tools left out, their names are taken: calc, convert_units, current_time, kv, wait (use --prefix or --no-builtins)`, exitOK},
		{"no builtins", []string{"--no-builtins", "--mcp", inner}, []string{"calc", "convert_units", "current_time", "kv", "wait"}, "", exitOK},
		{"prefix", []string{"--prefix", "inner_", "--mcp", inner},
			[]string{"calc", "convert_units", "current_time", "inner_calc", "inner_convert_units", "inner_current_time", "inner_kv", "inner_wait", "kv", "wait"}, "", exitOK},
		{"two prefixes", []string{"--no-builtins", "--prefix", "a_", "--mcp", inner, "--prefix", "b_", "--mcp", inner},
			[]string{"a_calc", "a_convert_units", "a_current_time", "a_kv", "a_wait", "b_calc", "b_convert_units", "b_current_time", "b_kv", "b_wait"}, "", exitOK},
		{"prefix after", []string{"--mcp", inner, "--prefix", "x_"}, nil, `--prefix "x_" must come before`, exitToolError},
		{"bad prefix", []string{"--prefix", "a.b", "--mcp", inner}, nil, `a prefix is made of letters`, exitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(t.Context(), append([]string{"list"}, tt.args...), nil, &out, &errOut)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.wantCode, errOut.String())
			}
			if tt.wantStderr == "" && errOut.Len() > 0 || !strings.Contains(errOut.String(), tt.wantStderr) {
				t.Errorf("stderr:\n%s\nwant it to contain %q", errOut.String(), tt.wantStderr)
			}
			if tt.wantCode != exitUsage && strings.Count(errOut.String(), "\n") > 1 {
				t.Errorf("stderr has more than one line:\n%s", errOut.String())
			}
			var names []string
			for i, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if i > 0 {
					names = append(names, strings.Fields(line)[0])
				}
			}
			if diff := cmp.Diff(tt.wantTools, names); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}
}

// stdioSession is a raw JSON-RPC client of clawtool serve over pipes.
type stdioSession struct {
	t       *testing.T
	in      *io.PipeWriter
	lines   chan map[string]any
	done    chan int
	changed int // notifications/tools/list_changed seen
	awaited int // of those, the ones a waitChanged has returned for
}

// startServe runs clawtool serve with args over pipes.
func startServe(t *testing.T, stderr io.Writer, args ...string) *stdioSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioSession{t: t, in: inW, lines: make(chan map[string]any, 16), done: make(chan int, 1)}
	go func() {
		s.done <- run(t.Context(), append([]string{"serve"}, args...), inR, outW, stderr)
		outW.Close()
	}()
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"not json": sc.Text()}
			}
			s.lines <- m
		}
	}()
	return s
}

// send writes one line.
func (s *stdioSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// next returns the next message that is not a notification, counting
// the list_changed notifications it passes.
func (s *stdioSession) next() map[string]any {
	s.t.Helper()
	for {
		select {
		case m, ok := <-s.lines:
			if !ok {
				s.t.Fatal("serve closed its output")
			}
			if m["method"] == "notifications/tools/list_changed" {
				s.changed++
				continue
			}
			if _, isNote := m["method"]; isNote && m["id"] == nil {
				continue
			}
			return m
		case <-time.After(wait):
			s.t.Fatal("no answer from serve")
		}
	}
}

// roundTrip sends a request and returns its response.
func (s *stdioSession) roundTrip(req string) map[string]any {
	s.t.Helper()
	s.send(req)
	return s.next()
}

// waitChanged waits for a notifications/tools/list_changed that no
// waitChanged has returned for yet: one that came while a request waited
// for its answer (next counts it) returns at once. The callers list the
// tools, then wait for a change: the change may come before the answer to
// that list, which then was the list before it.
func (s *stdioSession) waitChanged() {
	s.t.Helper()
	defer func() { s.awaited = s.changed }()
	for s.changed == s.awaited {
		select {
		case m, ok := <-s.lines:
			if !ok {
				s.t.Fatal("serve closed its output")
			}
			if m["method"] == "notifications/tools/list_changed" {
				s.changed++
			}
		case <-time.After(wait):
			s.t.Fatal("no notifications/tools/list_changed")
		}
	}
}

// toolNames lists the tools of a tools/list response.
func toolNames(list map[string]any) []string {
	var names []string
	r, _ := list["result"].(map[string]any)
	tools, _ := r["tools"].([]any)
	for _, tl := range tools {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	return names
}

// close closes serve's input and returns its exit code.
func (s *stdioSession) close() int {
	s.t.Helper()
	s.in.Close()
	select {
	case code := <-s.done:
		return code
	case <-time.After(wait):
		s.t.Fatal("serve did not return after stdin closed")
	}
	return -1
}

const (
	initReq     = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// TestServeStdio speaks raw JSON-RPC to clawtool serve over stdio, with
// a second server's tools added by --mcp.
func TestServeStdio(t *testing.T) {
	s := startServe(t, io.Discard, "--mcp", remoteServer(t))
	s.roundTrip(initReq)
	s.send(initialized)
	// The import runs in the background; its tools come with list_changed.
	for !slices.Contains(toolNames(s.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)), "remote_echo") {
		s.waitChanged()
	}
	call := s.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"remote_echo","arguments":{"text":"x"}}}`)
	want := map[string]any{"content": []any{map[string]any{"type": "text", "text": "remote: x"}}}
	if diff := cmp.Diff(want, call["result"]); diff != "" {
		t.Errorf("tools/call remote_echo (-want +got):\n%s", diff)
	}
	bad := s.roundTrip(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"remote_echo","arguments":{"text":7}}}`)
	if r, _ := bad["result"].(map[string]any); r == nil || r["isError"] != true {
		t.Errorf("tools/call with a wrong type: %v, want an isError result", bad)
	}
	unknown := s.roundTrip(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":{}}}`)
	if e, _ := unknown["error"].(map[string]any); e == nil || e["code"] != float64(-32602) {
		t.Errorf("tools/call nope: %v, want error -32602", unknown)
	}
	if code := s.close(); code != exitOK {
		t.Errorf("serve exited %d after stdin closed", code)
	}
}

// TestServeFromFile gives serve every request at once with its input
// closed after the last (clawtool serve < requests.jsonl), malformed
// lines among them: every request gets its answer, and serve exits 0.
func TestServeFromFile(t *testing.T) {
	in := strings.Join([]string{
		initReq,
		initialized,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`not JSON at all`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"calc","arguments":{"expr":"6*7"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"calc","arguments":{"expr":"1+"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"current_time","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"calc","arguments":{"expr":"2+2"}}}`,
	}, "\n") + "\n"
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"serve"}, strings.NewReader(in), &out, &errOut)
	if code != exitOK {
		t.Errorf("serve < requests: exit %d, stderr: %s", code, errOut.String())
	}
	var ids []string
	for line := range strings.Lines(out.String()) {
		var m struct {
			ID    any `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("serve wrote %q: %v", line, err)
		}
		id := fmt.Sprint(m.ID)
		if m.Error != nil {
			id += fmt.Sprint(" error ", m.Error.Code)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	want := []string{"1", "2", "3", "4", "5", "6", "7", "<nil> error -32700"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out.String())
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
