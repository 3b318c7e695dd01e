package mcptool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
)

// decisionRegistry holds "long" (a one-hour timeout), "short" (one
// second) and "plain" (none); none declares task support.
func decisionRegistry() *tool.Registry {
	r := tool.NewRegistry()
	for name, timeout := range map[string]time.Duration{"long": time.Hour, "short": time.Second, "plain": 0} {
		opts := []tool.Option{}
		if timeout > 0 {
			opts = append(opts, tool.WithTimeout(timeout))
		}
		r.Register(tool.Must(tool.New(name, "Echoes.", func(ctx context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return name + " " + in.Text, nil
		}, opts...)))
	}
	return r
}

// TestTaskDecision: with WithTaskDecision(TasksOver(1 min)) the server
// runs calls of "long", which declares no task support, as tasks for
// clients that support tasks, in both forms: a 2026-07-28 request that
// declares the extension gets a task handle and the task completes; a
// 2025-11-25 session sees execution.taskSupport "optional" on "long"
// only, and its call with params.task becomes a task. Everything else is
// a plain call: "short" and "plain", a client that does not declare the
// extension, a 2025-11-25 call without params.task. The control: the
// same server without the option runs "long" as a plain call and refuses
// params.task for it.
func TestTaskDecision(t *testing.T) {
	decided := taskServer(t, decisionRegistry(), mcptool.WithTaskDecision(mcptool.TasksOver(time.Minute)))
	control := taskServer(t, decisionRegistry())
	noTasks := map[string]any{}
	for _, tc := range []struct {
		name, url, tool string
		caps            map[string]any
		task            bool
	}{
		{"long, client with tasks", decided, "long", withTasks, true},
		{"short, client with tasks", decided, "short", withTasks, false},
		{"plain, client with tasks", decided, "plain", withTasks, false},
		{"long, client without tasks", decided, "long", noTasks, false},
		{"control: long without the decision", control, "long", withTasks, false},
	} {
		t.Run("2026-07-28 "+tc.name, func(t *testing.T) {
			c := taskClient{t: t, url: tc.url, user: "ann", caps: tc.caps}
			res := c.call("tools/call", tc.tool, map[string]any{"name": tc.tool, "arguments": map[string]any{"text": "x"}})
			var out struct {
				ResultType string `json:"resultType"`
				TaskID     string `json:"taskId"`
				Content    []struct{ Text string }
			}
			if res.Error != nil || json.Unmarshal(res.Result, &out) != nil {
				t.Fatalf("tools/call: %s %+v", res.Result, res.Error)
			}
			if !tc.task {
				if out.ResultType == "task" || len(out.Content) != 1 || out.Content[0].Text != tc.tool+" x" {
					t.Fatalf("want a plain result: %s", res.Result)
				}
				return
			}
			if out.ResultType != "task" || out.TaskID == "" {
				t.Fatalf("want a task: %s", res.Result)
			}
			d := c.await(out.TaskID, mcptool.StatusCompleted)
			if d.Status != mcptool.StatusCompleted || !strings.Contains(string(d.Result), `"long x"`) {
				t.Fatalf("the task: %+v %s", d, d.Result)
			}
		})
	}

	for _, tc := range []struct {
		name, url string
		support   map[string]string // execution.taskSupport by tool
		taskCode  int               // error code of "long" with params.task; 0: a task
	}{
		{"decided", decided, map[string]string{"long": "optional"}, 0},
		{"control: without the decision", control, map[string]string{}, -32601},
	} {
		t.Run("2025-11-25 "+tc.name, func(t *testing.T) {
			h := newHTTPSession(t, tc.url, "ann")
			var tl struct {
				Tools []struct {
					Name      string
					Execution *mcptool.ToolExecution
				}
			}
			json.Unmarshal(h.send("tools/list", map[string]any{}).Result, &tl)
			got := map[string]string{}
			for _, tt := range tl.Tools {
				if tt.Execution != nil {
					got[tt.Name] = string(tt.Execution.TaskSupport)
				}
			}
			if len(tl.Tools) != 3 || len(got) != len(tc.support) || got["long"] != tc.support["long"] {
				t.Errorf("execution.taskSupport %v, want %v", got, tc.support)
			}
			res := h.send("tools/call", map[string]any{"name": "long", "arguments": map[string]any{"text": "y"}, "task": map[string]any{}})
			if tc.taskCode != 0 {
				if res.Error == nil || res.Error.Code != tc.taskCode {
					t.Errorf("long with params.task: %s %+v, want %d", res.Result, res.Error, tc.taskCode)
				}
			} else {
				var ct mcptool.LegacyCreateTaskResult
				if res.Error != nil || json.Unmarshal(res.Result, &ct) != nil || ct.Task.TaskID == "" {
					t.Fatalf("long with params.task: %s %+v", res.Result, res.Error)
				}
				tr := h.send("tasks/result", map[string]any{"taskId": ct.Task.TaskID})
				if tr.Error != nil || !strings.Contains(string(tr.Result), `"long y"`) {
					t.Errorf("tasks/result: %s %+v", tr.Result, tr.Error)
				}
			}
			// Without params.task, a plain call on either server.
			if res := h.send("tools/call", map[string]any{"name": "long", "arguments": map[string]any{"text": "z"}}); res.Error != nil || !strings.Contains(string(res.Result), `"long z"`) || strings.Contains(string(res.Result), "taskId") {
				t.Errorf("long without params.task: %s %+v", res.Result, res.Error)
			}
		})
	}
}
