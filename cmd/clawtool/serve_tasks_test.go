package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/internal/natstest"
	"github.com/miniopenclaw/tool/natstool/mcptasks"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestServeNATSDurableTasks: serve --http --nats on a bus with JetStream
// keeps its tasks there (it creates the tasks' stream and bucket, and
// consumes the stream as a worker); on a bus without JetStream it says on
// standard error that tasks stay in memory, and serves all the same (the
// control).
func TestServeNATSDurableTasks(t *testing.T) {
	js := natstest.Run(t, &server.Options{JetStream: true, StoreDir: t.TempDir(), SyncAlways: true})
	startCLI(t, "serving MCP at", nil, "serve", "--http", "127.0.0.1:0", "--nats", js.ClientURL())
	nc, err := nats.Connect(js.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	jsc, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := jsc.Stream(ctx, mcptasks.DefaultStream)
	if err != nil {
		t.Fatalf("the tasks' stream: %v", err)
	}
	info, err := st.Info(ctx)
	if err != nil || info.Config.Storage != jetstream.FileStorage || info.Config.Retention != jetstream.WorkQueuePolicy {
		t.Errorf("the tasks' stream: %+v %v", info, err)
	}
	if _, err := jsc.KeyValue(ctx, mcptasks.DefaultBucket); err != nil {
		t.Errorf("the tasks' bucket: %v", err)
	}
	if _, err := st.Consumer(ctx, "workers"); err != nil {
		t.Errorf("no worker consumes the tasks: %v", err)
	}

	// The control: without JetStream, serve still serves.
	startCLI(t, "serving MCP at", nil, "serve", "--http", "127.0.0.1:0", "--nats", startNATS(t))
}

// TestServeNATSWithoutJetStreamWarns: the warning that tasks stay in
// memory comes before the server is ready.
func TestServeNATSWithoutJetStreamWarns(t *testing.T) {
	plain := startNATS(t)
	_, line := startCLI(t, "tasks are kept in memory", nil, "serve", "--http", "127.0.0.1:0", "--nats", plain)
	if !strings.Contains(line, "has no JetStream") {
		t.Errorf("warning %q", line)
	}
}

// TestServeTasksOver: with --tasks-over 5s, serve lists calc (a 5 s
// timeout, no task support of its own) with execution.taskSupport
// "optional" to a 2025-11-25 client and runs its call with params.task
// as a task; without the flag (the control) calc has no taskSupport and
// params.task is refused. wait declares task support: listed either way.
// A duration below zero is a usage error.
func TestServeTasksOver(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		calc string // calc's execution.taskSupport
	}{
		{"--tasks-over 5s", []string{"--tasks-over", "5s"}, "optional"},
		{"control: no flag", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServe(t, io.Discard, tc.args...)
			s.roundTrip(initReq)
			s.send(initialized)
			list := s.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			support := map[string]string{}
			tools, _ := list["result"].(map[string]any)["tools"].([]any)
			for _, x := range tools {
				m := x.(map[string]any)
				if ex, ok := m["execution"].(map[string]any); ok {
					support[m["name"].(string)], _ = ex["taskSupport"].(string)
				}
			}
			if support["calc"] != tc.calc || support["wait"] != "optional" {
				t.Errorf("execution.taskSupport %v, want calc %q and wait optional", support, tc.calc)
			}
			call := s.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"calc","arguments":{"expression":"1+2"},"task":{}}}`)
			res, _ := call["result"].(map[string]any)
			task, _ := res["task"].(map[string]any)
			e, _ := call["error"].(map[string]any)
			switch {
			case tc.calc != "" && (task == nil || task["taskId"] == ""):
				t.Errorf("calc with params.task: %v, want a task", call)
			case tc.calc == "" && (e == nil || e["code"] != float64(-32601)):
				t.Errorf("calc with params.task: %v, want -32601", call)
			}
			s.close()
		})
	}
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"serve", "--tasks-over", "-1s"}, nil, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "below zero") {
		t.Errorf("--tasks-over -1s: exit %d, %s", code, errOut.String())
	}
}
