package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startNATSServer runs clawtool nats-server on a loopback port, with
// JetStream keeping its files under jsDir (none when jsDir is ""), and
// returns the process and its client URL. It ends with the test.
func startNATSServer(t *testing.T, jsDir string) (*proc, string) {
	t.Helper()
	args := []string{"nats-server", "--addr", "127.0.0.1:0"}
	if jsDir != "" {
		args = append(args, "--jetstream", jsDir)
	}
	p, line := startCLI(t, "NATS server at", nil, args...)
	return p, line[strings.Index(line, "nats://"):]
}

// writeAskPolicy writes dir/name.cedar, a policy under which every call
// of toolName asks a person, for reason, and a lead may approve it, and
// returns the file's path.
func writeAskPolicy(t *testing.T, dir, name, toolName, reason string) string {
	t.Helper()
	pol := filepath.Join(dir, name+".cedar")
	src := fmt.Sprintf(`
@id(%[1]q) @reason(%[2]q) @effect("ask")
permit (principal, action == Action::"call", resource == Tool::%[3]q);
@id("leads-approve")
permit (principal in Role::"lead", action == Action::"approve", resource == Tool::%[3]q);
`, name+"-ask", reason, toolName)
	if err := os.WriteFile(pol, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return pol
}

// runCLI runs clawtool with args in this process, for wait at most, and
// returns its exit code, standard output and standard error.
func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	code := run(ctx, args, nil, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestProcessApprovalOverNATS: two worker processes decide calls by one
// policy and keep their approval requests in the NATS bucket. A call
// through them asks; the asker cannot approve it; clawtool approvals
// --nats, on another connection, lists it and a lead approves it; the
// call made again runs exactly once (edit_file adds one "x" to a file
// each time it runs), and made a third time asks again.
func TestProcessApprovalOverNATS(t *testing.T) {
	tmp := t.TempDir()
	_, url := startNATSServer(t, filepath.Join(tmp, "js"))
	pol := writeAskPolicy(t, tmp, "edits", "edit_file", "editing needs a person")
	ws := filepath.Join(tmp, "ws")
	os.Mkdir(ws, 0o700)
	counter := filepath.Join(ws, "count")
	os.WriteFile(counter, []byte("|"), 0o600)
	// The state directories differ from the test's: nothing is shared on
	// this machine but the NATS server.
	key := writePrincipalKey(t)
	for i := range 2 {
		startCLI(t, "serving", []string{"XDG_STATE_HOME=" + filepath.Join(tmp, "state", string(rune('a'+i)))},
			"worker", "--nats", url, "--policy", pol, "--principal-key", key, "--workspace", ws, "--name", "edits")
	}
	t.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state", "cli"))
	edit := []string{"call", "--nats", url, "--as", "bob", "--principal-key", key, "edit_file", `{"path":"count","old":"|","new":"x|"}`}
	askedFor := func(out string) string {
		t.Helper()
		var res struct {
			Kind     string
			Error    string
			Metadata struct {
				ApprovalRequest struct{ ID string } `json:"approval_request"`
			}
		}
		json.Unmarshal([]byte(out), &res)
		id := res.Metadata.ApprovalRequest.ID
		if res.Kind != "denied" || id == "" || !strings.Contains(res.Error, id) {
			t.Fatalf("the call did not ask: %s", out)
		}
		return id
	}
	var id string
	until(t, "both workers to serve edit_file", func() bool {
		code, out, _ := runCLI(edit...)
		if code == exitOK || !strings.Contains(out, "approval_request") {
			return false
		}
		id = askedFor(out)
		return true
	})
	if code, out, errOut := runCLI("approvals", "list", "--nats", url); code != exitOK || !strings.Contains(out, id) || !strings.Contains(out, "bob calls edit_file") || !strings.Contains(out, "editing needs a person") {
		t.Fatalf("approvals list --nats: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI("approvals", "approve", id, "--nats", url, "--policy", pol, "--as", "bob:lead"); code != exitToolError || !strings.Contains(errOut, "not permitted") {
		t.Errorf("bob approving his own call: exit %d: %s", code, errOut)
	}
	// The workers verify with --principal-key, so they use only answers
	// sealed with it: the lead's answer is sealed with the same key.
	if code, out, errOut := runCLI("approvals", "approve", id, "--nats", url, "--policy", pol, "--as", "ann:lead", "--note", "once", "--principal-key", key); code != exitOK || !strings.Contains(out, "approved "+id) {
		t.Fatalf("approvals approve --nats: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(edit...); code != exitOK {
		t.Fatalf("the approved call: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ := runCLI(edit...)
	if again := askedFor(out); code == exitOK || again == id {
		t.Errorf("the call made a third time: exit %d, request %s (the used one was %s)", code, again, id)
	}
	if got, _ := os.ReadFile(counter); string(got) != "x|" {
		t.Errorf("the file is %q: the tool ran %d times, want once", got, strings.Count(string(got), "x"))
	}
}

// TestServeApprovalWithoutElicitation: an MCP client that cannot be
// asked (it declares no elicitation) calls, over Streamable HTTP, a tool
// that needs an approval, with serve --approve-by-client. The isError
// result names the request and the command that answers it, which a
// person runs; the same call made again on the session runs.
func TestServeApprovalWithoutElicitation(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	pol := filepath.Join("testdata", "policy", "approvals.cedar")
	addr := startHTTP(t, "--policy", pol, "--as", "otto:operator", "--approve-by-client")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	del := &mcp.CallToolParams{Name: "kv", Arguments: map[string]any{"op": "delete", "key": "a"}}
	res, err := cs.CallTool(t.Context(), del)
	if err != nil || !res.IsError {
		t.Fatalf("delete: %v %+v, want an isError result", err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	m := regexp.MustCompile(`approval request ([0-9a-f]{24}) was made`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the result names no request: %q", text)
	}
	id := m[1]
	want := "clawtool approvals approve " + id + " --policy " + pol + " --as USER[:ROLE,...]"
	if !strings.Contains(text, want) || !strings.Contains(text, "Approvals tab") {
		t.Errorf("the result does not say how to answer: %q\nwant %q in it", text, want)
	}
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"approvals", "approve", id, "--policy", pol, "--as", "cid:admin"}, nil, &out, &errOut); code != exitOK {
		t.Fatalf("the command the result names: exit %d: %s", code, errOut.String())
	}
	if res, err := cs.CallTool(t.Context(), del); err != nil || res.IsError {
		t.Fatalf("the approved delete: %v %+v", err, res)
	}
	if res, err := cs.CallTool(t.Context(), del); err != nil || !res.IsError {
		t.Errorf("the delete made a third time: %v %+v, want it to ask again", err, res)
	}
}

// TestApproveCommandHidesCredentials: the command a refusal shows names
// the NATS server without its user and password.
func TestApproveCommandHidesCredentials(t *testing.T) {
	pf := &policyFlags{file: "p.cedar", approvalsNATS: "nats://ann:s3cret@127.0.0.1:4222,nats://127.0.0.1:4223"}
	got := pf.approveCommand("000000000000000000000001")
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "--nats nats://127.0.0.1:4222,nats://127.0.0.1:4223") {
		t.Errorf("approveCommand = %q", got)
	}
}

// TestApprovalsNATSUnreachable: clawtool approvals --nats with no server
// there, or a server without JetStream, fails saying so; a worker's call
// that needs an approval from such a server is refused with the reason
// and does not run (fail closed).
func TestApprovalsNATSUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "nats://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"approvals", "list", "--nats", nobody}, nil, &out, &errOut); code != exitToolError || !strings.Contains(errOut.String(), "approvals: NATS "+nobody) {
		t.Errorf("approvals list --nats (nothing there): exit %d: %s", code, errOut.String())
	}

	_, url := startNATSServer(t, "") // no JetStream
	out.Reset()
	errOut.Reset()
	if code := run(t.Context(), []string{"approvals", "list", "--nats", url}, nil, &out, &errOut); code != exitToolError || !strings.Contains(errOut.String(), "needs JetStream") {
		t.Errorf("approvals list --nats (no JetStream): exit %d: %s", code, errOut.String())
	}
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "ws")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "count"), []byte("|"), 0o600)
	out.Reset()
	errOut.Reset()
	code := run(t.Context(), []string{"call", "--nats", url, "--policy", filepath.Join("testdata", "policy", "approvals.cedar"), "--as", "otto:operator",
		"--workspace", ws, "kv", `{"op":"delete","key":"a"}`}, nil, &out, &errOut)
	if code != exitToolError || !strings.Contains(out.String(), "approval store failed") || !strings.Contains(out.String(), "needs JetStream") || strings.Contains(out.String(), "approval_request") {
		t.Errorf("a call that asks, with the store on a server without JetStream: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// TestCallApproveWithoutTerminal: --approve with no terminal to ask on
// leaves the call waiting for an answer, and says which command gives
// it, instead of refusing it for want of a terminal.
func TestCallApproveWithoutTerminal(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	old := openTerminal
	defer func() { openTerminal = old }()
	openTerminal = func() (io.ReadWriteCloser, error) { return nil, errors.New("open /dev/tty: no such device or address") }
	pol := filepath.Join("testdata", "policy", "approvals.cedar")
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"call", "--policy", pol, "--as", "otto:operator", "--approve", "kv", `{"op":"delete","key":"a"}`}, nil, &out, &errOut)
	if code != exitToolError || !strings.Contains(out.String(), "approval_request") || !strings.Contains(out.String(), "clawtool approvals approve ") ||
		!strings.Contains(errOut.String(), "clawtool approvals approve ") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
}

// TestServeStdioApprovalNamesCommand: the same over stdio, with clawtool
// serve as a process of its own: the isError result names the request
// and the command, a person runs the command from another process, and
// the call made again on the session runs.
func TestServeStdioApprovalNamesCommand(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join("testdata", "policy", "approvals.cedar")
	cmd := exec.Command(exe, "serve", "--policy", pol, "--as", "otto:operator")
	cmd.Env = append(os.Environ(), asCLIEnv+"=1")
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	del := &mcp.CallToolParams{Name: "kv", Arguments: map[string]any{"op": "delete", "key": "a"}}
	res, err := cs.CallTool(ctx, del)
	if err != nil || !res.IsError {
		t.Fatalf("delete: %v %+v", err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	m := regexp.MustCompile(`answers with: (clawtool approvals approve ([0-9a-f]{24}) --policy \S+) --as USER`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the result names no command: %q", text)
	}
	var out, errOut bytes.Buffer
	args := append(strings.Fields(m[1])[1:], "--as", "cid:admin")
	if code := run(ctx, args, nil, &out, &errOut); code != exitOK {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	if res, err := cs.CallTool(ctx, del); err != nil || res.IsError {
		t.Fatalf("the approved delete: %v %+v", err, res)
	}
}

// TestProcessApproversRace: four clawtool approvals processes, two
// approving and two denying, race on one request in the NATS bucket:
// one answer is kept, the others are told it was already answered.
func TestProcessApproversRace(t *testing.T) {
	tmp := t.TempDir()
	_, url := startNATSServer(t, filepath.Join(tmp, "js"))
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	store, err := natstool.OpenApprovals(ctx, nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	const id = "00000000000000000000000a"
	if _, err := store.Put(ctx, policy.ApprovalRecord{ID: id, Principal: "otto", Tool: "kv", Digest: "race", Preview: `{"op":"delete"}`,
		Created: now, Expires: now.Add(time.Hour), TTL: time.Hour}, now); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	pol := filepath.Join("testdata", "policy", "approvals.cedar")
	type outcome struct {
		code int
		out  string
	}
	results := make([]outcome, 4)
	var wg sync.WaitGroup
	for i := range results {
		verb := []string{"approve", "deny"}[i%2]
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, exe, "approvals", verb, id, "--nats", url, "--policy", pol, "--as", fmt.Sprintf("admin%d:admin", i))
			cmd.Env = append(os.Environ(), asCLIEnv+"=1")
			out, _ := cmd.CombinedOutput()
			results[i] = outcome{cmd.ProcessState.ExitCode(), string(out)}
		})
	}
	wg.Wait()
	won := 0
	for i, r := range results {
		switch {
		case r.code == exitOK:
			won++
		case r.code != exitToolError || !strings.Contains(r.out, "already answered"):
			t.Errorf("approver %d: exit %d: %s", i, r.code, r.out)
		}
	}
	rec, err := store.Get(ctx, id, time.Now())
	if won != 1 || err != nil || rec.State == policy.ApprovalPending {
		t.Errorf("%d answers kept, want 1; the record: %+v, %v", won, rec, err)
	}
}
