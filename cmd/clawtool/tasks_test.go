package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/golden"
	"github.com/miniopenclaw/tool/mcptool"
)

// taskCLIServer serves, on loopback, a tool "build" that runs as a task:
// it reports progress, then waits until a tasks/get answer carrying that
// progress has been sent, so that every client sees the same states; and
// a tool "hang" that runs until its task is cancelled.
func taskCLIServer(t *testing.T) string {
	r := tool.NewRegistry()
	var once sync.Once
	seen := make(chan struct{})
	r.Register(tool.Must(tool.New("build", "Builds.", func(ctx context.Context, _ struct{}) (string, error) {
		tool.ReportProgress(ctx, 1, 2, "compiling")
		select {
		case <-seen:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "built", nil
	}, tool.WithTask(tool.TaskOptional))))
	r.Register(tool.Must(tool.New("hang", "Hangs.", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.WithTask(tool.TaskRequired))))
	srv := mcptool.NewServer(r, mcptool.WithTasks(mcptool.TaskLimits{PollInterval: time.Millisecond, PollsPerSecond: 1000, PollBurst: 1000}))
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rec := &teeWriter{ResponseWriter: w}
		srv.ServeHTTP(rec, req)
		if req.Header.Get("Mcp-Method") == "tasks/get" && bytes.Contains(rec.body.Bytes(), []byte("compiling")) {
			once.Do(func() { close(seen) })
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// teeWriter keeps a copy of the body it writes.
type teeWriter struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (w *teeWriter) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// startTask calls tool name of the server at url as a task, by hand, and
// returns the task's ID.
func startTask(t *testing.T, url, name string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": name, "arguments": map[string]any{}, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{mcptool.TasksExtension: map[string]any{}}},
		}}})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result mcptool.CreateTaskResult `json:"result"`
	}
	b, _ := io.ReadAll(resp.Body)
	if json.Unmarshal(b, &out) != nil || out.Result.TaskID == "" {
		t.Fatalf("tools/call %s: %s", name, b)
	}
	return out.Result.TaskID
}

var (
	taskIDPattern = regexp.MustCompile(`task [A-Za-z0-9_-]{16,}|"taskId": "[A-Za-z0-9_-]{16,}"`)
	timePattern   = regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+Z`)
)

// TestTasksCLI: clawtool call prints the states of a call that became a
// task on stderr, one line per change, and prints the result as for any
// call; clawtool tasks get and cancel show and cancel a server's task,
// as text or JSON; usage errors and an unknown task get clear messages.
// Task IDs, times and the server's URL are replaced in the golden files.
func TestTasksCLI(t *testing.T) {
	url := taskCLIServer(t)
	hang := startTask(t, url, "hang")
	for _, tt := range []struct {
		name string
		args []string
		code int
	}{
		{"call_task", []string{"call", "--no-builtins", "--mcp-url", url, "build"}, exitOK},
		{"tasks_get", []string{"tasks", "get", hang, "--mcp-url", url}, exitOK},
		{"tasks_get_json", []string{"tasks", "get", hang, "--mcp-url", url, "--json"}, exitOK},
		{"tasks_cancel", []string{"tasks", "cancel", hang, "--mcp-url", url}, exitOK},
		{"tasks_get_cancelled", []string{"tasks", "get", hang, "--mcp-url", url}, exitOK},
		{"tasks_get_unknown", []string{"tasks", "get", "AAAAAAAAAAAAAAAAAAAAAA", "--mcp-url", url}, exitToolError},
		{"tasks_no_server", []string{"tasks", "get", hang}, exitUsage},
		{"tasks_two_servers", []string{"tasks", "get", hang, "--mcp-url", url, "--mcp", "true"}, exitUsage},
		{"tasks_bad_subcommand", []string{"tasks", "list", "--mcp-url", url}, exitUsage},
		{"tasks_no_id", []string{"tasks", "cancel", "--mcp-url", url}, exitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			code := run(ctx, tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("clawtool %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.code, &stdout, &stderr)
			}
			got := fmt.Sprintf("$ clawtool %s\n-- exit %d --\n-- stdout --\n%s-- stderr --\n%s", strings.Join(tt.args, " "), code, &stdout, &stderr)
			got = strings.ReplaceAll(got, hang, "$TASK")
			got = strings.ReplaceAll(got, url, "$URL")
			got = taskIDPattern.ReplaceAllStringFunc(got, func(s string) string {
				if strings.HasPrefix(s, "task ") {
					return "task $TASK"
				}
				return `"taskId": "$TASK"`
			})
			got = timePattern.ReplaceAllString(got, "$$TIME")
			golden.File(t, filepath.Join("testdata", "cli", tt.name+".golden"), []byte(got))
		})
	}
}
