//go:build peers

package mcptool_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
)

// TestPeerTypeScriptTaskServer: the importing client against a real server
// that speaks the 2025-11-25 form of tasks, testdata/ts-task-server.mjs
// on @modelcontextprotocol/sdk 1.32.2's experimental tasks API (over
// stdio). A task-augmented call completes with the tool's result, a
// failed task is an error result, and a call whose caller gives up is
// cancelled on the server (tasks/get then says cancelled). WithoutTasks
// is the control: the optional task tool answers as a plain call and no
// task state is reported.
func TestPeerTypeScriptTaskServer(t *testing.T) {
	p := findPeers(t)
	script := filepath.Join(p.dir, "peers", "ts-task-server.mjs") // next to its node_modules
	src, err := os.ReadFile("testdata/ts-task-server.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	connect := func(opts ...mcptool.ClientOption) (*mcptool.Client, *tool.Registry) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := mcptool.Connect(ctx, mcptool.Command("node", script), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		r := tool.NewRegistry()
		if err := c.Import(ctx, r); err != nil {
			t.Fatal(err)
		}
		return c, r
	}
	c, r := connect(mcptool.WithTaskPolling(time.Millisecond, 50*time.Millisecond))
	_, plain := connect(mcptool.WithoutTasks())

	for _, tc := range []struct {
		name, tool, args string
		reg              *tool.Registry
		want             string
		isError          bool
		last             string // the last state reported
	}{
		{"completed", "delay", `{"ms":30}`, r, "slept 30 ms", false, "completed"},
		{"failed", "fail", `{}`, r, "it broke", true, "failed"},
		{"control: WithoutTasks", "delay", `{"ms":5}`, plain, "slept 5 ms", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var states []string
			ctx := mcptool.WithTaskEvents(context.Background(), func(ev mcptool.TaskEvent) {
				mu.Lock()
				defer mu.Unlock()
				if n := len(states); n == 0 || states[n-1] != string(ev.Status) {
					states = append(states, string(ev.Status))
				}
			})
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			res := tc.reg.Execute(ctx, tc.tool, []byte(tc.args))
			got := res.Output
			if res.IsError {
				got = res.Error
			}
			if res.IsError != tc.isError || !strings.Contains(got, tc.want) {
				t.Errorf("result %+v, want isError %v and %q", res, tc.isError, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			last := ""
			if len(states) > 0 {
				last = states[len(states)-1]
			}
			if last != tc.last || tc.last == "" && len(states) > 0 {
				t.Errorf("states %q, want the last %q", states, tc.last)
			}
		})
	}

	t.Run("the caller gives up: tasks/cancel", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var id string
		ctx, giveUp := context.WithCancel(ctx)
		ctx = mcptool.WithTaskEvents(ctx, func(ev mcptool.TaskEvent) {
			if id == "" {
				id = ev.TaskID
				giveUp()
			}
		})
		res := r.Execute(ctx, "hang", []byte(`{}`))
		if !res.IsError || id == "" {
			t.Fatalf("result %+v, task %q", res, id)
		}
		gctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		d, err := c.GetTask(gctx, id)
		if err != nil || d.Status != mcptool.StatusCancelled {
			t.Errorf("tasks/get after the call: %+v %v", d, err)
		}
	})
}
