package mcptool_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyPeer speaks the 2025-11-25 tasks form by hand, over a session of
// either transport: send writes one request and returns its response.
type legacyPeer interface {
	send(method string, params any) rpc
}

// httpSession is a 2025-11-25 Streamable HTTP session as user.
type httpSession struct {
	t         *testing.T
	url, user string
	id        string
	init      rpc
}

func newHTTPSession(t *testing.T, url, user string) *httpSession {
	h := &httpSession{t: t, url: url, user: user}
	h.init = h.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "legacy", "version": "0"}}, true)
	if h.id == "" {
		t.Fatalf("no session: %+v", h.init)
	}
	h.post("notifications/initialized", nil, false)
	return h
}

func (h *httpSession) send(method string, params any) rpc { return h.post(method, params, true) }

func (h *httpSession) post(method string, params any, call bool) rpc {
	h.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	if call {
		msg["id"] = rpcID.Add(1)
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-User", h.user)
	if h.id != "" {
		req.Header.Set("Mcp-Session-Id", h.id)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		h.id = id
	}
	var out rpc
	if !call {
		io.Copy(io.Discard, resp.Body)
		return out
	}
	data, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, l := range strings.Split(string(data), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok && strings.Contains(d, `"id"`) {
				data = []byte(d)
			}
		}
	}
	if err := json.Unmarshal(data, &out); err != nil {
		h.t.Fatalf("%s: %d %q: %v", method, resp.StatusCode, data, err)
	}
	return out
}

// stdioSession is a 2025-11-25 session of ServeIO.
type stdioSession struct {
	t    *testing.T
	in   *io.PipeWriter
	mu   sync.Mutex
	wait map[string]chan rpc
	init rpc
}

func newStdioSession(t *testing.T, srv *mcptool.Server) *stdioSession {
	s := startStdio(t, srv)
	s.init = s.send("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "legacy", "version": "0"}})
	s.write(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return s
}

// startStdio serves one stdio session of srv.
func startStdio(t *testing.T, srv *mcptool.Server) *stdioSession {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeIO(ctx, inR, outW)
		outW.Close()
	}()
	s := &stdioSession{t: t, in: inW, wait: map[string]chan rpc{}}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				ID json.RawMessage `json:"id"`
				rpc
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			s.mu.Lock()
			ch := s.wait[string(m.ID)]
			s.mu.Unlock()
			if ch != nil {
				ch <- m.rpc
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		<-done
	})
	return s
}

func (s *stdioSession) write(msg any) {
	b, _ := json.Marshal(msg)
	s.in.Write(append(b, '\n'))
}

func (s *stdioSession) send(method string, params any) rpc {
	s.t.Helper()
	id := rpcID.Add(1)
	ch := make(chan rpc, 1)
	s.mu.Lock()
	s.wait[fmt.Sprint(id)] = ch
	s.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	s.write(msg)
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		s.t.Fatalf("%s: no answer", method)
	}
	return rpc{}
}

// legacyRegistry has a tool of each task mode and one that fails.
func legacyRegistry(gate chan struct{}) *tool.Registry {
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("plain", "Never a task.", func(context.Context, struct{}) (string, error) { return "plain", nil })))
	r.Register(tool.Must(tool.New("maybe", "Waits for the gate.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "got " + in.Text, nil
	}, tool.WithTask(tool.TaskOptional))))
	r.Register(tool.Must(tool.New("must", "Only as a task.", func(context.Context, struct{}) (string, error) { return "must", nil },
		tool.WithTask(tool.TaskRequired))))
	r.Register(tool.Must(tool.New("broken", "Fails.", func(context.Context, struct{}) (string, error) {
		return "", fmt.Errorf("it broke")
	}, tool.WithTask(tool.TaskOptional))))
	return r
}

// TestLegacyTasks: the 2025-11-25 form over HTTP sessions and stdio: the
// declarations (capabilities.tasks, execution.taskSupport), a task's life
// (tools/call with task, tasks/get working, tasks/result blocking until
// the result, which carries related-task), tasks/list, tasks/cancel, an
// isError result as failed, and each bad request's error.
func TestLegacyTasks(t *testing.T) {
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			gate := make(chan struct{})
			r := legacyRegistry(gate)
			var peer legacyPeer
			var init rpc
			var other legacyPeer
			if transport == "http" {
				url := taskServer(t, r)
				h := newHTTPSession(t, url, "alice")
				peer, init, other = h, h.init, newHTTPSession(t, url, "bob")
			} else {
				srv := mcptool.NewServer(r)
				t.Cleanup(func() { srv.Close() })
				s := newStdioSession(t, srv)
				peer, init = s, s.init
			}
			var ir struct {
				Capabilities map[string]json.RawMessage
			}
			json.Unmarshal(init.Result, &ir)
			if !strings.Contains(string(ir.Capabilities["tasks"]), `"call"`) {
				t.Errorf("initialize: capabilities %s, want tasks.requests.tools.call", init.Result)
			}
			list := peer.send("tools/list", map[string]any{})
			var tl struct {
				Tools []struct {
					Name      string
					Execution *mcptool.ToolExecution
				}
			}
			json.Unmarshal(list.Result, &tl)
			got := map[string]string{}
			for _, tt := range tl.Tools {
				if tt.Execution != nil {
					got[tt.Name] = string(tt.Execution.TaskSupport)
				}
			}
			if got["maybe"] != "optional" || got["must"] != "required" || got["plain"] != "" {
				t.Errorf("execution.taskSupport: %v", got)
			}

			res := peer.send("tools/call", map[string]any{"name": "maybe", "arguments": map[string]any{"text": "hi"}, "task": map[string]any{"ttl": 60000}})
			var ct mcptool.LegacyCreateTaskResult
			if res.Error != nil || json.Unmarshal(res.Result, &ct) != nil || ct.Task.TaskID == "" || ct.Task.Status != mcptool.StatusWorking || ct.Task.TTL == nil {
				t.Fatalf("tools/call with task: %s %+v", res.Result, res.Error)
			}
			id := ct.Task.TaskID
			var lt mcptool.LegacyTask
			g := peer.send("tasks/get", map[string]any{"taskId": id})
			if json.Unmarshal(g.Result, &lt); lt.Status != mcptool.StatusWorking {
				t.Errorf("tasks/get: %s %+v", g.Result, g.Error)
			}
			resultCh := make(chan rpc, 1)
			go func() { resultCh <- peer.send("tasks/result", map[string]any{"taskId": id}) }()
			select {
			case r := <-resultCh:
				t.Fatalf("tasks/result answered before the task ended: %s", r.Result)
			case <-time.After(50 * time.Millisecond): // not a bound: the control that it blocks
			}
			close(gate)
			tr := <-resultCh
			if tr.Error != nil || !strings.Contains(string(tr.Result), `"got hi"`) || !strings.Contains(string(tr.Result), `"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}`) {
				t.Errorf("tasks/result: %s %+v", tr.Result, tr.Error)
			}
			g = peer.send("tasks/get", map[string]any{"taskId": id})
			if json.Unmarshal(g.Result, &lt); lt.Status != mcptool.StatusCompleted {
				t.Errorf("tasks/get after: %s", g.Result)
			}

			// A tool error: the task is failed, tasks/result is the isError result.
			res = peer.send("tools/call", map[string]any{"name": "broken", "arguments": map[string]any{}, "task": map[string]any{}})
			json.Unmarshal(res.Result, &ct)
			tr = peer.send("tasks/result", map[string]any{"taskId": ct.Task.TaskID})
			g = peer.send("tasks/get", map[string]any{"taskId": ct.Task.TaskID})
			json.Unmarshal(g.Result, &lt)
			if !strings.Contains(string(tr.Result), `"isError":true`) || lt.Status != mcptool.StatusFailed {
				t.Errorf("a failing tool: result %s, status %s", tr.Result, lt.Status)
			}

			ls := peer.send("tasks/list", map[string]any{})
			var ltr mcptool.LegacyListTasksResult
			if json.Unmarshal(ls.Result, &ltr); len(ltr.Tasks) != 2 || ltr.Tasks[1].TaskID != id {
				t.Errorf("tasks/list: %s %+v", ls.Result, ls.Error)
			}

			for _, c := range []struct {
				name, method string
				params       map[string]any
				code         int
			}{
				{"cancel of a terminal task", "tasks/cancel", map[string]any{"taskId": id}, -32602},
				{"unknown ID", "tasks/get", map[string]any{"taskId": "nope"}, -32602},
				{"no ID", "tasks/result", map[string]any{}, -32602},
				{"ID not a string", "tasks/get", map[string]any{"taskId": 7}, -32602},
				{"bad cursor", "tasks/list", map[string]any{"cursor": "zzz"}, -32602},
				{"task of a forbidden tool", "tools/call", map[string]any{"name": "plain", "arguments": map[string]any{}, "task": map[string]any{}}, -32601},
				{"required tool without task", "tools/call", map[string]any{"name": "must", "arguments": map[string]any{}}, -32601},
				{"task params not an object", "tools/call", map[string]any{"name": "maybe", "arguments": map[string]any{}, "task": 5}, -32602},
			} {
				res := peer.send(c.method, c.params)
				if res.Error == nil || res.Error.Code != c.code {
					t.Errorf("%s: %s %+v, want %d", c.name, res.Result, res.Error, c.code)
				}
			}
			// The control: without task, an optional tool runs as a plain call.
			if res := peer.send("tools/call", map[string]any{"name": "maybe", "arguments": map[string]any{"text": "x"}}); !strings.Contains(string(res.Result), `"got x"`) {
				t.Errorf("a plain call: %s %+v", res.Result, res.Error)
			}
			// Cancel of a live task.
			res = peer.send("tools/call", map[string]any{"name": "must", "arguments": map[string]any{}, "task": map[string]any{}})
			if res.Error != nil {
				t.Fatalf("required tool as a task: %+v", res.Error)
			}
			if other != nil {
				// Another principal's session sees none of alice's tasks.
				for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
					if res := other.send(m, map[string]any{"taskId": id}); res.Error == nil || res.Error.Code != -32602 {
						t.Errorf("bob's %s of alice's task: %s %+v", m, res.Result, res.Error)
					}
				}
				if res := other.send("tasks/list", map[string]any{}); !strings.Contains(string(res.Result), `"tasks":[]`) {
					t.Errorf("bob's tasks/list: %s", res.Result)
				}
			}
		})
	}
}

// TestExtensionTasksStdio: the tasks extension (2026-07-28, request by
// request) over stdio: a call becomes a task, tasks/get follows it to its
// result, and each bad request gets the error the HTTP path gives.
func TestExtensionTasksStdio(t *testing.T) {
	gate := make(chan struct{})
	srv := mcptool.NewServer(legacyRegistry(gate))
	t.Cleanup(func() { srv.Close() })
	s := startStdio(t, srv)
	meta := func(declare bool, p map[string]any) map[string]any {
		caps := map[string]any{}
		if declare {
			caps = withTasks
		}
		p["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps}
		return p
	}
	res := s.send("tools/call", meta(true, map[string]any{"name": "maybe", "arguments": map[string]any{"text": "io"}}))
	var ct mcptool.CreateTaskResult
	if res.Error != nil || json.Unmarshal(res.Result, &ct) != nil || ct.ResultType != "task" || ct.TaskID == "" {
		t.Fatalf("tools/call: %s %+v", res.Result, res.Error)
	}
	var d mcptool.DetailedTask
	g := s.send("tasks/get", meta(true, map[string]any{"taskId": ct.TaskID}))
	if json.Unmarshal(g.Result, &d); d.Status != mcptool.StatusWorking {
		t.Errorf("tasks/get while working: %s %+v", g.Result, g.Error)
	}
	for _, c := range []struct {
		name, method string
		declare      bool
		params       map[string]any
		code         int
	}{
		{"update while working", "tasks/update", true, map[string]any{"taskId": ct.TaskID, "inputResponses": map[string]any{}}, -32602},
		{"unknown ID", "tasks/get", true, map[string]any{"taskId": "nope"}, -32602},
		{"legacy method", "tasks/result", true, map[string]any{"taskId": ct.TaskID}, -32601},
		{"undeclared extension", "tasks/get", false, map[string]any{"taskId": ct.TaskID}, mcptool.CodeMissingCapability},
		{"required tool, undeclared", "tools/call", false, map[string]any{"name": "must", "arguments": map[string]any{}}, mcptool.CodeMissingCapability},
	} {
		if res := s.send(c.method, meta(c.declare, c.params)); res.Error == nil || res.Error.Code != c.code {
			t.Errorf("%s: %s %+v, want %d", c.name, res.Result, res.Error, c.code)
		}
	}
	close(gate)
	for range 1000 {
		g = s.send("tasks/get", meta(true, map[string]any{"taskId": ct.TaskID}))
		if json.Unmarshal(g.Result, &d); d.Status.Terminal() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d.Status != mcptool.StatusCompleted || !strings.Contains(string(d.Result), `"got io"`) {
		t.Errorf("the task: %s", g.Result)
	}
	// The control: a tool without tasks is a plain call, answered by go-sdk.
	if res := s.send("tools/call", meta(true, map[string]any{"name": "plain", "arguments": map[string]any{}})); !strings.Contains(string(res.Result), `"plain"`) {
		t.Errorf("a plain call: %s %+v", res.Result, res.Error)
	}
}

// TestLegacyTaskBounds: in the 2025-11-25 form too, polls beyond the
// principal's budget get -32029, a task past its TTL answers as an
// unknown one (tasks/get and tasks/result), and a principal's tasks beyond
// MaxTasks are refused; the first requests are the controls.
func TestLegacyTaskBounds(t *testing.T) {
	r := legacyRegistry(make(chan struct{}))
	srv := mcptool.NewServer(r, mcptool.WithTasks(mcptool.TaskLimits{TTL: 300 * time.Millisecond, MaxTasks: 2,
		PollsPerSecond: 0.001, PollBurst: 2}))
	t.Cleanup(func() { srv.Close() })
	s := newStdioSession(t, srv)
	call := func() rpc {
		return s.send("tools/call", map[string]any{"name": "must", "arguments": map[string]any{}, "task": map[string]any{}})
	}
	first := call()
	var ct mcptool.LegacyCreateTaskResult
	if first.Error != nil || json.Unmarshal(first.Result, &ct) != nil || ct.Task.TaskID == "" {
		t.Fatalf("first task: %s %+v", first.Result, first.Error)
	}
	if res := call(); res.Error != nil {
		t.Fatalf("second task (control): %+v", res.Error)
	}
	if res := call(); res.Error == nil || res.Error.Code != -32603 || !strings.Contains(res.Error.Message, "too many tasks") {
		t.Errorf("third task: %s %+v, want -32603 too many tasks", res.Result, res.Error)
	}
	var codes []int
	for range 3 {
		res := s.send("tasks/get", map[string]any{"taskId": ct.Task.TaskID})
		code := 0
		if res.Error != nil {
			code = res.Error.Code
		}
		codes = append(codes, code)
	}
	if codes[0] != 0 || codes[1] != 0 || codes[2] != mcptool.CodeRateLimited {
		t.Errorf("polls: codes %v, want [0 0 %d]", codes, mcptool.CodeRateLimited)
	}
	// tasks/result is not rate-limited: it waits. Past the TTL the task is
	// gone for its owner too.
	for range 500 {
		res := s.send("tasks/result", map[string]any{"taskId": ct.Task.TaskID})
		if res.Error != nil && res.Error.Code == -32602 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("the task never expired")
}

// TestLegacyInputRequired: in a 2025-11-25 HTTP session that declared
// elicitation, a task whose tool asks for input goes input_required, and
// tasks/result turns into an event stream carrying the question
// (elicitation/create with the related-task _meta); the session's client
// answers it by POSTing the response, and the stream ends with the
// result. A response with an ID the task did not send, and the right
// response from another principal on the same session, are not taken:
// the task stays input_required until its client answers.
func TestLegacyInputRequired(t *testing.T) {
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("ask", "Asks for a name.", func(ctx context.Context, _ struct{}) (string, error) {
		if res, ok := mcptool.InputResponses(ctx)["name"].(*mcp.ElicitResult); ok {
			return fmt.Sprint("hello ", res.Content["name"]), nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}, "")
	}, tool.WithTask(tool.TaskRequired))))
	url := taskServer(t, r)
	h := &httpSession{t: t, url: url, user: "ann"}
	h.init = h.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"elicitation": map[string]any{}},
		"clientInfo": map[string]any{"name": "legacy", "version": "0"}}, true)
	h.post("notifications/initialized", nil, false)

	res := h.send("tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "task": map[string]any{}})
	var created mcptool.LegacyCreateTaskResult
	if res.Error != nil || json.Unmarshal(res.Result, &created) != nil || created.Task.TaskID == "" {
		t.Fatalf("tools/call: %s %+v", res.Result, res.Error)
	}
	id := created.Task.TaskID
	status := func() mcptool.TaskStatus {
		var lt mcptool.LegacyTask
		json.Unmarshal(h.send("tasks/get", map[string]any{"taskId": id}).Result, &lt)
		return lt.Status
	}
	for i := 0; status() != mcptool.StatusInputRequired; i++ {
		if i == 1000 {
			t.Fatal("the task never asked")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// tasks/result, read as a stream.
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 77, "method": "tasks/result", "params": map[string]any{"taskId": id}})
	resp := postSession(t, h, "ann", body)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("tasks/result answered %s", ct)
	}
	events := bufio.NewScanner(resp.Body)
	next := func() map[string]json.RawMessage {
		for events.Scan() {
			if d, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(d), &m); err != nil {
					t.Fatalf("event %q: %v", d, err)
				}
				return m
			}
		}
		t.Fatal("the stream ended")
		return nil
	}
	q := next()
	var params struct {
		Message string `json:"message"`
		Meta    map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	}
	json.Unmarshal(q["params"], &params)
	if string(q["method"]) != `"elicitation/create"` || params.Message != "Your name?" || params.Meta[mcptool.RelatedTaskMeta].TaskID != id {
		t.Fatalf("the question: %v", q)
	}
	answer := func(reqID json.RawMessage) []byte {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": reqID, "result": map[string]any{"action": "accept", "content": map[string]any{"name": "Ann"}}})
		return b
	}
	for _, bad := range []struct {
		name, user string
		id         json.RawMessage
	}{
		{"an ID the task did not send", "ann", json.RawMessage(`"clawtool-task-nope"`)},
		{"another principal", "bob", q["id"]},
	} {
		r := postSession(t, h, bad.user, answer(bad.id))
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if s := status(); s != mcptool.StatusInputRequired {
			t.Errorf("%s: the task is %s after the response", bad.name, s)
		}
	}
	r2 := postSession(t, h, "ann", answer(q["id"]))
	r2.Body.Close()
	if r2.StatusCode != http.StatusAccepted {
		t.Errorf("the answer got %d", r2.StatusCode)
	}
	final := next()
	if string(final["id"]) != "77" || !strings.Contains(string(final["result"]), "hello Ann") || !strings.Contains(string(final["result"]), mcptool.RelatedTaskMeta) {
		t.Errorf("the result: %v", final)
	}
}

// postSession POSTs body on h's session as user, and returns the response.
func postSession(t *testing.T, h *httpSession, user string, body []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-User", user)
	req.Header.Set("Mcp-Session-Id", h.id)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
