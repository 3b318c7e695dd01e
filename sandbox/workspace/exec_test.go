//go:build linux

package workspace

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/oteltool"
	"github.com/miniopenclaw/tool/sandbox"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// sandboxWorkspace returns a workspace the sandbox user can reach and write.
func sandboxWorkspace(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "clawtool-ws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o755)
	if os.Geteuid() == 0 {
		os.Chown(ws, sandbox.DefaultUID, sandbox.DefaultUID)
	}
	return ws
}

func TestExecTool(t *testing.T) {
	ws := sandboxWorkspace(t)
	ts, err := New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	e := &env{ws: ws, ts: ts}

	r := e.call(t, "exec", ExecArgs{Argv: []string{"sh", "-c", "echo made > out.txt; cat out.txt; printf '\\033[31mred'"}})
	if r.IsError || !strings.Contains(r.Output, "made\n") || !strings.Contains(r.Output, `\x1b[31mred`) || !strings.Contains(r.Output, "[exited with status 0]") {
		t.Errorf("exec = %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(b) != "made\n" {
		t.Errorf("the command's file in the workspace: %q", b)
	}
	if layers, _ := r.Metadata["sandbox_layers"].([]string); len(layers) == 0 || r.Metadata["outcome"] != "exited" {
		t.Errorf("metadata %v lacks the layers or outcome", r.Metadata)
	}
	if _, fell := r.Metadata["sandbox_fallback"]; r.Metadata["sandbox_mode"] != "native" || fell {
		t.Errorf("metadata %v: want sandbox_mode native and no sandbox_fallback", r.Metadata)
	}

	// Arguments are data: no shell sees them.
	r = e.call(t, "exec", ExecArgs{Argv: []string{"echo", "a; touch pwned", "$(id)"}})
	if r.IsError || !strings.Contains(r.Output, "a; touch pwned $(id)") {
		t.Errorf("exec echo = %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
		t.Error("an argument was run as a shell command")
	}

	r = e.call(t, "exec", ExecArgs{Argv: []string{"sh", "-c", "exit 4"}})
	if !r.IsError || r.Metadata["exit_code"] != 4 || !strings.Contains(r.Error, "exited with status 4") {
		t.Errorf("failing exec = %+v", r)
	}
	for _, args := range []ExecArgs{{Shell: "echo hi"}, {}, {Argv: []string{"x"}, Shell: "y"}} {
		if r := e.call(t, "exec", args); !r.IsError {
			t.Errorf("exec(%+v) = %+v, want refusal", args, r)
		}
	}
}

// TestExecReportsWhatWasNotApplied checks that what the write budget's
// apply step refused reaches the model: a fifo the command made stays out
// of the host workspace, and the result's text and not_applied metadata
// say so, beside the file that was applied.
func TestExecReportsWhatWasNotApplied(t *testing.T) {
	ws := sandboxWorkspace(t)
	ts, err := New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	e := &env{ws: ws, ts: ts}
	r := e.call(t, "exec", ExecArgs{Argv: []string{"sh", "-c", "mkfifo pipe && echo kept > kept"}})
	got, _ := r.Metadata["not_applied"].([]string)
	if r.IsError || len(got) != 1 || got[0] != "pipe: a fifo is not applied" || !strings.Contains(r.Output, "[changes not applied to the workspace: pipe: a fifo is not applied]") {
		t.Errorf("exec = %+v", r)
	}
	if _, err := os.Lstat(filepath.Join(ws, "pipe")); err == nil {
		t.Error("the fifo reached the host workspace")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "kept")); string(b) != "kept\n" {
		t.Errorf("the applied file: %q", b)
	}
}

func TestExecToolShellWhenAllowed(t *testing.T) {
	ts, err := New(sandbox.Policy{Workspace: sandboxWorkspace(t), AllowShell: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	e := &env{ts: ts}
	if r := e.call(t, "exec", ExecArgs{Shell: "echo $((1+2))"}); r.IsError || !strings.HasPrefix(r.Output, "3\n") {
		t.Errorf("exec shell = %+v", r)
	}
}

func TestExecRecordsLayersOnSpan(t *testing.T) {
	ts, err := New(sandbox.Policy{Workspace: sandboxWorkspace(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	reg := tool.NewRegistry()
	if err := ts.Register(reg); err != nil {
		t.Fatal(err)
	}
	ex := tool.NewExecutor(reg, tool.WithMiddleware(oteltool.New(oteltool.WithTracerProvider(tp)).Middleware))
	outs, err := ex.Run(context.Background(), []tool.Call{{Name: "exec", Args: json.RawMessage(`{"argv":["true"]}`)}})
	if err != nil || outs[0].Result.IsError {
		t.Fatalf("exec: %v %+v", err, outs)
	}
	got := map[string]string{}
	for _, kv := range rec.Ended()[0].Attributes() {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	if !strings.Contains(got["sandbox.layers"], "landlock") || got["sandbox.outcome"] != "exited" || got["sandbox.exit_code"] != "0" {
		t.Errorf("span attributes %v", got)
	}
}

// modeBackend returns a fixed Result, as a container backend that fell
// back would.
type modeBackend struct{ r sandbox.Result }

func (b modeBackend) Run(context.Context, sandbox.Policy, []string, io.Reader) (*sandbox.Result, error) {
	r := b.r
	return &r, nil
}

func TestExecReportsModeAndFallback(t *testing.T) {
	for _, tc := range []struct {
		name     string
		r        sandbox.Result
		fallback any
	}{
		{"server", sandbox.Result{Outcome: sandbox.Exited, Mode: sandbox.ModeWarmServer}, nil},
		{"fallback", sandbox.Result{Outcome: sandbox.Exited, Mode: sandbox.ModeWarmExec, Fallback: "no server here"}, "no server here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := New(sandbox.Policy{Workspace: t.TempDir()}, WithBackend(modeBackend{tc.r}))
			if err != nil {
				t.Fatal(err)
			}
			defer ts.Close()
			e := &env{ts: ts}
			r := e.call(t, "exec", ExecArgs{Argv: []string{"true"}})
			if r.Metadata["sandbox_mode"] != string(tc.r.Mode) || r.Metadata["sandbox_fallback"] != tc.fallback {
				t.Errorf("metadata %v: want sandbox_mode %s and sandbox_fallback %v", r.Metadata, tc.r.Mode, tc.fallback)
			}
		})
	}
}

// TestFileToolsAndExecShareOwnership mixes the file tools and exec, as
// root, in workspaces a user made: root's own (mkdir /tmp/ws) and another
// user's. write_file's new file and directory belong to the workspace's
// owner, exec can append to them, edit_file keeps the owner of what it
// replaces, and what exec made belongs to the owner too.
func TestFileToolsAndExecShareOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("ownership as root: the test needs root")
		}
		t.Skip("ownership as root: the test needs root")
	}
	for _, owner := range []int{0, 1000} {
		t.Run("owner "+strconv.Itoa(owner), func(t *testing.T) {
			base := t.TempDir()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			ws := filepath.Join(base, "ws")
			must(os.Mkdir(ws, 0o755))
			must(os.Chown(ws, owner, owner))
			ts, err := New(sandbox.Policy{Workspace: ws})
			must(err)
			defer ts.Close()
			e := &env{ws: ws, ts: ts}
			if r := e.call(t, "write_file", WriteArgs{Path: "notes/a.txt", Content: "from write_file\n"}); r.IsError {
				t.Fatalf("write_file: %+v", r)
			}
			r := e.call(t, "exec", ExecArgs{Argv: []string{"sh", "-c", "echo from exec >> notes/a.txt && echo made > b.txt"}})
			if r.IsError {
				t.Fatalf("exec: %+v", r)
			}
			if r := e.call(t, "edit_file", EditArgs{Path: "b.txt", Old: "made", New: "edited"}); r.IsError {
				t.Fatalf("edit_file: %+v", r)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "notes/a.txt")); string(b) != "from write_file\nfrom exec\n" {
				t.Errorf("notes/a.txt = %q", b)
			}
			for _, p := range []string{"notes", "notes/a.txt", "b.txt"} {
				st, err := os.Lstat(filepath.Join(ws, p))
				must(err)
				if sys := st.Sys().(*syscall.Stat_t); int(sys.Uid) != owner || int(sys.Gid) != owner {
					t.Errorf("%s belongs to %d:%d, want the workspace owner %d", p, sys.Uid, sys.Gid, owner)
				}
			}
		})
	}
}
