package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/helper"
	"github.com/miniopenclaw/tool/sandbox/internal/protected"
)

func TestRunEcho(t *testing.T) {
	requireSandbox(t)
	r, err := Run(context.Background(), Policy{}, "echo", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || string(r.Stdout) != "hello\n" {
		t.Fatalf("result %+v stdout %q stderr %q", r, r.Stdout, r.Stderr)
	}
	want := Policy{}.layers()
	if Probe().Has(LayerCgroup) {
		want = append([]Layer{LayerCgroup}, want...)
	}
	if !slices.Equal(r.Layers, want) {
		t.Errorf("result layers %v, want %v", r.Layers, want)
	}
}

func TestRunExitCodesAndStreams(t *testing.T) {
	requireSandbox(t)
	r, err := Run(context.Background(), Policy{}, "sh", "-c", "echo out; echo err >&2; exit 7")
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != Exited || r.ExitCode != 7 || string(r.Stdout) != "out\n" || string(r.Stderr) != "err\n" {
		t.Errorf("got outcome %s code %d stdout %q stderr %q", r.Outcome, r.ExitCode, r.Stdout, r.Stderr)
	}
}

// TestLayersInPlace checks what the command itself sees: no capabilities in
// any set, no_new_privs, a seccomp filter, no supplementary groups, and its
// root mapped to the unprivileged host id.
func TestLayersInPlace(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed(t, context.Background(), DefaultNative(), f.policy(), "status")
	out := string(r.Stdout)
	for _, want := range []string{
		"CapEff: 0000000000000000", "CapPrm: 0000000000000000", "CapBnd: 0000000000000000", "CapAmb: 0000000000000000",
		"NoNewPrivs: 1", "Seccomp: 2", "Groups:;", "uid_map 0 65534 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status %q lacks %q", out, want)
		}
	}
}

func TestRunRefusesMissingLayer(t *testing.T) {
	requireSandbox(t)
	old := probeForRun
	t.Cleanup(func() { probeForRun = old })
	probeForRun = func() Report {
		r := Probe()
		out := Report{}
		for _, s := range r.Layers {
			if s.Layer == LayerLandlock {
				s.Available, s.Detail = false, "kernel Landlock ABI 0"
			}
			out.Layers = append(out.Layers, s)
		}
		return out
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	_, err := Run(context.Background(), Policy{ReadOnly: []string{dir}}, "touch", marker)
	var le *LayerError
	if !errors.As(err, &le) || le.Layer != LayerLandlock {
		t.Fatalf("Run = %v, want a *LayerError naming landlock", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although the policy was refused")
	}
	// A policy that knowingly does without the layer runs.
	r, err := Run(context.Background(), Policy{Without: []Layer{LayerLandlock}}, "true")
	if err != nil || !r.OK() || slices.Contains(r.Layers, LayerLandlock) {
		t.Fatalf("Run without landlock = %+v, %v", r, err)
	}
}

func TestProbeReportsEveryLayer(t *testing.T) {
	requireSandbox(t)
	rep := Probe()
	for _, l := range append(RequiredLayers(), LayerNetNS) {
		if !rep.Has(l) {
			t.Errorf("layer %s missing on this host: %s", l, rep)
		}
	}
	if !strings.Contains(rep.String(), "ok      landlock") {
		t.Errorf("String() = %q", rep.String())
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	requireSandbox(t)
	if _, err := Run(context.Background(), Policy{}); err == nil {
		t.Error("Run with no command succeeded")
	}
	if _, err := Run(context.Background(), Policy{Env: []string{"AWS_SECRET_ACCESS_KEY=x"}}, "true"); err == nil {
		t.Error("Run with a secret in the environment succeeded")
	}
	_, err := Run(context.Background(), Policy{}, "no-such-command-xyz")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Run of a missing command = %v, want os.ErrNotExist", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Policy{}, "true"); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a done context = %v", err)
	}
}

func TestCmdDropIn(t *testing.T) {
	requireSandbox(t)
	cmd := CommandContext(context.Background(), Policy{}, "sh", "-c", "cat; exit 3")
	cmd.Stdin = strings.NewReader("from stdin")
	out, err := cmd.Output()
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 3 || string(out) != "from stdin" {
		t.Fatalf("Output = %q, %v; want the input back and exit status 3", out, err)
	}
	if err := cmd.Run(); err == nil {
		t.Error("a Cmd ran twice")
	}
	if err := CommandContext(context.Background(), Policy{}, "true").Run(); err != nil {
		t.Errorf("true: %v", err)
	}
}

func TestSetupFailureIsAnError(t *testing.T) {
	requireSandbox(t)
	_, err := Run(context.Background(), Policy{Workspace: "/nonexistent-clawtool-ws"}, "true")
	if err == nil || !strings.Contains(err.Error(), "setting up the sandbox failed") {
		t.Fatalf("Run with a missing workspace = %v", err)
	}
}

// TestAgentDeathKillsRun runs an agent (this test binary) that starts a
// sandboxed sleep, kills the agent, and checks the sleep is gone.
func TestAgentDeathKillsRun(t *testing.T) {
	f := newFixture(t)
	mark := testMark() + "-agent"
	agent := startAgent(t, f, mark)
	// Wait for the sandboxed sleep itself: a process carrying the mark
	// whose command line ends in "sleep".
	sleeping := func() bool {
		for _, pid := range marked(mark) {
			cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if strings.HasSuffix(string(cl), "\x00sleep\x00") {
				return true
			}
		}
		return false
	}
	if !waitFor(sleeping) {
		agent.Process.Kill()
		agent.Wait()
		t.Fatalf("the agent's sandboxed command never started")
	}
	agent.Process.Signal(syscall.SIGKILL)
	agent.Wait()
	if !waitFor(func() bool { return len(marked(mark)) == 0 }) {
		for _, pid := range marked(mark) {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Logf("left: %d %q\n%s", pid, cl, st)
		}
		killLeftovers(mark)
		t.Fatal("the sandboxed command outlived the agent")
	}
}

// waitFor polls cond a bounded number of times.
func waitFor(cond func() bool) bool {
	for range 3000 {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// TestWithoutUserNamespace checks that doing without the user namespace
// drops every namespace and runs the command as the unprivileged user, with
// Landlock and seccomp still in place.
func TestWithoutUserNamespace(t *testing.T) {
	requireSandbox(t)
	p := Policy{Without: []Layer{LayerUserNS}}
	r, err := Run(context.Background(), p, "sh", "-c", "id -u; grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status | tr -s '\\t' ' '; cat /etc/shadow")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"65534\n", "NoNewPrivs: 1", "Seccomp: 2"} {
		if !strings.Contains(string(r.Stdout), want) {
			t.Errorf("stdout %q lacks %q", r.Stdout, want)
		}
	}
	if r.OK() || !strings.Contains(string(r.Stderr), "Permission denied") {
		t.Errorf("reading /etc/shadow: %s, stderr %q", r.Summary(), r.Stderr)
	}
	for _, l := range r.Layers {
		if namespaceLayer(l) || l == LayerUserNS {
			t.Errorf("layers %v include a namespace", r.Layers)
		}
	}
}

// TestProtectedCreatedIsReported runs in a workspace without .git: a run
// can create .git/hooks/pre-commit in its view (a read-only mount needs
// something to cover). Through the write budget's overlay the apply step
// refuses it and the result names it; with the workspace bound directly
// (the control, Policy.Without LayerWriteBudget) the file reaches the
// host, and the result names it too. An existing protected directory
// stays read-only either way.
func TestProtectedCreatedIsReported(t *testing.T) {
	for _, tc := range []struct {
		without []Layer
		created bool
	}{{nil, false}, {[]Layer{LayerWriteBudget}, true}} {
		t.Run(fmt.Sprint(tc.without), func(t *testing.T) {
			f := newFixture(t)
			must(t, os.MkdirAll(filepath.Join(f.ws, ".vscode"), 0o755))
			must(t, os.Chown(filepath.Join(f.ws, ".vscode"), DefaultUID, DefaultUID))
			p := f.policy()
			p.Env = DefaultEnv()
			p.Without = tc.without
			r, err := Run(context.Background(), p, "sh", "-c", "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit && echo planted; echo y > .vscode/settings.json")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(r.Stdout), "planted") {
				t.Fatalf("the run could not create .git/hooks in its view (the documented limit changed?): %s %q", r.Summary(), r.Stderr)
			}
			if _, err := os.Stat(filepath.Join(f.ws, ".vscode", "settings.json")); err == nil {
				t.Error("the run wrote into the existing protected .vscode")
			}
			_, err = os.Stat(filepath.Join(f.ws, ".git", "hooks", "pre-commit"))
			if created := err == nil; created != tc.created {
				t.Errorf("pre-commit on the host: %v, want %v", created, tc.created)
			}
			if !slices.Equal(r.ProtectedChanged, []string{".git/hooks"}) {
				t.Errorf("ProtectedChanged = %q, want .git/hooks", r.ProtectedChanged)
			}
			if !strings.Contains(r.Text(), "created or changed protected paths: .git/hooks]") {
				t.Errorf("Text() = %q", r.Text())
			}
		})
	}
}

// TestProtectedChangedIsReported checks the comparison after the run on
// its own: without the mount namespace nothing keeps the run from moving
// .git aside and planting a hook and core.fsmonitor in a new one (the
// attack of catalog row A45, which the mounts refuse), and the result
// names every protected path that changed, while a run that leaves them
// alone (writing .git/objects) reports none.
func TestProtectedChangedIsReported(t *testing.T) {
	f := newFixture(t)
	p := f.policy()
	p.Without = []Layer{LayerUserNS}
	// Every default protected path under .git, as .git itself changed.
	underGit := []string{".git/hooks", ".git/config", ".git/commondir", ".git/config.worktree", ".git/worktrees"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"untouched", []string{"write", filepath.Join(f.ws, ".git", "objects", "o1")}, nil},
		{"replaced", []string{"replace", filepath.Join(f.ws, ".git"), "hooks/pre-commit", plantedHook, "config", plantedConfig}, underGit},
		{"claude", []string{"replace", filepath.Join(f.ws, ".claude"), "commands/x.md", "x"}, []string{".claude/commands", ".claude/agents", ".claude/settings.json", ".claude/settings.local.json"}},
		{"gitfile", []string{"append", filepath.Join(f.ws, ".git")}, underGit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			structureSetup(".git")(t, f)
			if tc.name == "gitfile" {
				must(t, os.RemoveAll(filepath.Join(f.ws, ".git")))
				must(t, os.WriteFile(filepath.Join(f.ws, ".git"), []byte("gitdir: /elsewhere\n"), 0o644))
				must(t, os.Chown(filepath.Join(f.ws, ".git"), DefaultUID, DefaultUID))
			}
			r := f.sandboxed(t, context.Background(), DefaultNative(), p, tc.args...)
			if !strings.HasPrefix(string(r.Stdout), "OK") {
				t.Fatalf("the attack did not run: %q %q", r.Stdout, r.Stderr)
			}
			if !slices.Equal(r.ProtectedChanged, tc.want) {
				t.Errorf("ProtectedChanged = %q, want %q", r.ProtectedChanged, tc.want)
			}
		})
	}
}

// TestGitProtected checks which repositories' hooks and config a run
// protects besides the policy's: the one a .git file names inside the
// workspace, and submodules' repositories under modules, at any depth.
func TestGitProtected(t *testing.T) {
	ws := t.TempDir()
	gitdirLayout(t, filepath.Join(ws, ".git"))
	gitdirLayout(t, filepath.Join(ws, ".git", "modules", "a", "b"))
	gitdirLayout(t, filepath.Join(ws, ".git", "modules", "a", "b", "modules", "c"))
	must(t, os.MkdirAll(filepath.Join(ws, ".git", "modules", "notrepo"), 0o755))
	got := mustGit(t, ws, []string{".git/hooks", ".git/config"})
	var want []string
	for _, repo := range []string{".git/modules/a/b", ".git/modules/a/b/modules/c"} {
		want = append(want, repoLeaves(repo)...)
	}
	want = append(repoLeaves(".git"), want...)
	if !slices.Equal(got, want) {
		t.Errorf("directory: %q, want %q", got, want)
	}
	must(t, os.RemoveAll(filepath.Join(ws, ".git")))
	for _, tc := range []struct{ gitdir, want string }{
		{"gitdir: sub/.repo\n", "sub/.repo"},
		{"gitdir: " + filepath.Join(ws, "abs") + "\n", "abs"},
		{"gitdir: ../outside\n", ""},
		{"gitdir: /srv/repo/.git/worktrees/x\n", ""},
		{"not a gitdir\n", ""},
	} {
		must(t, os.WriteFile(filepath.Join(ws, ".git"), []byte(tc.gitdir), 0o644))
		got := mustGit(t, ws, []string{".git/hooks"})
		want := []string{".git/hooks"}
		if tc.want != "" {
			want = append(want, repoLeaves(tc.want)...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: %q, want %q", tc.gitdir, got, want)
		}
	}
	if got := mustGit(t, ws, []string{".bashrc"}); !slices.Equal(got, []string{".bashrc"}) {
		t.Errorf("without git's paths: %q", got)
	}
	// A list of its own that names .git/hooks gets what git reads in
	// place of the hooks and config too, in a workspace without .git.
	must(t, os.RemoveAll(filepath.Join(ws, ".git")))
	if got, want := mustGit(t, ws, []string{".git/hooks"}), append([]string{".git/hooks"}, repoLeaves(".git")[1:]...); !slices.Equal(got, want) {
		t.Errorf("no .git, a list of its own: %q, want %q", got, want)
	}
}

// mustGit is protected.Git, failing the test on its error.
func mustGit(t *testing.T, ws string, list []string) []string {
	t.Helper()
	got, err := protected.Git(ws, list)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// repoLeaves is what protected.Git protects of the repository repo.
func repoLeaves(repo string) []string {
	var out []string
	for _, leaf := range []string{"hooks", "config", "commondir", "config.worktree", "worktrees"} {
		out = append(out, repo+"/"+leaf)
	}
	return out
}

// TestWriteBudgetSpent checks when a run's /tmp counts as used up.
func TestWriteBudgetSpent(t *testing.T) {
	const size = 64 << 20
	for _, tc := range []struct {
		e    helper.Exit
		want bool
	}{
		{helper.Exit{TmpFree: size, TmpSize: size, TmpInodes: 100}, false},
		{helper.Exit{TmpFree: size / 8, TmpSize: size, TmpInodes: 100}, false},
		{helper.Exit{TmpFree: 1 << 20, TmpSize: size, TmpInodes: 100}, true}, // a 63 MiB fallocate took the rest
		{helper.Exit{TmpFree: 0, TmpSize: size, TmpInodes: 100}, true},
		{helper.Exit{TmpFree: size, TmpSize: size, TmpInodes: 0}, true}, // no inode left
		{helper.Exit{}, false}, // statfs failed: nothing known
	} {
		if got := writeBudgetSpent(tc.e); got != tc.want {
			t.Errorf("writeBudgetSpent(%+v) = %v, want %v", tc.e, got, tc.want)
		}
	}
	r := &Result{Outcome: WriteLimit, ExitCode: 1}
	if got := r.Summary(); got != "failed: write limit reached (exit status 1)" {
		t.Errorf("Summary() = %q", got)
	}
}
