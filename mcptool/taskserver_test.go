package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/policy"
)

// taskClient speaks the tasks extension to a server by hand, as user.
type taskClient struct {
	t    *testing.T
	url  string
	user string
	caps map[string]any
}

// rpc is a JSON-RPC response.
type rpc struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

var rpcID atomic.Int64

// call sends method with params; name is the Mcp-Name header ("" for
// none).
func (c taskClient) call(method, name string, params map[string]any) rpc {
	c.t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": c.caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpcID.Add(1), "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	req.Header.Set("X-Test-User", c.user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out rpc
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	return out
}

func (c taskClient) get(id string) mcptool.DetailedTask {
	c.t.Helper()
	res := c.call("tasks/get", id, map[string]any{"taskId": id})
	if res.Error != nil {
		c.t.Fatalf("tasks/get: %+v", res.Error)
	}
	var d mcptool.DetailedTask
	json.Unmarshal(res.Result, &d)
	return d
}

// await polls task id until its status is want or terminal, for at most
// 10 s.
func (c taskClient) await(id string, want mcptool.TaskStatus) mcptool.DetailedTask {
	c.t.Helper()
	for range 1000 {
		d := c.get(id)
		if d.Status == want || d.Status.Terminal() {
			return d
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("task %s never reached %s", id, want)
	return mcptool.DetailedTask{}
}

// start calls a tool and returns the task it became.
func (c taskClient) start(name string, args any) string {
	c.t.Helper()
	res := c.call("tools/call", name, map[string]any{"name": name, "arguments": args})
	var ct mcptool.CreateTaskResult
	if res.Error != nil || json.Unmarshal(res.Result, &ct) != nil || ct.ResultType != "task" || ct.TaskID == "" {
		c.t.Fatalf("tools/call %s: %s %+v", name, res.Result, res.Error)
	}
	return ct.TaskID
}

// taskServer serves r over HTTP on loopback with the principal named by
// the X-Test-User header.
func taskServer(t *testing.T, r *tool.Registry, opts ...mcptool.ServerOption) string {
	srv := mcptool.NewServer(r, opts...)
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := req.Context()
		if u := req.Header.Get("X-Test-User"); u != "" {
			ctx = policy.WithPrincipal(ctx, policy.Principal{ID: u})
		}
		srv.ServeHTTP(w, req.WithContext(ctx))
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

var withTasks = map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{mcptool.TasksExtension: map[string]any{}}}

// TestTaskApprovalEndToEnd: a policy ask on a task-capable tool becomes
// input_required with the approval question; the answer through
// tasks/update runs the call once (approve true) or refuses it (approve
// false). The approval requests go through a policy.ApprovalStore.
func TestTaskApprovalEndToEnd(t *testing.T) {
	store := policy.NewMemoryApprovalStore()
	a, err := policy.New("ask.cedar", []byte(askPolicy), policy.WithApprover(mcptool.ElicitApprover{}), policy.WithApprovalStore(store))
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	r := tool.NewRegistry(tool.WithAuthorizer(a))
	r.Register(removeTool(&ran, tool.WithTask(tool.TaskOptional)))
	c := taskClient{t: t, url: taskServer(t, r), user: "alice", caps: withTasks}

	for _, tc := range []struct {
		approve bool
		isError bool
		ran     int32
	}{{true, false, 1}, {false, true, 1}} {
		id := c.start("remove", map[string]any{"path": "a"})
		d := c.await(id, mcptool.StatusInputRequired)
		q, ok := d.InputRequests["clawtool_approval"]
		if d.Status != mcptool.StatusInputRequired || !ok || !strings.Contains(string(q), `"method":"elicitation/create"`) {
			t.Fatalf("waiting for approval: %+v", d)
		}
		if pending, err := store.Pending(context.Background(), time.Now()); err != nil || len(pending) != 1 ||
			pending[0].Principal != "alice" || pending[0].Tool != "remove" {
			t.Errorf("the approval store while the task waits: %+v %v", pending, err)
		}
		ack := c.call("tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
			"clawtool_approval": map[string]any{"action": "accept", "content": map[string]any{"approve": tc.approve}}}})
		if ack.Error != nil || string(ack.Result) != `{"resultType":"complete"}` {
			t.Fatalf("tasks/update: %s %+v", ack.Result, ack.Error)
		}
		d = c.await(id, mcptool.StatusCompleted)
		var res struct {
			IsError bool `json:"isError"`
		}
		json.Unmarshal(d.Result, &res)
		if d.Status != mcptool.StatusCompleted || res.IsError != tc.isError || ran.Load() != tc.ran {
			t.Errorf("approve %v: %s %s (ran %d)", tc.approve, d.Status, d.Result, ran.Load())
		}
	}
}

// TestTaskBadInput: every malformed or misdirected tasks/* request gets a
// clear JSON-RPC error, and another principal sees the same error for a
// task as for an unknown ID; the owner's own request is the control.
func TestTaskBadInput(t *testing.T) {
	r := tool.NewRegistry()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r.Register(tool.Must(tool.New("wait", "Waits.", func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "done", nil
	}, tool.WithTask(tool.TaskRequired))))
	url := taskServer(t, r)
	alice := taskClient{t: t, url: url, user: "alice", caps: withTasks}
	bob := taskClient{t: t, url: url, user: "bob", caps: withTasks}
	plain := taskClient{t: t, url: url, user: "alice", caps: map[string]any{}}
	id := alice.start("wait", map[string]any{})

	for _, c := range []struct {
		name   string
		client taskClient
		method string
		params map[string]any
		code   int // 0: a result
	}{
		{"own get (control)", alice, "tasks/get", map[string]any{"taskId": id}, 0},
		{"unknown id", alice, "tasks/get", map[string]any{"taskId": "nope"}, -32602},
		{"foreign get", bob, "tasks/get", map[string]any{"taskId": id}, -32602},
		{"foreign cancel", bob, "tasks/cancel", map[string]any{"taskId": id}, -32602},
		{"foreign update", bob, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{}}, -32602},
		{"update while working", alice, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"x": map[string]any{}}}, -32602},
		{"update without responses", alice, "tasks/update", map[string]any{"taskId": id}, -32602},
		{"no taskId", alice, "tasks/get", map[string]any{}, -32602},
		{"without the extension", plain, "tasks/get", map[string]any{"taskId": id}, -32021},
		{"required task without the extension", plain, "tools/call", map[string]any{"name": "wait", "arguments": map[string]any{}}, -32021},
		{"tasks/result removed", alice, "tasks/result", map[string]any{"taskId": id}, -32601},
		{"tasks/list removed", alice, "tasks/list", map[string]any{}, -32601},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := ""
			if tid, ok := c.params["taskId"].(string); ok {
				name = tid
			} else if n, ok := c.params["name"].(string); ok {
				name = n
			}
			res := c.client.call(c.method, name, c.params)
			switch {
			case c.code == 0 && res.Error != nil:
				t.Errorf("error %+v, want a result", res.Error)
			case c.code != 0 && (res.Error == nil || res.Error.Code != c.code):
				t.Errorf("got %s %+v, want code %d", res.Result, res.Error, c.code)
			}
		})
	}
	if d := alice.get(id); d.Status != mcptool.StatusWorking {
		t.Errorf("the foreign requests changed the task: %s", d.Status)
	}
}

// TestTaskPollRateLimited: polls beyond a principal's budget are refused
// with CodeRateLimited, and another principal's polls still pass.
func TestTaskPollRateLimited(t *testing.T) {
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("quick", "Answers.", func(context.Context, struct{}) (string, error) { return "ok", nil },
		tool.WithTask(tool.TaskOptional))))
	url := taskServer(t, r, mcptool.WithTasks(mcptool.TaskLimits{PollsPerSecond: 0.001, PollBurst: 2}))
	alice := taskClient{t: t, url: url, user: "alice", caps: withTasks}
	bob := taskClient{t: t, url: url, user: "bob", caps: withTasks}
	id := alice.start("quick", map[string]any{})
	var codes []int
	for range 3 {
		res := alice.call("tasks/get", id, map[string]any{"taskId": id})
		code := 0
		if res.Error != nil {
			code = res.Error.Code
		}
		codes = append(codes, code)
	}
	if codes[0] != 0 || codes[1] != 0 || codes[2] != mcptool.CodeRateLimited {
		t.Errorf("codes %v, want [0 0 %d]", codes, mcptool.CodeRateLimited)
	}
	if res := bob.call("tasks/get", id, map[string]any{"taskId": id}); res.Error == nil || res.Error.Code != -32602 {
		t.Errorf("bob: %+v, want his own budget and not found", res.Error)
	}
}

// BenchmarkServeHTTPTaskCall: a tools/call of the same quick tool as a
// task (tools/call, then tasks/get until completed) and as a plain call,
// interleaved in one run, in process; and the cost of one tasks/get.
func BenchmarkServeHTTPTaskCall(b *testing.B) {
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("echo", "Echoes.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})))
	r.Register(tool.Must(tool.New("echo_task", "Echoes, as a task.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}, tool.WithTask(tool.TaskOptional))))
	srv := mcptool.NewServer(r, mcptool.WithTasks(mcptool.TaskLimits{MaxTasks: 1 << 30, MaxTotal: 1 << 30, PollsPerSecond: 1e12, PollBurst: 1 << 30}))
	defer srv.Close()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	serve := func(method, name, params string) []byte {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+params+`,`+meta+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", name)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%s: status %d: %s", method, w.Code, w.Body)
		}
		return w.Body.Bytes()
	}
	var polls int
	asTask := func() string {
		var out struct{ Result mcptool.CreateTaskResult }
		json.Unmarshal(serve("tools/call", "echo_task", `"name":"echo_task","arguments":{"text":"hi"}`), &out)
		id := out.Result.TaskID
		for {
			runtime.Gosched() // let the task's goroutine run before each poll
			polls++
			var got struct{ Result mcptool.DetailedTask }
			json.Unmarshal(serve("tasks/get", id, `"taskId":"`+id+`"`), &got)
			if got.Result.Status.Terminal() {
				if got.Result.Status != mcptool.StatusCompleted {
					b.Fatalf("task %s", got.Result.Status)
				}
				return id
			}
		}
	}
	const chunk = 64
	var plain, task, get time.Duration
	var last string
	b.ReportAllocs()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := time.Now()
		for range n {
			serve("tools/call", "echo", `"name":"echo","arguments":{"text":"hi"}`)
		}
		t1 := time.Now()
		for range n {
			last = asTask()
		}
		t2 := time.Now()
		for range n {
			serve("tasks/get", last, `"taskId":"`+last+`"`)
		}
		plain += t1.Sub(t0)
		task += t2.Sub(t1)
		get += time.Since(t2)
	}
	b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "plain-ns/call")
	b.ReportMetric(float64(task.Nanoseconds())/float64(b.N), "task-ns/call")
	b.ReportMetric(float64(task)/float64(plain), "task/plain")
	b.ReportMetric(float64(get.Nanoseconds())/float64(b.N), "get-ns/poll")
	b.ReportMetric(float64(polls)/float64(b.N), "polls/task")
}

// TestTasksWithToolFilter: with a tool filter (clawtool serve --policy),
// a tool the filter shows the caller runs as a task in both forms, and
// the legacy tools/list declares its taskSupport; a tool the filter hides
// from this caller (another caller sees it) is never a task: its call
// takes the synchronous path, as any call of a hidden tool. Before, a
// server with a filter served no tasks at all.
func TestTasksWithToolFilter(t *testing.T) {
	r := tool.NewRegistry()
	for _, name := range []string{"open", "secret"} {
		r.Register(tool.Must(tool.New(name, "Returns its name.", func(context.Context, struct{}) (string, error) {
			return "ran " + name, nil
		}, tool.WithTask(tool.TaskOptional))))
	}
	keep := func(ctx context.Context, name string) bool {
		p, _ := policy.PrincipalFrom(ctx)
		return name == "open" || p.ID == "boss"
	}
	url := taskServer(t, r, mcptool.WithToolFilter(keep))

	for _, tc := range []struct {
		user, tool string
		task       bool
	}{
		{"ann", "open", true},
		{"ann", "secret", false}, // hidden from ann
		{"boss", "secret", true}, // the control: shown to boss
	} {
		t.Run(tc.user+"/"+tc.tool, func(t *testing.T) {
			c := taskClient{t: t, url: url, user: tc.user, caps: withTasks}
			res := c.call("tools/call", tc.tool, map[string]any{"name": tc.tool, "arguments": map[string]any{}})
			var probe struct {
				ResultType string `json:"resultType"`
				TaskID     string `json:"taskId"`
			}
			if res.Error != nil || json.Unmarshal(res.Result, &probe) != nil {
				t.Fatalf("extension: %s %+v", res.Result, res.Error)
			}
			if got := probe.ResultType == "task"; got != tc.task {
				t.Fatalf("extension: a task %v, want %v: %s", got, tc.task, res.Result)
			}
			if tc.task {
				if d := c.await(probe.TaskID, mcptool.StatusCompleted); d.Status != mcptool.StatusCompleted || !strings.Contains(string(d.Result), "ran "+tc.tool) {
					t.Errorf("extension: task %+v", d)
				}
			}

			h := newHTTPSession(t, url, tc.user)
			list := h.send("tools/list", map[string]any{})
			if !strings.Contains(string(list.Result), `"execution":{"taskSupport":"optional"}`) {
				t.Errorf("legacy tools/list declares no task support: %s", list.Result)
			}
			res = h.send("tools/call", map[string]any{"name": tc.tool, "arguments": map[string]any{}, "task": map[string]any{}})
			if res.Error != nil {
				t.Fatalf("legacy: %+v", res.Error)
			}
			if got := strings.Contains(string(res.Result), `"task":{`); got != tc.task {
				t.Errorf("legacy: a task %v, want %v: %s", got, tc.task, res.Result)
			}
		})
	}
}
