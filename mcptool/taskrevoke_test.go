package mcptool_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/policy"
)

// adminAskPolicy lets admins remove files once a person approves.
const adminAskPolicy = `
@id("ask-remove")
@effect("ask")
permit (principal in Role::"admin", action == Action::"call", resource == Tool::"remove");
`

// TestTaskResumeDecidedForItsRequest: a task's call that waits for input
// (here an approval) runs again when tasks/update answers, and that run
// is decided for the principal of the tasks/update request, with its own
// roles, not for the token that made the task. Alice, an admin, starts a
// removal that asks; her admin role is revoked (her new token has no
// roles); her answer must not run the call with the role she lost. The
// control answers with the role still held, and the call runs.
func TestTaskResumeDecidedForItsRequest(t *testing.T) {
	a, err := policy.New("ask.cedar", []byte(adminAskPolicy), policy.WithApprover(mcptool.ElicitApprover{}))
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	r := tool.NewRegistry(tool.WithAuthorizer(a))
	r.Register(removeTool(&ran, tool.WithTask(tool.TaskOptional)))
	srv := mcptool.NewServer(r)
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p := policy.Principal{ID: req.Header.Get("X-Test-User")}
		if roles := req.Header.Get("X-Test-Roles"); roles != "" {
			p.Roles = strings.Split(roles, ",")
		}
		srv.ServeHTTP(w, req.WithContext(policy.WithPrincipal(req.Context(), p)))
	}))
	t.Cleanup(hs.Close)

	call := func(roles, method string, params map[string]any) rpc {
		t.Helper()
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": withTasks,
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpcID.Add(1), "method": method, "params": params})
		req, _ := http.NewRequest(http.MethodPost, hs.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if n, ok := params["name"].(string); ok {
			req.Header.Set("Mcp-Name", n)
		} else if id, ok := params["taskId"].(string); ok {
			req.Header.Set("Mcp-Name", id)
		}
		req.Header.Set("X-Test-User", "alice")
		req.Header.Set("X-Test-Roles", roles)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out rpc
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return out
	}
	await := func(roles, id string, want mcptool.TaskStatus) mcptool.DetailedTask {
		t.Helper()
		for range 1000 {
			res := call(roles, "tasks/get", map[string]any{"taskId": id})
			var d mcptool.DetailedTask
			if res.Error != nil || json.Unmarshal(res.Result, &d) != nil {
				t.Fatalf("tasks/get: %s %+v", res.Result, res.Error)
			}
			if d.Status == want || d.Status.Terminal() {
				return d
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("task %s never reached %s", id, want)
		return mcptool.DetailedTask{}
	}

	for _, tc := range []struct {
		name        string
		answerRoles string // alice's roles when she answers
		ran         int32
		isError     bool
	}{
		{"control: the role still held", "admin", 1, false},
		{"the role revoked before the answer", "", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call("admin", "tools/call", map[string]any{"name": "remove", "arguments": map[string]any{"path": tc.name}})
			var ct mcptool.CreateTaskResult
			if res.Error != nil || json.Unmarshal(res.Result, &ct) != nil || ct.TaskID == "" {
				t.Fatalf("tools/call: %s %+v", res.Result, res.Error)
			}
			if d := await("admin", ct.TaskID, mcptool.StatusInputRequired); d.Status != mcptool.StatusInputRequired {
				t.Fatalf("waiting for approval: %+v", d)
			}
			ack := call(tc.answerRoles, "tasks/update", map[string]any{"taskId": ct.TaskID, "inputResponses": map[string]any{
				"clawtool_approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}})
			if ack.Error != nil {
				t.Fatalf("tasks/update: %+v", ack.Error)
			}
			d := await(tc.answerRoles, ct.TaskID, mcptool.StatusCompleted)
			var out struct {
				IsError bool `json:"isError"`
			}
			json.Unmarshal(d.Result, &out)
			if d.Status != mcptool.StatusCompleted || out.IsError != tc.isError || ran.Load() != tc.ran {
				t.Errorf("%s %s: ran %d in all, want %d", d.Status, d.Result, ran.Load(), tc.ran)
			}
		})
	}
}
