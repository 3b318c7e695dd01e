package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// importTasks connects to url with opts and imports its tools into a
// fresh registry.
func importTasks(t *testing.T, url string, opts ...mcptool.ClientOption) *tool.Registry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mcptool.Connect(ctx, mcptool.URL(url), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := tool.NewRegistry()
	if err := c.Import(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// eventLog collects the TaskEvents of a call.
type eventLog struct {
	mu     sync.Mutex
	events []mcptool.TaskEvent
	on     func(mcptool.TaskEvent)
}

func (l *eventLog) add(ev mcptool.TaskEvent) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	on := l.on
	l.mu.Unlock()
	if on != nil {
		on(ev)
	}
}

func (l *eventLog) statuses() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ev := range l.events {
		if n := len(out); n == 0 || out[n-1] != string(ev.Status) {
			out = append(out, string(ev.Status))
		}
	}
	return out
}

// TestTaskClientOurServer: calls of task tools of our own server (over
// HTTP, 2026-07-28, the extension form) are awaited by the importing
// client and answered as ordinary calls: progress reaches the caller's
// ProgressFunc, states reach WithTaskEvents, an isError result stays a
// result, an elicitation is answered with tasks/update through
// WithElicitationHandler; without a handler the call fails saying so, and
// WithoutTasks makes the same call a plain one (the control: no task
// events).
func TestTaskClientOurServer(t *testing.T) {
	srvReg := tool.NewRegistry()
	slowEnded := make(chan struct{}, 8)
	srvReg.Register(tool.Must(tool.New("slow", "Reports progress, then waits to be let go.", func(ctx context.Context, in struct {
		N int `json:"n,omitempty"`
	}) (string, error) {
		tool.ReportProgress(ctx, 1, 2, "half way")
		<-ctx.Done() // ended by tasks/cancel from the client
		slowEnded <- struct{}{}
		return "", ctx.Err()
	}, tool.WithTask(tool.TaskOptional))))
	srvReg.Register(tool.Must(tool.New("quick", "Returns at once.", func(ctx context.Context, in struct {
		Fail bool `json:"fail,omitempty"`
	}) (string, error) {
		if in.Fail {
			return "", errors.New("it broke")
		}
		return "quick done", nil
	}, tool.WithTask(tool.TaskOptional))))
	srvReg.Register(tool.Must(tool.New("ask", "Asks the user for a name.", func(ctx context.Context, _ struct{}) (string, error) {
		if res, ok := mcptool.InputResponses(ctx)["name"].(*mcp.ElicitResult); ok {
			return "hello " + res.Content["name"].(string), nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}, "")
	}, tool.WithTask(tool.TaskRequired))))
	url := taskServer(t, srvReg, mcptool.WithTasks(mcptool.TaskLimits{PollInterval: time.Millisecond, PollsPerSecond: 1000, PollBurst: 1000}))
	fast := mcptool.WithTaskPolling(time.Millisecond, 20*time.Millisecond)
	answer := mcptool.WithElicitationHandler(func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		if p.Message != "Your name?" {
			return nil, errors.New("unexpected question " + p.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}}, nil
	})
	withHandler := importTasks(t, url, fast, answer)
	without := importTasks(t, url, fast)
	plain := importTasks(t, url, fast, mcptool.WithoutTasks())
	legacy := importTasks(t, url, fast, answer, mcptool.WithProtocolVersion("2025-11-25"))
	legacyWithout := importTasks(t, url, fast, mcptool.WithProtocolVersion("2025-11-25"))

	for _, tc := range []struct {
		name     string
		reg      *tool.Registry
		tool     string
		args     string
		output   string // substring of Output, or of Error when isError
		isError  bool
		statuses string
	}{
		{"completed", withHandler, "quick", `{}`, "quick done", false, "working,completed"},
		{"isError stays a result", withHandler, "quick", `{"fail":true}`, "it broke", true, "working,completed"},
		{"input answered", withHandler, "ask", `{}`, "hello Ann", false, "working,input_required,*completed"},
		// Our server fails the task: the client declared no elicitation.
		{"input without a handler", without, "ask", `{}`, "did not declare the elicitation capability", true, "working,failed"},
		{"control: WithoutTasks", plain, "quick", `{}`, "quick done", false, ""},
		// The 2025-11-25 form: task augmentation, tasks/get, tasks/result.
		{"legacy: completed", legacy, "quick", `{}`, "quick done", false, "working,*completed"},
		// 2025-11-25 says an isError result fails the task; tasks/result
		// still gives the result.
		{"legacy: isError stays a result", legacy, "quick", `{"fail":true}`, "it broke", true, "working,*failed"},
		// input_required in the 2025-11-25 form: tasks/result carries the
		// question to the session's elicitation handler.
		{"legacy: input answered", legacy, "ask", `{}`, "hello Ann", false, "working,input_required,completed"},
		{"legacy: input without a handler", legacyWithout, "ask", `{}`, "did not declare the elicitation capability", true, "working,*failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log eventLog
			ctx := mcptool.WithTaskEvents(context.Background(), log.add)
			res := tc.reg.Execute(ctx, tc.tool, []byte(tc.args))
			got := res.Output
			if res.IsError {
				got = res.Error
			}
			if res.IsError != tc.isError || !strings.Contains(got, tc.output) {
				t.Errorf("result %+v, want isError %v and %q", res, tc.isError, tc.output)
			}
			// "*" stands for a working state the polls may or may not see.
			if s := strings.Join(log.statuses(), ","); s != strings.ReplaceAll(tc.statuses, "*", "") && s != strings.ReplaceAll(tc.statuses, "*", "working,") {
				t.Errorf("states %s, want %s", s, tc.statuses)
			}
		})
	}

	t.Run("progress, then the caller cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var progress []string
		var mu sync.Mutex
		ctx = tool.WithProgress(ctx, func(p, total float64, msg string) {
			mu.Lock()
			progress = append(progress, msg)
			mu.Unlock()
			cancel() // the caller gives up once the task reports progress
		})
		var log eventLog
		ctx = mcptool.WithTaskEvents(ctx, log.add)
		res := withHandler.Execute(ctx, "slow", []byte(`{}`))
		if !res.IsError {
			t.Fatalf("a cancelled call: %+v", res)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(progress) == 0 || progress[0] != "half way" {
			t.Errorf("progress %q", progress)
		}
		if s := strings.Join(log.statuses(), ","); s != "working,cancelled" {
			t.Errorf("states %s", s)
		}
		select {
		case <-slowEnded: // tasks/cancel reached the server and ended the tool
		case <-time.After(10 * time.Second):
			t.Error("the server's task was not cancelled")
		}
	})
}

// scripted is an MCP server (2026-07-28, stateless HTTP) whose tools/call
// and tasks/get answers a test scripts, to play a bad server.
type scripted struct {
	call   func() string      // the result of tools/call
	get    func(n int) string // the n-th (from 1) tasks/get result, or an "error:" prefixed error object
	legacy bool               // speak 2025-11-25: initialize, execution.taskSupport, tasks/result
	result string             // the tasks/result answer (legacy)
	// notify, if set, is a notification sent before each tasks/get
	// answer, on an event stream that then carries the answer.
	notify string

	mu        sync.Mutex
	gets      int
	cancelled []string
	updates   int
}

func (s *scripted) serve(t *testing.T) string {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result := ""
		s.mu.Lock()
		switch {
		case s.legacy && req.Method == "server/discover":
			result = `error:{"code":-32601,"message":"method not found"}`
		case s.legacy && req.Method == "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"scripted","version":"1"}}`
		case s.legacy && req.Method == "tools/list":
			result = `{"tools":[{"name":"job","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`
		case s.legacy && req.Method == "tasks/result":
			result = s.result
		}
		switch req.Method {
		case "server/discover", "initialize", "tasks/result":
			if s.legacy {
				break
			}
			result = `error:{"code":-32601,"message":"method not found"}`
			if req.Method == "server/discover" {
				result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"` + mcptool.TasksExtension + `":{}}},"resultType":"complete"}`
			}
		case "tools/list":
			if !s.legacy {
				result = `{"tools":[{"name":"job","inputSchema":{"type":"object"}}],"resultType":"complete"}`
			}
		case "tools/call":
			result = s.call()
		case "tasks/get":
			s.gets++
			result = s.get(s.gets)
		case "tasks/update":
			s.updates++
			result = `{"resultType":"complete"}`
		case "tasks/cancel":
			s.cancelled = append(s.cancelled, req.Params.TaskID)
			result = `{"resultType":"complete"}`
		default:
			result = `error:{"code":-32601,"message":"method not found"}`
		}
		s.mu.Unlock()
		member := "result"
		if e, ok := strings.CutPrefix(result, "error:"); ok {
			member, result = "error", e
		}
		if s.notify != "" && req.Method == "tasks/get" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: %s\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,%q:%s}\n\n", s.notify, req.ID, member, result)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%q:%s}`, req.ID, member, result)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// taskJSON is a task in the extension form.
func taskJSON(id, status, extra string) string {
	return `{"resultType":"complete","taskId":"` + id + `","status":"` + status + `","createdAt":"2026-01-01T00:00:00.000Z","lastUpdatedAt":"2026-01-01T00:00:01.000Z","ttlMs":60000,"pollIntervalMs":1` + extra + `}`
}

// legacyTaskJSON is a task in the 2025-11-25 form.
func legacyTaskJSON(id, status string) string {
	return `{"taskId":"` + id + `","status":"` + status + `","createdAt":"2026-01-01T00:00:00.000Z","lastUpdatedAt":"2026-01-01T00:00:01.000Z","ttl":60000,"pollInterval":1}`
}

const legacyHandleT1 = `{"task":{"taskId":"t1","status":"working","createdAt":"2026-01-01T00:00:00.000Z","lastUpdatedAt":"2026-01-01T00:00:00.000Z","ttl":60000,"pollInterval":1}}`

const handleT1 = `{"resultType":"task","taskId":"t1","status":"working","createdAt":"2026-01-01T00:00:00.000Z","lastUpdatedAt":"2026-01-01T00:00:00.000Z","ttlMs":60000,"pollIntervalMs":1}`

// TestTaskClientBadServers: a server that answers with a malformed handle,
// changes the task ID, never completes, sends a huge result, reports an
// unknown status or a task whose clock goes backwards, asks for input the
// client cannot give, or answers with a task nobody asked for, gets a
// clear error result; each task the client gives up on is cancelled. The
// well-behaved rows (poll intervals of 0 and 10^12 ms, a rate-limited
// poll, a failed task) are the controls. The legacy rows play a
// 2025-11-25 server (initialize, execution.taskSupport, tasks/result).
func TestTaskClientBadServers(t *testing.T) {
	accept := mcptool.WithElicitationHandler(func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
	})
	huge := `{"content":[{"type":"text","text":"` + strings.Repeat("x", mcptool.DefaultMaxTaskResultBytes) + `"}]}`
	done := `,"result":{"content":[{"type":"text","text":"all done"}]}`
	for _, tc := range []struct {
		name      string
		call      string
		get       func(n int) string
		opts      []mcptool.ClientOption
		expire    bool   // the caller's deadline passes once the call is a task
		legacy    bool   // the server speaks 2025-11-25
		result    string // its tasks/result answer
		notify    string // a notification before each tasks/get answer
		updates   int    // if not 0, the tasks/update requests the client must send
		want      string // in the Output, or in the Error of an error result
		isError   bool
		cancelled bool // the client sent tasks/cancel for t1
	}{
		{name: "completed (control)", call: handleT1, get: func(n int) string {
			if n < 3 {
				return taskJSON("t1", "working", "")
			}
			return taskJSON("t1", "completed", done)
		}, want: "all done"},
		// Status notifications (notifications/tasks of the extension,
		// notifications/tasks/status of 2025-11-25) are accepted and
		// change nothing: the polls decide.
		{name: "status notifications", call: handleT1, get: func(n int) string {
			if n < 3 {
				return taskJSON("t1", "working", "")
			}
			return taskJSON("t1", "completed", done)
		}, notify: `{"jsonrpc":"2.0","method":"notifications/tasks","params":` + taskJSON("t1", "completed", `,"result":{"content":[{"type":"text","text":"not from here"}]}`) + `}`,
			want: "all done"},
		{name: "poll interval 0", call: strings.Replace(handleT1, `"pollIntervalMs":1`, `"pollIntervalMs":0`, 1), get: func(n int) string {
			return strings.Replace(taskJSON("t1", "completed", done), `"pollIntervalMs":1`, `"pollIntervalMs":0`, 1)
		}, want: "all done"},
		{name: "poll interval 10^12 is clamped", call: strings.Replace(handleT1, `"pollIntervalMs":1`, `"pollIntervalMs":1000000000000`, 1), get: func(n int) string {
			return taskJSON("t1", "completed", done)
		}, want: "all done"},
		{name: "rate-limited poll", call: handleT1, get: func(n int) string {
			if n == 1 {
				return `error:{"code":-32029,"message":"slow down"}`
			}
			return taskJSON("t1", "completed", done)
		}, want: "all done"},
		{name: "failed", call: handleT1, get: func(n int) string {
			return taskJSON("t1", "failed", `,"error":{"code":-32603,"message":"the worker died"}`)
		}, want: "failed: the worker died", isError: true},
		{name: "malformed handle: no ID", call: `{"resultType":"task","status":"working"}`, want: "no taskId", isError: true},
		{name: "malformed handle: control bytes", call: strings.Replace(handleT1, `"t1"`, `"t\u001b1"`, 1), want: "printable", isError: true},
		{name: "malformed handle: not an object", call: `{"resultType":"task","taskId":7}`, want: "malformed task handle", isError: true},
		{name: "malformed handle: unknown status", call: strings.Replace(handleT1, `"working"`, `"paused"`, 1), want: `unknown status "paused"`, isError: true},
		{name: "task ID changes", call: handleT1, get: func(n int) string {
			return taskJSON("t2", "completed", done)
		}, want: `answered task "t2"`, isError: true, cancelled: true},
		{name: "unknown status", call: handleT1, get: func(n int) string {
			return taskJSON("t1", "sleeping", "")
		}, want: `unknown status "sleeping"`, isError: true, cancelled: true},
		{name: "clock goes backwards", call: handleT1, get: func(n int) string {
			if n == 1 {
				return taskJSON("t1", "working", "")
			}
			return strings.Replace(taskJSON("t1", "working", ""), "00:00:01.000Z", "00:00:00.500Z", 1)
		}, want: "went backwards", isError: true, cancelled: true},
		{name: "huge result", call: handleT1, get: func(n int) string {
			return taskJSON("t1", "completed", `,"result":`+huge)
		}, want: "over the client's limit", isError: true, cancelled: true},
		{name: "never completes", call: handleT1, get: func(n int) string {
			return taskJSON("t1", "working", "")
		}, expire: true, want: "deadline exceeded", isError: true, cancelled: true},
		{name: "input without a handler", call: handleT1, get: func(n int) string {
			return taskJSON("t1", "input_required", `,"inputRequests":{"q":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}}}`)
		}, want: "no elicitation handler", isError: true, cancelled: true},
		{name: "input answered once, the server slow to move on", call: handleT1, get: func(n int) string {
			if n <= 2*64 {
				return taskJSON("t1", "input_required", `,"inputRequests":{"q":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}}}`)
			}
			return taskJSON("t1", "completed", done)
		}, opts: []mcptool.ClientOption{accept}, want: "all done", updates: 1},
		{name: "input asked forever", call: handleT1, get: func(n int) string {
			return taskJSON("t1", "input_required", fmt.Sprintf(`,"inputRequests":{"q%d":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}}}`, n))
		}, opts: []mcptool.ClientOption{accept}, want: "asked for input more than 64 times", isError: true, cancelled: true, updates: 64},
		{name: "input of an unknown kind", call: handleT1, get: func(n int) string {
			return taskJSON("t1", "input_required", `,"inputRequests":{"q":{"method":"sampling/createMessage","params":{}}}}`)
		}, opts: []mcptool.ClientOption{mcptool.WithElicitationHandler(func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		})}, want: `"sampling/createMessage", which this client does not answer`, isError: true, cancelled: true},
		// The 2025-11-25 form: {"task":{...}}, a flat tasks/get,
		// tasks/result.
		{name: "legacy: completed (control)", legacy: true, call: legacyHandleT1, get: func(n int) string {
			return legacyTaskJSON("t1", "completed")
		}, result: `{"content":[{"type":"text","text":"all done"}]}`, want: "all done"},
		{name: "legacy: status notifications", legacy: true, call: legacyHandleT1, get: func(n int) string {
			return legacyTaskJSON("t1", "completed")
		}, notify: `{"jsonrpc":"2.0","method":"notifications/tasks/status","params":` + legacyTaskJSON("t1", "failed") + `}`,
			result: `{"content":[{"type":"text","text":"all done"}]}`, want: "all done"},
		{name: "legacy: failed", legacy: true, call: legacyHandleT1, get: func(n int) string {
			return legacyTaskJSON("t1", "failed")
		}, result: `error:{"code":-32603,"message":"boom"}`, want: "failed: boom", isError: true},
		{name: "legacy: malformed handle", legacy: true, call: `{"task":{"status":"working"}}`, want: "no taskId", isError: true},
		{name: "legacy: task ID changes", legacy: true, call: legacyHandleT1, get: func(n int) string {
			return legacyTaskJSON("t2", "working")
		}, want: `answered task "t2"`, isError: true, cancelled: true},
		{name: "legacy: never completes", legacy: true, call: legacyHandleT1, get: func(n int) string {
			return legacyTaskJSON("t1", "working")
		}, expire: true, want: "deadline exceeded", isError: true, cancelled: true},
		{name: "a task nobody asked for", call: handleT1, opts: []mcptool.ClientOption{mcptool.WithoutTasks()},
			want: "which the client did not ask for", isError: true, cancelled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{call: func() string { return tc.call }, get: tc.get, legacy: tc.legacy, result: tc.result, notify: tc.notify}
			if s.get == nil {
				s.get = func(int) string { return taskJSON("t1", "completed", done) }
			}
			opts := append([]mcptool.ClientOption{mcptool.WithTaskPolling(time.Millisecond, 20*time.Millisecond)}, tc.opts...)
			r := importTasks(t, s.serve(t), opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tc.expire {
				// The deadline passes while the task is working (a
				// cancellation whose cause is the deadline, so that the
				// tools/call itself is never the one cut short).
				var expire context.CancelCauseFunc
				ctx, expire = context.WithCancelCause(ctx)
				ctx = mcptool.WithTaskEvents(ctx, func(mcptool.TaskEvent) { expire(context.DeadlineExceeded) })
			}
			res := r.Execute(ctx, "job", []byte(`{}`))
			got := res.Output
			if res.IsError {
				got = res.Error
			}
			if res.IsError != tc.isError || !strings.Contains(got, tc.want) {
				t.Errorf("result %+v, want isError %v and %q", res, tc.isError, tc.want)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if tc.updates != 0 && s.updates != tc.updates {
				t.Errorf("%d tasks/update requests, want %d", s.updates, tc.updates)
			}
			if cancelled := slices.Contains(s.cancelled, "t1"); cancelled != tc.cancelled {
				t.Errorf("tasks/cancel sent for %q, want t1 cancelled %v", s.cancelled, tc.cancelled)
			}
		})
	}
}

// BenchmarkClientTaskCall: a call through an importing client's registry
// of a quick tool that runs as a task on our server (tools/call answered
// with a handle, then tasks/get at the clamped interval until completed)
// against a plain call of the same tool, interleaved in one run, over
// loopback HTTP. The server suggests a 1 ms poll interval and the client's
// floor is 1 ms, so task-ns/call is the protocol's cost plus at least one
// interval; polls/task is how many tasks/get one call took.
func BenchmarkClientTaskCall(b *testing.B) {
	r := tool.NewRegistry()
	echo := func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}
	r.Register(tool.Must(tool.New("echo", "Echoes.", echo)))
	r.Register(tool.Must(tool.New("echo_task", "Echoes, as a task.", echo, tool.WithTask(tool.TaskOptional))))
	srv := mcptool.NewServer(r, mcptool.WithTasks(mcptool.TaskLimits{MaxTasks: 1 << 30, MaxTotal: 1 << 30,
		PollInterval: time.Millisecond, PollsPerSecond: 1e12, PollBurst: 1 << 30}))
	defer srv.Close()
	var polls atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Mcp-Method") == "tasks/get" {
			polls.Add(1)
		}
		srv.ServeHTTP(w, req)
	}))
	defer hs.Close()
	ctx := context.Background()
	c, err := mcptool.Connect(ctx, mcptool.URL(hs.URL+"/mcp"), mcptool.WithTaskPolling(time.Millisecond, 10*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	reg := tool.NewRegistry()
	if err := c.Import(ctx, reg); err != nil {
		b.Fatal(err)
	}
	var tasks atomic.Int64
	tctx := mcptool.WithTaskEvents(ctx, func(ev mcptool.TaskEvent) {
		if ev.Status == mcptool.StatusCompleted {
			tasks.Add(1)
		}
	})
	args := []byte(`{"text":"hi"}`)
	const chunk = 16
	var plain, task time.Duration
	b.ReportAllocs()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := time.Now()
		for range n {
			if res := reg.Execute(ctx, "echo", args); res.IsError || res.Output != "hi" {
				b.Fatalf("plain: %+v", res)
			}
		}
		t1 := time.Now()
		for range n {
			if res := reg.Execute(tctx, "echo_task", args); res.IsError || res.Output != "hi" {
				b.Fatalf("task: %+v", res)
			}
		}
		plain += t1.Sub(t0)
		task += time.Since(t1)
	}
	if tasks.Load() != int64(b.N) {
		b.Fatalf("%d of %d calls became tasks", tasks.Load(), b.N)
	}
	b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "plain-ns/call")
	b.ReportMetric(float64(task.Nanoseconds())/float64(b.N), "task-ns/call")
	b.ReportMetric(float64(task)/float64(plain), "task/plain")
	b.ReportMetric(float64(polls.Load())/float64(b.N), "polls/task")
}

// TestTaskClientStdio: over stdio, the client awaits the tasks of our own
// server in both forms (a tool that runs only as a task, so that a plain
// call could not pass); WithoutTasks is the control, whose call the
// server refuses.
func TestTaskClientStdio(t *testing.T) {
	legacy := mcptool.WithProtocolVersion("2025-11-25")
	answer := mcptool.WithElicitationHandler(func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}}, nil
	})
	refuse := mcptool.WithElicitationHandler(func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return nil, errors.New("no one here")
	})
	for _, tc := range []struct {
		name    string
		opts    []mcptool.ClientOption
		tool    string
		want    string
		isError bool
	}{
		{"2026-07-28 extension", nil, "echo_task", "hi", false},
		{"2025-11-25 form", []mcptool.ClientOption{legacy}, "echo_task", "hi", false},
		{"control: WithoutTasks", []mcptool.ClientOption{mcptool.WithoutTasks()}, "echo_task", "task", true},
		{"2026-07-28 input", []mcptool.ClientOption{answer}, "ask_task", "hello Ann", false},
		// tasks/result puts the question to the client on the connection.
		{"2025-11-25 input", []mcptool.ClientOption{legacy, answer}, "ask_task", "hello Ann", false},
		{"2025-11-25 input without a handler", []mcptool.ClientOption{legacy}, "ask_task", "did not declare the elicitation capability", true},
		{"2025-11-25 input declined", []mcptool.ClientOption{legacy, refuse}, "ask_task", "the client did not answer elicitation/create", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			opts := append([]mcptool.ClientOption{mcptool.WithTaskPolling(time.Millisecond, 20*time.Millisecond)}, tc.opts...)
			c, err := mcptool.Connect(ctx, mcptool.CommandTransport(fixtureCmd(t, "tasks")), opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := tool.NewRegistry()
			if err := c.Import(ctx, r); err != nil {
				t.Fatal(err)
			}
			var log eventLog
			res := r.Execute(mcptool.WithTaskEvents(ctx, log.add), tc.tool, []byte(`{"text":"hi"}`))
			got := res.Output
			if res.IsError {
				got = res.Error
			}
			if res.IsError != tc.isError || !strings.Contains(got, tc.want) {
				t.Errorf("result %+v, want isError %v and %q", res, tc.isError, tc.want)
			}
			if s := log.statuses(); !tc.isError && (len(s) == 0 || s[len(s)-1] != "completed") {
				t.Errorf("states %v", s)
			}
		})
	}
}

// TestTaskClientRelaysElicitation: an aggregating server (a registry that
// imported a task server's tools, served again) relays the question of a
// task that is input_required to its own 2025-11-25 client over that
// client's session, and the answer goes back with tasks/update. The
// control: for a downstream client that declared no elicitation the call
// declares none upstream either, and gets an error result saying so.
func TestTaskClientRelaysElicitation(t *testing.T) {
	upReg := tool.NewRegistry()
	upReg.Register(tool.Must(tool.New("ask", "Asks the user for a name.", func(ctx context.Context, _ struct{}) (string, error) {
		if res, ok := mcptool.InputResponses(ctx)["name"].(*mcp.ElicitResult); ok {
			return "hello " + fmt.Sprint(res.Content["name"]), nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}, "")
	}, tool.WithTask(tool.TaskRequired))))
	up := taskServer(t, upReg, mcptool.WithTasks(mcptool.TaskLimits{PollInterval: time.Millisecond}))
	mid := importTasks(t, up, mcptool.WithTaskPolling(time.Millisecond, 20*time.Millisecond))
	midURL := taskServer(t, mid)

	for _, tc := range []struct {
		name    string
		handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		want    string
		isError bool
	}{
		{"relayed", func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Message != "Your name?" {
				return nil, errors.New("unexpected question")
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Bo"}}, nil
		}, "hello Bo", false},
		// The call then declares no elicitation upstream, whose server
		// fails the task saying so.
		{"control: no elicitation downstream", nil, "did not declare the elicitation capability", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			down := mcp.NewClient(&mcp.Implementation{Name: "down", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: tc.handler})
			cs, err := down.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: midURL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			text := ""
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text += tc.Text
				}
			}
			if res.IsError != tc.isError || !strings.Contains(text, tc.want) {
				t.Errorf("result isError %v %q, want %v %q", res.IsError, text, tc.isError, tc.want)
			}
		})
	}
}

// TestTaskSupportCarried: a tool imported with execution.taskSupport
// "optional" or "required" (a 2025-11-25 session) may run as a task when
// the importing registry is served again, so a task-capable client of the
// aggregating server gets a task for it (and the aggregating server
// awaits the imported server's task underneath); a tool without it, and
// any tool of a 2026-07-28 session (where tools declare no task support),
// stays a plain call. The rows without a task are the controls.
func TestTaskSupportCarried(t *testing.T) {
	upReg := tool.NewRegistry()
	for _, m := range []struct {
		name string
		mode tool.TaskMode
	}{{"never", tool.TaskNever}, {"optional", tool.TaskOptional}, {"required", tool.TaskRequired}} {
		upReg.Register(tool.Must(tool.New(m.name, "Returns its name.", func(ctx context.Context, _ struct{}) (string, error) {
			tool.ReportProgress(ctx, 1, 1, "ran "+m.name)
			return "ran " + m.name, nil
		}, tool.WithTask(m.mode))))
	}
	lim := mcptool.WithTasks(mcptool.TaskLimits{PollInterval: time.Millisecond, PollsPerSecond: 1000, PollBurst: 1000})
	up := taskServer(t, upReg, lim)
	fast := mcptool.WithTaskPolling(time.Millisecond, 20*time.Millisecond)
	legacyMid := importTasks(t, up, fast, mcptool.WithProtocolVersion("2025-11-25"))
	extMid := importTasks(t, up, fast)

	for _, tc := range []struct {
		reg  *tool.Registry
		form string
		tool string
		want tool.TaskMode
	}{
		{legacyMid, "2025-11-25", "optional", tool.TaskOptional},
		{legacyMid, "2025-11-25", "required", tool.TaskOptional},
		{legacyMid, "2025-11-25", "never", tool.TaskNever},
		{extMid, "2026-07-28", "optional", tool.TaskNever},
		{extMid, "2026-07-28", "required", tool.TaskNever},
	} {
		rt, ok := tc.reg.Get(tc.tool)
		if !ok {
			t.Fatalf("%s: %s not imported", tc.form, tc.tool)
		}
		if got := tool.OptionsOf(rt).Task; got != tc.want {
			t.Errorf("%s: imported %s has Task %v, want %v", tc.form, tc.tool, got, tc.want)
		}
	}

	mid := taskServer(t, legacyMid, lim)
	top := importTasks(t, mid, fast)
	for _, tc := range []struct {
		tool     string
		statuses string // of the task the aggregating server made; "" for a plain call
	}{
		{"optional", "working,*completed"},
		{"required", "working,*completed"},
		{"never", ""},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			var log eventLog
			res := top.Execute(mcptool.WithTaskEvents(context.Background(), log.add), tc.tool, []byte(`{}`))
			if res.IsError || res.Output != "ran "+tc.tool {
				t.Fatalf("result %+v", res)
			}
			if s := strings.Join(log.statuses(), ","); s != strings.ReplaceAll(tc.statuses, "*", "") && s != strings.ReplaceAll(tc.statuses, "*", "working,") {
				t.Errorf("states %q, want %q", s, tc.statuses)
			}
		})
	}
}

// TestTaskRelayChain: an aggregating server (a registry that imported, in
// a 2025-11-25 session with WithElicitationRelay, a task tool that asks
// for input, served again) relays the imported server's question, which
// arrives on its tasks/result, to its own client: the tool is a task
// there too (its task support carried), which goes input_required with
// the question; the top client's answer goes back down, and the call
// completes. The control: a top client without a handler declares no
// elicitation, so nothing is relayed and the call fails with an error
// result; and without WithElicitationRelay the aggregating client
// declares no elicitation downstream.
func TestTaskRelayChain(t *testing.T) {
	upReg := tool.NewRegistry()
	upReg.Register(tool.Must(tool.New("ask", "Asks the user for a name.", func(ctx context.Context, _ struct{}) (string, error) {
		if res, ok := mcptool.InputResponses(ctx)["name"].(*mcp.ElicitResult); ok {
			return "hello " + fmt.Sprint(res.Content["name"]), nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}, "")
	}, tool.WithTask(tool.TaskRequired))))
	lim := mcptool.WithTasks(mcptool.TaskLimits{PollInterval: time.Millisecond, PollsPerSecond: 1000, PollBurst: 1000})
	up := taskServer(t, upReg, lim)
	fast := mcptool.WithTaskPolling(time.Millisecond, 20*time.Millisecond)
	relayMid := taskServer(t, importTasks(t, up, fast, mcptool.WithProtocolVersion("2025-11-25"), mcptool.WithElicitationRelay()), lim)
	plainMid := taskServer(t, importTasks(t, up, fast, mcptool.WithProtocolVersion("2025-11-25")), lim)
	answer := mcptool.WithElicitationHandler(func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		if p.Message != "Your name?" {
			return nil, fmt.Errorf("unexpected question %q", p.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Cy"}}, nil
	})
	for _, tc := range []struct {
		name     string
		mid      string
		opts     []mcptool.ClientOption
		want     string
		isError  bool
		statuses string
	}{
		{"extension client", relayMid, []mcptool.ClientOption{answer}, "hello Cy", false, "working,input_required,*completed"},
		{"2025-11-25 client", relayMid, []mcptool.ClientOption{answer, mcptool.WithProtocolVersion("2025-11-25")}, "hello Cy", false, "working,input_required,completed"},
		{"control: no handler on top", relayMid, nil, "no client to relay the question to", true, "working,*completed"},
		{"control: no relay in the middle", plainMid, []mcptool.ClientOption{answer}, "did not declare the elicitation capability", true, "working,*completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := importTasks(t, tc.mid, append([]mcptool.ClientOption{fast}, tc.opts...)...)
			var log eventLog
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res := top.Execute(mcptool.WithTaskEvents(ctx, log.add), "ask", []byte(`{}`))
			got := res.Output
			if res.IsError {
				got = res.Error
			}
			if res.IsError != tc.isError || !strings.Contains(got, tc.want) {
				t.Errorf("result %+v, want isError %v and %q", res, tc.isError, tc.want)
			}
			if s := strings.Join(log.statuses(), ","); s != strings.ReplaceAll(tc.statuses, "*", "") && s != strings.ReplaceAll(tc.statuses, "*", "working,") {
				t.Errorf("states %s, want %s", s, tc.statuses)
			}
		})
	}
}
