package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/nats-io/nats.go"
)

// A proc is a process this test started: this test binary run as
// clawtool.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and been reaped
}

// cliResult is how a clawtool process ended: its exit code and output.
type cliResult struct {
	code           int
	stdout, stderr string
}

// cli runs this test binary as clawtool with args and the environment
// env added, and waits for it (bounded).
func cli(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(append(os.Environ(), asCLIEnv+"=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok || ctx.Err() != nil {
			t.Fatalf("clawtool %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return cliResult{code, out.String(), errOut.String()}
}

// startCLI runs the test binary as clawtool with args and waits for a
// line on its stderr that contains ready, returning that line. The
// process is killed and reaped when the test ends.
func startCLI(t *testing.T, ready string, env []string, args ...string) (*proc, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), asCLIEnv+"=1"), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	bound := time.NewTimer(wait)
	defer bound.Stop()
	for {
		select {
		case line := <-lines:
			if strings.Contains(line, ready) {
				return p, line
			}
		case <-p.done:
			t.Fatalf("clawtool %s exited before it was ready", strings.Join(args, " "))
		case <-bound.C:
			t.Fatalf("clawtool %s: no %q on stderr", strings.Join(args, " "), ready)
		}
	}
}

// kill sends SIGKILL and waits until the process is reaped.
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(wait):
	}
}

// children returns the PIDs whose parent is pid, from /proc.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// the last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// noLeftovers fails the test if any of pids still runs once the bound is
// up, killing it so that nothing outlives the test.
func noLeftovers(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("process %d outlived the test", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// instancesServing asks every clawtool service for its INFO and returns
// the ids of the instances that serve toolName.
func instancesServing(nc *nats.Conn, toolName string) map[string]bool {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil
	}
	defer sub.Unsubscribe()
	nc.PublishRequest("$SRV.INFO.clawtool", inbox, nil)
	ids := map[string]bool{}
	for {
		m, err := sub.NextMsg(300 * time.Millisecond)
		if err != nil {
			return ids
		}
		var info struct {
			ID        string `json:"id"`
			Endpoints []struct {
				Name string `json:"name"`
			} `json:"endpoints"`
		}
		if json.Unmarshal(m.Data, &info) != nil {
			continue
		}
		for _, ep := range info.Endpoints {
			if ep.Name == toolName {
				ids[info.ID] = true
			}
		}
	}
}

// requestsServed sums the requests every instance's endpoint toolName
// received, from $SRV.STATS.
func requestsServed(nc *nats.Conn, toolName string) int {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return 0
	}
	defer sub.Unsubscribe()
	nc.PublishRequest("$SRV.STATS.clawtool", inbox, nil)
	n := 0
	for {
		m, err := sub.NextMsg(300 * time.Millisecond)
		if err != nil {
			return n
		}
		var stats struct {
			Endpoints []struct {
				Name        string `json:"name"`
				NumRequests int    `json:"num_requests"`
			} `json:"endpoints"`
		}
		if json.Unmarshal(m.Data, &stats) != nil {
			continue
		}
		for _, ep := range stats.Endpoints {
			if ep.Name == toolName {
				n += ep.NumRequests
			}
		}
	}
}

// until polls cond every 20 ms until it holds; not holding within wait
// fails the test (a bound, not a timing assertion).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holdCalls starts n calls of remote_wait on gate, each with its own
// bound, and returns the channel their results arrive on.
func holdCalls(local *tool.Registry, n int, gate string, bound time.Duration) <-chan tool.Result {
	out := make(chan tool.Result, n)
	args, _ := json.Marshal(map[string]string{"gate": gate})
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			out <- local.Execute(ctx, "remote_wait", args)
		}()
	}
	return out
}

// TestProcessesSurviveFailures runs a NATS server and three workers as
// real processes of this binary, and an importer here: a worker killed
// with SIGKILL mid-call, then the server killed and restarted.
func TestProcessesSurviveFailures(t *testing.T) {
	tmp := t.TempDir()
	natsProc, url := startNATSServer(t, "")
	addr := strings.TrimPrefix(url, "nats://")

	// Each worker serves the built-ins and remote_wait, a tool of the
	// test MCP server that waits for a file.
	var workers []*proc
	var pids []int
	for range 3 {
		// The MCP server is this binary too; it must not inherit asCLIEnv.
		mcpServer := "env -u " + asCLIEnv + " " + strings.TrimPrefix(remoteServer(t), "env ")
		w, _ := startCLI(t, "serving", nil, "worker", "--nats", url, "--mcp", mcpServer)
		workers = append(workers, w)
		pids = append(pids, w.cmd.Process.Pid)
		pids = append(pids, children(w.cmd.Process.Pid)...)
	}
	pids = append(pids, natsProc.cmd.Process.Pid)
	defer noLeftovers(t, pids)

	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	until(t, "three workers serving remote_wait", func() bool { return len(instancesServing(nc, "remote_wait")) == 3 })

	local := tool.NewRegistry(tool.WithLogger(slog.New(slog.DiscardHandler)))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	im, err := natstool.Import(ctx, nc, local,
		&natstool.ImportOptions{DiscoveryWait: 5 * time.Second, DiscoveryQuiet: 300 * time.Millisecond, Resync: -1, WorkerTimeout: 3 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()

	echoAll := func(what string, n int) {
		t.Helper()
		for i := range n {
			res := local.Execute(context.Background(), "remote_echo", json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i)))
			if res.IsError || !strings.Contains(res.Output, fmt.Sprintf("remote: %d", i)) {
				t.Fatalf("%s: call %d: %+v", what, i, res)
			}
		}
	}
	echoAll("before any failure", 10)

	t.Run("worker killed mid-call", func(t *testing.T) {
		// 30 calls spread over 3 workers: the chance that the killed one
		// holds none of them is (2/3)^30, about 5 in a million.
		const calls = 30
		const bound = time.Minute
		gate := filepath.Join(tmp, "gate1")
		base := requestsServed(nc, "remote_wait")
		results := holdCalls(local, calls, gate, bound)
		until(t, "every call to reach a worker", func() bool { return requestsServed(nc, "remote_wait")-base == calls })

		workers[0].kill()
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		var ok, lost int
		for range calls {
			select {
			case res := <-results:
				switch {
				case !res.IsError && res.Output == "opened":
					ok++
				case res.Kind == tool.KindUnavailable && strings.Contains(res.Error, "stopped answering"):
					lost++
				default:
					t.Errorf("in-flight call ended with %+v, want opened or unavailable", res)
				}
			case <-time.After(bound + wait):
				t.Fatal("an in-flight call never ended")
			}
		}
		if lost == 0 || ok == 0 {
			t.Errorf("%d calls opened and %d were lost; want some of each (the killed worker held some)", ok, lost)
		}
		// Later calls all reach the two workers left.
		echoAll("after the kill", 30)
	})

	t.Run("server restarted", func(t *testing.T) {
		const calls = 6
		gate := filepath.Join(tmp, "gate2")
		base := requestsServed(nc, "remote_wait")
		results := holdCalls(local, calls, gate, time.Minute)
		until(t, "every call to reach a worker", func() bool { return requestsServed(nc, "remote_wait")-base == calls })

		natsProc.kill()
		// While the server is down, a new call fails at once.
		until(t, "the importer to notice", func() bool { return !nc.IsConnected() })
		if res := local.Execute(context.Background(), "remote_echo", json.RawMessage(`{"text":"x"}`)); res.Kind != tool.KindUnavailable || !strings.Contains(res.Error, "connection to the NATS server is") {
			t.Errorf("a call while the server is down: %+v", res)
		}
		for range calls {
			select {
			case res := <-results:
				if res.Kind != tool.KindUnavailable || !strings.Contains(res.Error, "connection to the NATS server was lost") {
					t.Errorf("in-flight call ended with %+v, want unavailable", res)
				}
			case <-time.After(time.Minute + wait):
				t.Fatal("an in-flight call never ended")
			}
		}
		// The same address again: workers and importer reconnect on their own.
		restarted, _ := startCLI(t, "NATS server at", nil, "nats-server", "--addr", addr)
		defer noLeftovers(t, []int{restarted.cmd.Process.Pid})
		until(t, "workers to resubscribe", func() bool { return len(instancesServing(nc, "remote_wait")) == 2 })
		os.WriteFile(gate, nil, 0o600)
		echoAll("after the restart", 30)
		restarted.kill()
	})
	for _, w := range workers {
		w.kill()
	}
	natsProc.kill()
}

// TestProcessJobSurvivesWorkerKill kills with SIGKILL the worker process
// that holds a durable job: the job goes to the other worker and is
// completed once.
func TestProcessJobSurvivesWorkerKill(t *testing.T) {
	tmp := t.TempDir()
	natsProc, url := startNATSServer(t, filepath.Join(tmp, "js"))
	mcpServer := "env -u " + asCLIEnv + " " + strings.TrimPrefix(remoteServer(t), "env ")
	worker := func() *proc {
		w, _ := startCLI(t, "serving", nil, "worker", "--nats", url, "--jobs", "--jobs-ack-wait", "1s", "--mcp", mcpServer)
		return w
	}
	first := worker()
	pids := append([]int{natsProc.cmd.Process.Pid, first.cmd.Process.Pid}, children(first.cmd.Process.Pid)...)
	defer noLeftovers(t, pids)

	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	jobs, err := natstool.OpenJobs(ctx, nc, &natstool.JobsOptions{AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(tmp, "gate")
	args, _ := json.Marshal(map[string]string{"gate": gate})
	id, err := jobs.Submit(ctx, "remote_wait", args, &natstool.SubmitOptions{IdempotencyKey: "render-1"})
	if err != nil {
		t.Fatal(err)
	}
	until(t, "the first worker to take the job", func() bool {
		job, err := jobs.Job(ctx, id)
		return err == nil && job.State == natstool.JobRunning
	})
	second := worker()
	pids = append(pids, second.cmd.Process.Pid)
	pids = append(pids, children(second.cmd.Process.Pid)...)
	first.kill()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := jobs.Wait(ctx, id)
	if err != nil || res.IsError || res.Output != "opened" {
		t.Fatalf("job result: %+v, %v", res, err)
	}
	job, err := jobs.Job(ctx, id)
	if err != nil || job.State != natstool.JobDone || job.Attempts != 2 {
		t.Fatalf("record: %+v, %v; want done on the second attempt", job, err)
	}
	// Resubmitting returns the finished job; nothing runs again.
	again, err := jobs.Submit(ctx, "remote_wait", args, &natstool.SubmitOptions{IdempotencyKey: "render-1"})
	if err != nil || again != id {
		t.Fatalf("resubmit: %s, %v; want %s", again, err, id)
	}
	if job2, _ := jobs.Job(ctx, id); job2.Attempts != 2 || !job2.Updated.Equal(job.Updated) {
		t.Fatalf("the resubmission touched the job: %+v", job2)
	}
	second.kill()
	natsProc.kill()
}
