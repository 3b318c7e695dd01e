package mcptasks_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/natstest"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/natstool/mcptasks"
	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The test binary runs as a child process when these are set: a serving
// process (MCP over HTTP with durable tasks, and a worker) or a worker.
const (
	childEnv = "MCPTASKS_TEST_CHILD" // "serve" or "work"
	natsEnv  = "MCPTASKS_TEST_NATS"  // the NATS server's URL
	dirEnv   = "MCPTASKS_TEST_DIR"   // where the slow tool counts its runs
)

// ackWait is short so that a dead worker's job goes to another soon.
const ackWait = time.Second

func TestMain(m *testing.M) {
	if kind := os.Getenv(childEnv); kind != "" {
		if err := child(kind); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// slowTool counts its starts in dir/starts and its ends in dir/done, and
// runs until the file dir/gate exists or its context ends.
func slowTool(dir string) tool.Tool {
	return tool.Must(tool.New("slow", "Works until the gate opens.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		appendLine(filepath.Join(dir, "starts"), fmt.Sprint(os.Getpid()))
		for {
			if _, err := os.Stat(filepath.Join(dir, "gate")); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return "", context.Cause(ctx)
			case <-time.After(10 * time.Millisecond):
			}
		}
		appendLine(filepath.Join(dir, "done"), fmt.Sprint(os.Getpid()))
		return "slept on " + in.Text, nil
	}, tool.WithTask(tool.TaskOptional)))
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		panic(err)
	}
	fmt.Fprintln(f, line)
	f.Close()
}

func lines(path string) []string {
	data, _ := os.ReadFile(path)
	return strings.Fields(string(data))
}

// principalHeader names the test's principal on each HTTP request.
const principalHeader = "X-Test-User"

// child runs a serving process or a worker until it is killed.
func child(kind string) error {
	nc, err := nats.Connect(os.Getenv(natsEnv), nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	apv, err := natstool.OpenApprovals(ctx, nc, nil)
	if err != nil {
		return err
	}
	store, err := mcptasks.Open(ctx, nc, &mcptasks.Options{Jobs: principalJobs(), Approvals: apv})
	if err != nil {
		return err
	}
	r, err := askingRegistry(os.Getenv(dirEnv), apv)
	if err != nil {
		return err
	}
	r.Register(slowTool(os.Getenv(dirEnv)))
	if _, err := store.Jobs().Work(r, fmt.Sprintf("%s-%d", kind, os.Getpid()), 4); err != nil {
		return err
	}
	if kind == "work" {
		fmt.Fprintln(os.Stderr, "working")
		select {}
	}
	srv := mcptool.NewServer(r, mcptool.WithTaskStore(store))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "serving http://%s/mcp\n", ln.Addr())
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := req.Context()
		if u := req.Header.Get(principalHeader); u != "" {
			ctx = policy.WithPrincipal(ctx, policy.Principal{ID: u})
		}
		srv.ServeHTTP(w, req.WithContext(ctx))
	}))
}

// startChild starts the test binary as a child of kind and returns it
// with the line it printed when ready. It is killed when the test ends.
func startChild(t *testing.T, kind, natsURL, dir string) (*exec.Cmd, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+kind, natsEnv+"="+natsURL, dirEnv+"="+dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "serving ") || l == "working" {
				select {
				case ready <- l:
				default:
				}
			} else {
				t.Logf("child %d: %s", cmd.Process.Pid, l)
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() { kill(cmd, exited) })
	select {
	case l := <-ready:
		childExited[cmd] = exited
		return cmd, l
	case <-exited:
		t.Fatalf("the %s child exited before it was ready", kind)
	case <-time.After(30 * time.Second):
		t.Fatalf("the %s child was not ready", kind)
	}
	return nil, ""
}

// childExited maps a child to the channel closed when it is reaped.
var childExited = map[*exec.Cmd]chan struct{}{}

// kill sends SIGKILL to cmd and waits until it is reaped.
func kill(cmd *exec.Cmd, exited chan struct{}) {
	cmd.Process.Kill()
	<-exited
}

// startNATS runs an embedded NATS server with JetStream on file storage,
// synced on every write (the durability settings docs/mcp.md states).
func startNATS(t testing.TB) *server.Server {
	t.Helper()
	return natstest.Run(t, &server.Options{JetStream: true, StoreDir: t.TempDir(), SyncAlways: true})
}

var connect = natstest.Connect

// rpcResponse is a JSON-RPC response.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

var rpcID atomic.Int64

// rpc sends a 2026-07-28 request that declares the tasks extension to url
// as user.
func rpc(t *testing.T, url, user, method, name string, params map[string]any) rpcResponse {
	t.Helper()
	return rpcCaps(t, url, user, method, name, params, map[string]any{"extensions": map[string]any{mcptool.TasksExtension: map[string]any{}}})
}

// rpcCaps is rpc declaring the client capabilities caps.
func rpcCaps(t *testing.T, url, user, method, name string, params map[string]any, caps map[string]any) rpcResponse {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpcID.Add(1), "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	req.Header.Set(principalHeader, user)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out rpcResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out
}

func getTask(t *testing.T, url, user, id string) mcptool.DetailedTask {
	t.Helper()
	res := rpc(t, url, user, "tasks/get", id, map[string]any{"taskId": id})
	if res.Error != nil {
		t.Fatalf("tasks/get %s: %+v", id, res.Error)
	}
	var d mcptool.DetailedTask
	if err := json.Unmarshal(res.Result, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// eventually polls cond every 20 ms for at most 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1500 {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// TestDurableTaskSurvivesServerKill: a task created through a serving
// process (MCP over HTTP, durable tasks, a worker in the same process) is
// running when that process gets SIGKILL; a new serving process answers
// tasks/get for the same task ID, its worker takes the redelivered job,
// and the task completes with the tool's result: the tool started twice
// (once per worker) and finished once. Another principal's tasks/get gets
// the same -32602 as an unknown ID.
func TestDurableTaskSurvivesServerKill(t *testing.T) {
	ns := startNATS(t)
	dir := t.TempDir()
	a, line := startChild(t, "serve", ns.ClientURL(), dir)
	urlA := strings.TrimPrefix(line, "serving ")
	res := rpc(t, urlA, "alice", "tools/call", "slow", map[string]any{"name": "slow", "arguments": map[string]any{"text": "x"}})
	var ct mcptool.CreateTaskResult
	if res.Error != nil || json.Unmarshal(res.Result, &ct) != nil || ct.ResultType != mcptool.ResultTypeTask {
		t.Fatalf("tools/call: %s %+v", res.Result, res.Error)
	}
	eventually(t, "the first serving process runs the task", func() bool { return len(lines(filepath.Join(dir, "starts"))) == 1 })
	if d := getTask(t, urlA, "alice", ct.TaskID); d.Status != mcptool.StatusWorking || !strings.Contains(d.StatusMessage, "attempt 1") {
		t.Fatalf("before the kill: %+v", d)
	}
	kill(a, childExited[a])

	_, line = startChild(t, "serve", ns.ClientURL(), dir)
	urlB := strings.TrimPrefix(line, "serving ")
	if d := getTask(t, urlB, "alice", ct.TaskID); d.Status != mcptool.StatusWorking || d.TaskID != ct.TaskID {
		t.Fatalf("after the restart: %+v", d)
	}
	// The control for the foreign principal: the same ID is alice's.
	foreign := rpc(t, urlB, "mallory", "tasks/get", ct.TaskID, map[string]any{"taskId": ct.TaskID})
	unknown := rpc(t, urlB, "mallory", "tasks/get", "k0000", map[string]any{"taskId": "k0000"})
	if foreign.Error == nil || unknown.Error == nil || foreign.Error.Code != -32602 || unknown.Error.Code != -32602 ||
		strings.ReplaceAll(foreign.Error.Message, ct.TaskID, "ID") != strings.ReplaceAll(unknown.Error.Message, "k0000", "ID") {
		t.Errorf("foreign %+v, unknown %+v: want the same -32602", foreign.Error, unknown.Error)
	}
	eventually(t, "the new serving process's worker takes the redelivered job", func() bool { return len(lines(filepath.Join(dir, "starts"))) == 2 })
	os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600)
	var d mcptool.DetailedTask
	eventually(t, "the task completes", func() bool { d = getTask(t, urlB, "alice", ct.TaskID); return d.Status.Terminal() })
	var out struct {
		Content []struct{ Text string }
		IsError bool
	}
	json.Unmarshal(d.Result, &out)
	if d.Status != mcptool.StatusCompleted || out.IsError || len(out.Content) != 1 || out.Content[0].Text != "slept on x" {
		t.Fatalf("the task: %+v %s", d, d.Result)
	}
	starts, done := lines(filepath.Join(dir, "starts")), lines(filepath.Join(dir, "done"))
	if len(starts) != 2 || starts[0] == starts[1] || len(done) != 1 || done[0] != starts[1] {
		t.Errorf("starts %v, done %v: want a start in each process and one end, in the second", starts, done)
	}
}

// TestDurableTaskWorkerKilled: a task's job runs on a worker process that
// gets SIGKILL mid-call; the job is redelivered to another worker (here
// in the test process), which completes it. The tool started twice and
// finished once, the record counts two attempts, and the work queue is
// empty: nothing is left that could run it again.
func TestDurableTaskWorkerKilled(t *testing.T) {
	ns := startNATS(t)
	nc := connect(t, ns)
	dir := t.TempDir()
	ctx := context.Background()
	store, err := mcptasks.Open(ctx, nc, &mcptasks.Options{Jobs: principalJobs()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w1, _ := startChild(t, "work", ns.ClientURL(), dir)
	rec, err := store.Create(ctx, mcptool.TaskCall{Owner: "alice", Tool: "slow", Args: json.RawMessage(`{"text":"y"}`)})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker process takes the job", func() bool { return len(lines(filepath.Join(dir, "starts"))) == 1 })
	kill(w1, childExited[w1])

	r := tool.NewRegistry()
	r.Register(slowTool(dir))
	w2, err := store.Jobs().Work(r, "in-test", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	eventually(t, "the job is redelivered", func() bool { return len(lines(filepath.Join(dir, "starts"))) == 2 })
	os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600)
	eventually(t, "the task completes", func() bool {
		got, err := store.Get(ctx, "alice", rec.TaskID)
		return err == nil && got.Status.Terminal()
	})
	got, _ := store.Get(ctx, "alice", rec.TaskID)
	job, err := store.Job(ctx, "alice", rec.TaskID)
	if got.Status != mcptool.StatusCompleted || got.ToolResult == nil || got.ToolResult.Output != "slept on y" {
		t.Fatalf("the task: %+v", got)
	}
	if err != nil || job.Attempts != 2 {
		t.Errorf("attempts %d (%v), want 2", job.Attempts, err)
	}
	starts, done := lines(filepath.Join(dir, "starts")), lines(filepath.Join(dir, "done"))
	if len(starts) != 2 || len(done) != 1 || done[0] != fmt.Sprint(os.Getpid()) {
		t.Errorf("starts %v, done %v: want two starts and one end, in this process", starts, done)
	}
	js, _ := jetstream.New(nc)
	eventually(t, "the work queue is empty", func() bool {
		st, err := js.Stream(ctx, mcptasks.DefaultStream)
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
}

// TestDurableTaskFaults: each bad request gets its error and changes
// nothing; the owner's own request is the control.
func TestDurableTaskFaults(t *testing.T) {
	ns := startNATS(t)
	nc := connect(t, ns)
	ctx := context.Background()
	store, err := mcptasks.Open(ctx, nc, &mcptasks.Options{Limits: mcptool.TaskLimits{MaxTasks: 2, MaxTotal: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	call := func(owner string) (mcptool.TaskRecord, error) {
		return store.Create(ctx, mcptool.TaskCall{Owner: owner, Tool: "slow", Args: json.RawMessage(`{}`)})
	}
	mine, err := call("alice") // no worker: it stays queued
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, owner, id, op string
		want                error
	}{
		{"own get (control)", "alice", mine.TaskID, "get", nil},
		{"unknown", "alice", "k0123456789abcdef0123456789abcdef", "get", mcptool.ErrTaskNotFound},
		{"foreign get", "bob", mine.TaskID, "get", mcptool.ErrTaskNotFound},
		{"foreign cancel", "bob", mine.TaskID, "cancel", mcptool.ErrTaskNotFound},
		{"foreign update", "bob", mine.TaskID, "update", mcptool.ErrTaskNotFound},
		{"update while working", "alice", mine.TaskID, "update", mcptool.ErrTaskNotWaiting},
		{"empty ID", "alice", "", "get", mcptool.ErrTaskNotFound},
		{"overlong ID", "alice", strings.Repeat("k", 1<<16), "get", mcptool.ErrTaskNotFound},
		{"wildcard ID", "alice", "*", "get", mcptool.ErrTaskNotFound},
		{"subject ID", "alice", "a.>", "cancel", mcptool.ErrTaskNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			switch c.op {
			case "get":
				_, err = store.Get(ctx, c.owner, c.id)
			case "cancel":
				_, err = store.Cancel(ctx, c.owner, c.id)
			case "update":
				err = store.Update(ctx, c.owner, c.id, map[string]json.RawMessage{"k": json.RawMessage(`{}`)})
			}
			if !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.op, err, c.want)
			}
		})
	}
	if got, _ := store.Get(ctx, "alice", mine.TaskID); got.Status != mcptool.StatusWorking || got.StatusMessage != "queued: waiting for a worker" {
		t.Errorf("a foreign request changed the task: %+v", got)
	}
	// Bounds: two per owner, three in all.
	if _, err := call("alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := call("alice"); !errors.Is(err, mcptool.ErrTooManyTasks) {
		t.Errorf("alice's third task: %v, want ErrTooManyTasks", err)
	}
	if _, err := call("bob"); err != nil {
		t.Errorf("bob's first task: %v", err)
	}
	if _, err := call("carol"); !errors.Is(err, mcptool.ErrTooManyTasks) {
		t.Errorf("the fourth task in all: %v, want ErrTooManyTasks", err)
	}
	if list, err := store.List(ctx, "alice"); err != nil || len(list) != 2 {
		t.Errorf("alice's list: %d tasks, %v", len(list), err)
	}
	// Cancel ends a queued task; a worker started later never runs it.
	got, err := store.Cancel(ctx, "alice", mine.TaskID)
	if err != nil || got.Status != mcptool.StatusCancelled {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	var ran atomic.Int32
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("slow", "Counts.", func(context.Context, struct{}) (string, error) {
		ran.Add(1)
		return "ran", nil
	})))
	w, err := store.Jobs().Work(r, "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	list, _ := store.List(ctx, "alice")
	other := list[0].TaskID
	if other == mine.TaskID {
		other = list[1].TaskID
	}
	eventually(t, "alice's other task completes", func() bool {
		got, err := store.Get(ctx, "alice", other)
		return err == nil && got.Status == mcptool.StatusCompleted
	})
	if got, _ := store.Get(ctx, "alice", mine.TaskID); got.Status != mcptool.StatusCancelled {
		t.Errorf("the cancelled task: %+v", got)
	}
	// Cancel of a completed task leaves it completed.
	if got, err := store.Cancel(ctx, "alice", other); err != nil || got.Status != mcptool.StatusCompleted {
		t.Errorf("cancel after completion: %+v %v", got, err)
	}
	eventually(t, "bob's task runs too", func() bool { return ran.Load() == 2 }) // alice's cancelled one never
}

// TestDurableTaskCancelRunning: tasks/cancel of a task whose job is
// running cancels the tool's context on its worker; what the tool returns
// then is not recorded, the task stays cancelled, and the job leaves the
// work queue (acknowledged), so it never runs again.
func TestDurableTaskCancelRunning(t *testing.T) {
	ns := startNATS(t)
	nc := connect(t, ns)
	dir := t.TempDir()
	ctx := context.Background()
	store, err := mcptasks.Open(ctx, nc, &mcptasks.Options{Jobs: principalJobs()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r := tool.NewRegistry()
	r.Register(slowTool(dir))
	w, err := store.Jobs().Work(r, "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rec, err := store.Create(ctx, mcptool.TaskCall{Owner: "alice", Tool: "slow", Args: json.RawMessage(`{"text":"z"}`)})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker runs it", func() bool { return len(lines(filepath.Join(dir, "starts"))) == 1 })
	if got, err := store.Cancel(ctx, "alice", rec.TaskID); err != nil || got.Status != mcptool.StatusCancelled {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	js, _ := jetstream.New(nc)
	eventually(t, "the job leaves the work queue", func() bool {
		st, err := js.Stream(ctx, mcptasks.DefaultStream)
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	got, err := store.Get(ctx, "alice", rec.TaskID)
	if err != nil || got.Status != mcptool.StatusCancelled || got.ToolResult != nil {
		t.Errorf("after the run ended: %+v %v", got, err)
	}
	if starts, done := lines(filepath.Join(dir, "starts")), lines(filepath.Join(dir, "done")); len(starts) != 1 || len(done) != 0 {
		t.Errorf("starts %v, done %v: want one start, no end", starts, done)
	}
}

// TestDurableTaskExpires: a task is gone after its TTL, for its owner too.
func TestDurableTaskExpires(t *testing.T) {
	ns := startNATS(t)
	nc := connect(t, ns)
	ctx := context.Background()
	store, err := mcptasks.Open(ctx, nc, &mcptasks.Options{Limits: mcptool.TaskLimits{TTL: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rec, err := store.Create(ctx, mcptool.TaskCall{Owner: "alice", Tool: "slow", Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, "alice", rec.TaskID); err != nil {
		t.Fatalf("before the TTL (control): %v", err)
	}
	eventually(t, "the task expires", func() bool {
		_, err := store.Get(ctx, "alice", rec.TaskID)
		return errors.Is(err, mcptool.ErrTaskNotFound)
	})
}
