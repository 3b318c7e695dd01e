package container

import (
	"context"
	"errors"
	"github.com/miniopenclaw/tool/sandbox"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// testImage is the image .ci/docker-engine.sh builds from busybox-static.
const testImage = "clawtool-test/busybox:1"

// testOwner labels this test binary's containers, apart from anything
// else using the engine.
const testOwner = "clawtool-sandbox-test"

// requireEngine returns a container backend on the engine found through
// DOCKER_HOST or the default socket. Without an engine or the test image
// it fails in CI, where .ci/docker-engine.sh provides both, and skips
// elsewhere with the reason.
func requireEngine(t testing.TB, warm bool) *Backend {
	t.Helper()
	return requireEngineWith(t, Options{Warm: warm})
}

// requireEngineWith is requireEngine with opts (Image and Owner are set).
func requireEngineWith(t testing.TB, opts Options) *Backend {
	t.Helper()
	opts.Image, opts.Owner = testImage, testOwner
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // ok-wallclock
	defer cancel()
	c, err := New(ctx, opts)
	if err == nil {
		if _, err = c.image(ctx, sandbox.Policy{}); err != nil {
			c.Close()
		}
	}
	if err != nil {
		reason := err.Error() + " (run .ci/docker-engine.sh)"
		if os.Getenv("CI") == "true" {
			t.Fatal(reason)
		}
		t.Skip(reason)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		assertNoContainers(t, c.id)
	})
	return c
}

// assertNoContainers checks, through a client of its own, that no
// container of the backend with LabelBackend value id is left.
func assertNoContainers(t testing.TB, id string) {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", LabelBackend+"="+id),
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.Items); n > 0 {
		t.Errorf("%d containers left after Close", n)
	}
}

// containerModes are the ways a container backend runs calls, each with
// the Mode its results must report: the warm server must not fall back in
// the test image.
var containerModes = []struct {
	name string
	opts Options
	mode sandbox.Mode
}{
	{"fresh", Options{}, sandbox.ModeFresh},
	{"warm", Options{Warm: true}, sandbox.ModeWarmServer},
	{"warm-exec", Options{Warm: true, WarmExec: true}, sandbox.ModeWarmExec},
}

// wantMode is the Mode every result of c must report.
func (c *Backend) wantMode() sandbox.Mode {
	switch {
	case !c.opts.Warm:
		return sandbox.ModeFresh
	case c.opts.WarmExec:
		return sandbox.ModeWarmExec
	}
	return sandbox.ModeWarmServer
}

func TestContainerRun(t *testing.T) {
	for _, mode := range containerModes {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngineWith(t, mode.opts)
			ws := t.TempDir()
			os.Chown(ws, sandbox.DefaultUID, sandbox.DefaultUID)
			os.WriteFile(filepath.Join(ws, "a.txt"), []byte("from the workspace\n"), 0o644)
			for _, tc := range []struct {
				name    string
				p       sandbox.Policy
				argv    []string
				stdin   string
				timeout time.Duration
				outcome sandbox.Outcome
				code    int
				stdout  string
				stderr  string
			}{
				{name: "ok", argv: []string{"echo", "hi"}, outcome: sandbox.Exited, stdout: "hi\n"},
				{name: "status", argv: []string{"sh", "-c", "echo oops >&2; exit 7"}, outcome: sandbox.Exited, code: 7, stderr: "oops\n"},
				{name: "workspace", p: sandbox.Policy{Workspace: ws}, argv: []string{"cat", "a.txt"}, outcome: sandbox.Exited, stdout: "from the workspace\n"},
				{name: "stdin", argv: []string{"cat"}, stdin: "piped", outcome: sandbox.Exited, stdout: "piped"},
				{name: "user", argv: []string{"id", "-u"}, outcome: sandbox.Exited, stdout: "65534\n"},
				{name: "environment", p: sandbox.Policy{Env: []string{"A=1"}}, argv: []string{"env"}, outcome: sandbox.Exited, stdout: "A=1\n"},
				{name: "signal", argv: []string{"sh", "-c", "kill -TERM $$"}, outcome: sandbox.Signaled, code: -1},
				{name: "timeout", argv: []string{"sleep", "60"}, timeout: 500 * time.Millisecond, outcome: sandbox.TimedOut, code: -1},
				{name: "output limit", p: sandbox.Policy{Limits: sandbox.Limits{Output: 4096}}, argv: []string{"yes"}, outcome: sandbox.OutputLimit, code: -1},
				{name: "large stdin", argv: []string{"wc", "-c"}, stdin: strings.Repeat("x", 200<<10), outcome: sandbox.Exited, stdout: "204800\n"},
				{name: "stdin unread", argv: []string{"true"}, stdin: strings.Repeat("x", 200<<10), outcome: sandbox.Exited},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ctx := context.Background()
					if tc.timeout > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, tc.timeout)
						defer cancel()
					}
					cmd := sandbox.CommandContext(ctx, tc.p, tc.argv[0], tc.argv[1:]...)
					cmd.Backend = c
					if tc.stdin != "" {
						cmd.Stdin = strings.NewReader(tc.stdin)
					}
					err := cmd.Run()
					r := cmd.Result
					if r == nil {
						t.Fatalf("no result: %v", err)
					}
					if r.Mode != mode.mode || r.Fallback != "" {
						t.Errorf("mode %s (fallback %q), want %s", r.Mode, r.Fallback, mode.mode)
					}
					if r.Outcome != tc.outcome || r.ExitCode != tc.code {
						t.Errorf("got %s %d (%s), want %s %d; stderr %q", r.Outcome, r.ExitCode, r.Summary(), tc.outcome, tc.code, r.Stderr)
					}
					if tc.stdout != "" {
						out := string(r.Stdout)
						if tc.name == "environment" {
							// The engine adds HOSTNAME and the image its PATH.
							if !strings.Contains(out, "A=1\n") || strings.Contains(out, "LANG=") {
								t.Errorf("environment %q: want A=1 and nothing of DefaultEnv", out)
							}
						} else if out != tc.stdout {
							t.Errorf("stdout %q, want %q", out, tc.stdout)
						}
					}
					if tc.stderr != "" && string(r.Stderr) != tc.stderr {
						t.Errorf("stderr %q, want %q", r.Stderr, tc.stderr)
					}
					if tc.outcome == sandbox.OutputLimit && (!r.Truncated || len(r.Stdout) != 4096) {
						t.Errorf("output limit: truncated %v, %d bytes kept, want 4096", r.Truncated, len(r.Stdout))
					}
				})
			}
		})
	}
}

// TestContainerFailsClosed: whatever is missing, nothing runs and the error
// names it.
func TestContainerFailsClosed(t *testing.T) {
	ctx := context.Background()
	if _, err := New(ctx, Options{Host: "unix://" + filepath.Join(t.TempDir(), "none.sock")}); err == nil || !strings.Contains(err.Error(), "no container engine reachable") {
		t.Errorf("no engine: %v, want an error naming the missing engine", err)
	}
	if _, err := sandbox.DefaultNative().Run(ctx, sandbox.Policy{Image: testImage}, []string{"true"}, nil); err == nil || !strings.Contains(err.Error(), "image") {
		t.Errorf("native backend with an image: %v, want a refusal", err)
	}
	c := requireEngine(t, false)
	_, err := c.Run(ctx, sandbox.Policy{Image: "clawtool-test/no-such-image:1"}, []string{"true"}, nil)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "no-such-image") {
		t.Errorf("missing image: %v, want an error naming it", err)
	}
	for _, mode := range containerModes {
		c := requireEngineWith(t, mode.opts)
		if _, err := c.Run(ctx, sandbox.Policy{}, []string{"no-such-command-xyz"}, nil); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s missing command: %v, want os.ErrNotExist", mode.name, err)
		}
	}
}

const orphanEnv = "SBX_ORPHAN"

// TestContainerOrphanCleanup kills a process with SIGKILL while its
// container runs a call, then shows that a new backend of the same owner
// removes the orphan.
func TestContainerOrphanCleanup(t *testing.T) {
	if os.Getenv(orphanEnv) == "1" {
		c, err := New(context.Background(), Options{Image: testImage, Owner: testOwner + "-orphan"})
		if err != nil {
			t.Fatal(err)
		}
		c.Run(context.Background(), sandbox.Policy{}, []string{"sleep", "3600"}, nil) // killed here
		t.Fatal("the call returned")
	}
	c := requireEngine(t, false)
	self, err := os.Executable()
	must(t, err)
	cmd := exec.Command(self, "-test.run=^TestContainerOrphanCleanup$")
	cmd.Env = append(os.Environ(), orphanEnv+"=1")
	must(t, cmd.Start())
	label := processLabel(cmd.Process.Pid)
	cli := c.cli
	filter := make(client.Filters).Add("label", LabelProcess+"="+label)
	running := func() int {
		list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: filter})
		must(t, err)
		return len(list.Items)
	}
	// Wait, bounded by steps rather than time, for the call to start.
	for i := 0; i < 600 && running() == 0; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if running() == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child never started its container")
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	if running() != 1 {
		t.Fatal("the killed process's container is gone already: nothing to clean up")
	}
	again, err := New(context.Background(), Options{Image: testImage, Owner: testOwner + "-orphan"})
	must(t, err)
	defer again.Close()
	if n := running(); n != 0 {
		t.Errorf("%d orphaned containers left after a new start's cleanup", n)
	}
	if n, err := again.Cleanup(context.Background()); n != 0 || err != nil {
		t.Errorf("second cleanup removed %d (%v), want 0", n, err)
	}
}

func okRun(r *sandbox.Result, err error) error {
	if err != nil {
		return err
	}
	if !r.OK() {
		return errors.New(r.Summary() + ": " + string(r.Stderr))
	}
	return nil
}

// TestContainerClassify: an engine reports an exit status and an OOM
// flag; they map onto the outcomes the native backend gives.
func TestContainerClassify(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		oom     bool
		killed  sandbox.Outcome
		stderr  string
		outcome sandbox.Outcome
		code    int
		signal  string
	}{
		{name: "ok", status: 0, outcome: sandbox.Exited},
		{name: "failure", status: 3, outcome: sandbox.Exited, code: 3},
		{name: "fork failure", status: 2, stderr: "sh: can't fork: Resource temporarily unavailable", outcome: sandbox.PIDsLimit, code: 2},
		{name: "allocation failure", status: 1, stderr: "fatal error: out of memory", outcome: sandbox.MemoryLimit, code: 1},
		{name: "oom kill", status: 137, oom: true, outcome: sandbox.MemoryLimit, code: -1, signal: "killed"},
		{name: "sigkill", status: 137, outcome: sandbox.Signaled, code: -1, signal: "killed"},
		{name: "sigterm", status: 143, outcome: sandbox.Signaled, code: -1, signal: "terminated"},
		{name: "cpu limit", status: 128 + 24, outcome: sandbox.CPULimit, code: -1, signal: "CPU time limit exceeded"},
		{name: "timed out", status: 137, killed: sandbox.TimedOut, outcome: sandbox.TimedOut, code: -1, signal: "killed"},
		{name: "output limit", status: 137, killed: sandbox.OutputLimit, outcome: sandbox.OutputLimit, code: -1, signal: "killed"},
		{name: "status above signals", status: 255, outcome: sandbox.Exited, code: 255},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newCall(1 << 10)
			k.stderr.Write([]byte(tc.stderr))
			if tc.killed != "" {
				k.killedFor.Store(tc.killed)
			}
			r := k.result(sandbox.Policy{}, time.Now(), tc.status, tc.oom)
			if r.Outcome != tc.outcome || r.ExitCode != tc.code || r.Signal != tc.signal {
				t.Errorf("status %d oom %v: got %s %d %q, want %s %d %q", tc.status, tc.oom, r.Outcome, r.ExitCode, r.Signal, tc.outcome, tc.code, tc.signal)
			}
		})
	}
}

// TestContainerLayersIsACopy: a caller that empties the layers
// Layers returned does not change what the next container run
// reports in Result.Layers.
func TestContainerLayersIsACopy(t *testing.T) {
	c := requireEngine(t, false)
	want := slices.Clone(Layers())
	got := Layers()
	for i := range got {
		got[i] = "bogus"
	}
	r, err := c.Run(context.Background(), sandbox.Policy{}, []string{"true"}, nil)
	if err := okRun(r, err); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Layers, want) {
		t.Fatalf("Result.Layers = %v after spoiling Layers, want %v", r.Layers, want)
	}
}
