package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

var taskRPCID atomic.Int64

// taskRPC sends a 2026-07-28 request declaring the tasks extension and
// elicitation to serve at url.
func taskRPC(t *testing.T, url, method, name string, params map[string]any) (result json.RawMessage, code int, msg string) {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{},
			"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": taskRPCID.Add(1), "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := (&http.Client{Timeout: wait}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if out.Error != nil {
		return nil, out.Error.Code, out.Error.Message
	}
	return out.Result, 0, ""
}

// TestServeNATSTaskAskInApprovals: serve --http --nats --policy
// --approve-by-client runs a call the policy asks about as a durable
// task; the task is input_required with the approval question, and
// clawtool approvals list --nats shows the same request. A lead approves
// it there; the next tasks/get resumes the task, which completes (the
// call ran), the request is no longer listed, and the client's own answer
// afterwards is refused as for a task not waiting.
// With --principal-key, the task's job carries a signed claim, verified
// when it runs and signed again by the request that resumes it.
// Without either --principal-key or --trust-principal-header, serve
// refuses to keep tasks decided by unsigned claims, saying why.
func TestServeNATSTaskAskInApprovals(t *testing.T) {
	t.Run("trusted header", func(t *testing.T) { testServeNATSTaskAskInApprovals(t, nil, "--trust-principal-header") })
	t.Run("signed", func(t *testing.T) {
		key := writePrincipalKey(t)
		testServeNATSTaskAskInApprovals(t, []string{"--principal-key", key}, "--principal-key", key)
	})
	// Anyone who may write the bucket answered as anyone: under
	// --principal-key serve takes only answers sealed with the key, and
	// one written without it is withdrawn when the task runs, saying so
	// (before the fix the task ran the call).
	t.Run("signed: an answer written without the key", func(t *testing.T) {
		testServeNATSTaskAskInApprovals(t, nil, "--principal-key", writePrincipalKey(t))
	})
	t.Run("neither: refused", func(t *testing.T) {
		tmp := t.TempDir()
		_, nurl := startNATSServer(t, filepath.Join(tmp, "js"))
		pol := writeAskPolicy(t, tmp, "wait", "wait", "waiting needs a person")
		t.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state"))
		code, _, errOut := runCLI("serve", "--http", "127.0.0.1:0", "--nats", nurl, "--policy", pol, "--as", "bob")
		if code != exitToolError || !strings.Contains(errOut, "give --principal-key FILE") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
}

// testServeNATSTaskAskInApprovals serves with the flags extra, and
// answers the task's approval with clawtool approvals approve given the
// flags answer: when serve has --principal-key and answer lacks it, the
// answer is not sealed, and the task must end refused.
func testServeNATSTaskAskInApprovals(t *testing.T, answer []string, extra ...string) {
	unsealed := extra[0] == "--principal-key" && len(answer) == 0
	tmp := t.TempDir()
	_, nurl := startNATSServer(t, filepath.Join(tmp, "js"))
	pol := writeAskPolicy(t, tmp, "wait", "wait", "waiting needs a person")
	_, line := startCLI(t, "serving MCP at", []string{"XDG_STATE_HOME=" + filepath.Join(tmp, "state", "serve")},
		append([]string{"serve", "--http", "127.0.0.1:0", "--nats", nurl, "--policy", pol, "--as", "bob", "--approve-by-client"}, extra...)...)
	url := line[strings.Index(line, "http://"):]
	t.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state", "cli"))

	res, code, msg := taskRPC(t, url, "tools/call", "wait", map[string]any{"name": "wait", "arguments": map[string]any{"seconds": 0}})
	var ct struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	if code != 0 || json.Unmarshal(res, &ct) != nil || ct.ResultType != "task" {
		t.Fatalf("tools/call: %s %d %s", res, code, msg)
	}
	type task struct {
		Status        string                     `json:"status"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		Result        struct {
			IsError bool `json:"isError"`
			Content []struct{ Text string }
		} `json:"result"`
	}
	get := func() task {
		res, code, msg := taskRPC(t, url, "tasks/get", ct.TaskID, map[string]any{"taskId": ct.TaskID})
		var d task
		if code != 0 && code != -32029 { // a rate-limited poll is tried again
			t.Fatalf("tasks/get: %d %s", code, msg)
		}
		json.Unmarshal(res, &d)
		return d
	}
	var d task
	until(t, "the task asks", func() bool { d = get(); return d.Status == "input_required" })
	if d.InputRequests["clawtool_approval"] == nil {
		t.Fatalf("the question: %+v", d)
	}
	code, out, errOut := runCLI("approvals", "list", "--nats", nurl)
	id := regexp.MustCompile(`[0-9a-f]{24}`).FindString(out)
	if code != exitOK || id == "" || !strings.Contains(out, "bob calls wait") || !strings.Contains(out, "waiting needs a person") {
		t.Fatalf("approvals list --nats: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(append([]string{"approvals", "approve", id, "--nats", nurl, "--policy", pol, "--as", "ann:lead"}, answer...)...); code != exitOK || !strings.Contains(out, "approved "+id) {
		t.Fatalf("approvals approve --nats: exit %d\n%s%s", code, out, errOut)
	}
	until(t, "the task completes", func() bool {
		d = get()
		return d.Status == "completed" || d.Status == "failed" || d.Status == "cancelled"
	})
	if unsealed {
		if !d.Result.IsError || len(d.Result.Content) == 0 || !strings.Contains(d.Result.Content[0].Text, "carries no seal") || strings.Contains(d.Result.Content[0].Text, "aited") {
			t.Fatalf("the task ran on an answer not sealed with the key: %+v", d)
		}
		return
	}
	if d.Status != "completed" || d.Result.IsError || len(d.Result.Content) == 0 || !strings.Contains(d.Result.Content[0].Text, "aited") {
		t.Fatalf("the task: %+v", d)
	}
	if _, code, msg := taskRPC(t, url, "tasks/update", ct.TaskID, map[string]any{"taskId": ct.TaskID,
		"inputResponses": map[string]any{"clawtool_approval": map[string]any{"action": "accept", "content": map[string]any{"approve": false}}}}); code != -32602 {
		t.Errorf("the client's later answer: %d %s, want -32602", code, msg)
	}
	if code, out, _ := runCLI("approvals", "list", "--nats", nurl); code != exitOK || strings.Contains(out, id) {
		t.Errorf("approvals list after: exit %d\n%s", code, out)
	}
}
