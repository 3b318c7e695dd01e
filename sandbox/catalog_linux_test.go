package sandbox

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// testMark is this test process's marker, carried in the environment of
// every attacker it starts.
func testMark() string { return "clawtool-sbx-" + strconv.Itoa(os.Getpid()) }

// marked lists the processes whose environment carries mark.
func marked(mark string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(env, []byte(markEnv+"="+mark+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func leftovers(mark string) int { return len(marked(mark)) }

func killLeftovers(mark string) {
	for _, pid := range marked(mark) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// A fixture is the file system the catalog attacks: a workspace owned by
// the sandbox user, a world-writable directory outside it, and a directory
// holding the attacker (this test binary).
type fixture struct {
	base, bin, ws, outside string
	attacker               string
	mark                   string
	// fk is a forker of the fixture's own (nil for a container target),
	// the one the forker rows attack unless targetForker names the
	// target's; see forkerPid.
	fk           *forker
	targetForker func() int
}

// startForker starts the fixture's own forker, from a helper program
// built for it, as a backend with NativeOptions.Helper starts one; it is
// stopped when t ends.
func (f *fixture) startForker(t *testing.T) {
	t.Helper()
	fk := &forker{program: BuildHelperProgram(t, ""), timeout: forkerTimeout}
	fk.mu.Lock()
	err := fk.launchLocked()
	fk.mu.Unlock()
	must(t, err)
	t.Cleanup(fk.close)
	f.fk = fk
}

// forkerPid returns the process id of the forker a row attacks: the
// target backend's when it has one running, otherwise the fixture's.
func (f *fixture) forkerPid(t *testing.T) string {
	t.Helper()
	if f.targetForker != nil {
		if pid := f.targetForker(); pid != 0 {
			return strconv.Itoa(pid)
		}
	}
	if f.fk == nil || f.fk.pid() == 0 {
		t.Fatal("no forker to attack")
	}
	return strconv.Itoa(f.fk.pid())
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	requireSandbox(t)
	base, err := os.MkdirTemp("", "clawtool-sbx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	outside, err := os.MkdirTemp("/var/tmp", "clawtool-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	f := &fixture{base: base, bin: filepath.Join(base, "bin"), ws: filepath.Join(base, "ws"), outside: outside, mark: testMark()}
	f.attacker = filepath.Join(f.bin, "attacker")
	for _, d := range []string{f.bin, f.ws} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.Chmod(base, 0o755))
	must(t, os.Chmod(outside, 0o777))
	must(t, os.Chown(f.ws, DefaultUID, DefaultUID))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Link(self, f.attacker); err != nil {
		copyFile(t, self, f.attacker, 0o755)
	}
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	must(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	must(t, err)
	_, err = io.Copy(dst, src)
	must(t, err)
	must(t, dst.Close())
	must(t, os.Chmod(to, mode))
}

func (f *fixture) policy() Policy {
	return Policy{
		Workspace: f.ws,
		ReadOnly:  []string{f.bin},
		Env:       append(DefaultEnv(), attackEnv+"=1", markEnv+"="+f.mark),
		Limits:    Limits{WaitDelay: 500 * time.Millisecond},
	}
}

func (f *fixture) sandboxed(t *testing.T, ctx context.Context, b Backend, p Policy, args ...string) *Result {
	t.Helper()
	r, err := b.Run(ctx, p, append([]string{f.attacker}, args...), nil)
	if err != nil {
		t.Fatalf("sandboxed %v: %v", args, err)
	}
	return r
}

// A control says how the positive control runs the attack without the
// sandbox.
type control int

const (
	asRoot             control = iota // as this (root) test process
	asNobodyRootGrp                   // uid 65534 keeping group root, as S6 leaked
	asNobody                          // uid 65534, no supplementary groups
	asRootPrivateMnt                  // root in a private mount namespace
	asForkerSupervisor                // as root holding the supervisor's end of the fixture's forker socket (descriptor 3)
	noControl                         // the attack is only to keep running
)

// unsandboxed runs the attack without the sandbox and returns its output.
func (f *fixture) unsandboxed(t *testing.T, how control, args ...string) string {
	t.Helper()
	cmd := exec.Command(f.attacker, args...)
	cmd.Env = append(os.Environ(), attackEnv+"=1", markEnv+"="+f.mark)
	cmd.WaitDelay = 500 * time.Millisecond
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	switch how {
	case asNobodyRootGrp:
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: DefaultUID, Gid: DefaultUID, Groups: []uint32{0}}
	case asNobody:
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: DefaultUID, Gid: DefaultUID, Groups: []uint32{}}
	case asRootPrivateMnt:
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNS
	case asForkerSupervisor:
		if f.fk == nil {
			t.Fatal("positive control: the fixture has no forker")
		}
		sock, err := f.fk.conn.File()
		must(t, err)
		defer sock.Close()
		cmd.ExtraFiles = []*os.File{sock}
	}
	out, _ := cmd.Output()
	return string(out)
}

// listenTCP starts a loopback listener and returns its address and a
// function reporting whether anything connected to it.
func listenTCP(t *testing.T) (string, func() bool) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { l.Close() })
	return l.Addr().String(), acceptedAny(l)
}

func acceptedAny(l net.Listener) func() bool {
	var got atomic.Bool
	return func() bool {
		if got.Load() {
			return true
		}
		type deadliner interface{ SetDeadline(time.Time) error }
		l.(deadliner).SetDeadline(time.Now().Add(100 * time.Millisecond))
		c, err := l.Accept()
		if err == nil {
			c.Close()
			got.Store(true)
		}
		return got.Load()
	}
}

func exists(path string) func() bool {
	return func() bool { _, err := os.Lstat(path); return err == nil }
}

// plantCases are the runs of a planting attack: the control, with git's
// paths out of the protected list, plants; the default list does not,
// through the write budget or with the workspace bound directly.
var plantCases = []struct {
	name    string
	policy  func(*Policy)
	planted bool
}{
	{"control: git's paths not protected", func(p *Policy) { p.Protected = []string{".bashrc"} }, true},
	{"default", func(*Policy) {}, false},
	{"default, workspace bound directly", func(p *Policy) { p.Without = []Layer{LayerWriteBudget} }, false},
}

// plantAttempt runs the attack ("write" or "append") on target in a
// sandboxed run of p and checks what came of it. With planted (a
// control) the run must write and the host's file hold the run's mark (a
// run that could not write ends the test); otherwise the run must meet a
// read-only file system and the host's file stay unmarked. name labels
// the errors.
func (f *fixture) plantAttempt(t *testing.T, p Policy, attack, target, name string, planted bool) {
	t.Helper()
	r := f.sandboxed(t, context.Background(), DefaultNative(), p, attack, target)
	out := string(r.Stdout)
	if planted && !strings.HasPrefix(out, "OK") {
		t.Fatalf("the control's run could not write %s: %q %q", name, out, trim(r.Stderr))
	}
	if !planted && (!strings.HasPrefix(out, "BLOCKED") || !strings.Contains(strings.ToLower(out), "read-only file system")) {
		t.Errorf("%s: %q (stderr %q), want BLOCKED read-only file system", name, out, trim(r.Stderr))
	}
	if got := fileHas(target, "pwned")(); got != planted {
		t.Errorf("%s planted on the host: %v, want %v", name, got, planted)
	}
}

func fileHas(path, s string) func() bool {
	return func() bool { b, _ := os.ReadFile(path); return strings.Contains(string(b), s) }
}

var seq atomic.Int64

func unique(prefix string) string { return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq.Add(1)) }

// A catalogRow is one attack of the catalog: the attack run without the
// sandbox must work (positive control) and show its effect on the host; run
// in the sandbox it must fail with one of the wanted errors (or end with
// the wanted outcome) and leave no effect on the host.
type catalogRow struct {
	id, name string
	control  control
	policy   func(*Policy)
	// setup prepares one run and returns the attack's arguments and a check
	// of its effect on the host (nil when it has none to look at).
	setup func(t *testing.T, f *fixture) (args []string, effect func() bool)
	// want are error texts one of which the sandboxed attack must report.
	want []string
	// outcome, when set, is the outcome the sandboxed run must have instead.
	outcome Outcome
	// allowed rows must work in the sandbox too (the workspace is writable;
	// private /tmp works but never reaches the host); hostEffect says
	// whether their effect must then show on the host.
	allowed, hostEffect bool
	timeout             time.Duration
	// container, when set, runs the row against the container backends
	// too, with its overrides; otherwise noContainer says why the row does
	// not apply to them (TestCatalogRowsSayWhy holds every row to one).
	container   *containerCase
	noContainer string
}

// A containerCase adapts a catalog row to the container backend: the
// container's root is the image, not the host's, so some attacks fail
// with another error (an outside path does not exist rather than being
// read-only), and the network namespace has a loopback of its own. Zero
// fields keep the row's own.
type containerCase struct {
	args    []string // the command's arguments, when not the row's
	want    []string
	outcome Outcome
	policy  func(*Policy)
	timeout time.Duration
	// blocked makes a row that wants an outcome want the refusal (want)
	// instead: the container's command sees it, and the backend has no
	// such outcome.
	blocked bool
}

// inContainer marks a row that applies to the container backend as it is.
var inContainer = &containerCase{}

// Why a row does not apply to the container backends.
const (
	noShm              = "a container has a /dev/shm of its own (the engine's tmpfs, private to it) that it may write; the refusal the row wants is the native sandbox's, which mounts none, and neither reaches the host's"
	noSetuidCopy       = "the row plants a setuid-root copy of a host program and runs it as the sandbox user; a container runs its image's programs under the engine's no-new-privileges, and the row is not yet adapted to that (A14 and A15 check the container's privileges)"
	notIdmapped        = "the idmapped workspace of a root-owned directory is the native backend's; a container binds the workspace as it is, with the host's ids"
	notWorkspaceBudget = "the workspace write budget (LayerWriteBudget, an overlay applied after the run) is the native backend's; a container writes its workspace directly, bounded per file (A17)"
	ownLoopback        = "the row wants the native seccomp filter's refusal of the socket; a container may open it in a network namespace of its own (its own loopback, the engine's default seccomp profile), where the host's listener is not: A19 and A20 check that nothing leaves it, and the row is not yet adapted with the container's own error"
	noForker           = "the forker is the native backend's (a helper program's helpers are started by it); the container backends start none, and the rows have not yet been run against them"
	noStrayFD          = "a container's command is started by the engine, which holds none of this program's descriptors; the row has not yet been run against the container backends"
	engineSeccomp      = "the container runs under the engine's default seccomp profile, not this sandbox's filter, and the row's list of calls is not yet checked against that profile"
)

func fixed(args ...string) func(*testing.T, *fixture) ([]string, func() bool) {
	return func(*testing.T, *fixture) ([]string, func() bool) { return args, nil }
}

var (
	wantDenied = []string{"permission denied", "operation not permitted", "read-only file system", "no such file"}
	wantEPERM  = []string{"operation not permitted"}
	wantNoNet  = []string{"network is unreachable", "operation not permitted", "permission denied"}
)

func catalog() []catalogRow {
	pid := strconv.Itoa(os.Getpid())
	return append([]catalogRow{
		{id: "A1", name: "read /etc/shadow", setup: fixed("read", "/etc/shadow"), want: []string{"permission denied"}, container: &containerCase{want: []string{"no such file"}}},
		{id: "A2", name: "read a world-readable file outside the policy", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			p := filepath.Join(f.outside, unique("ww"))
			must(t, os.WriteFile(p, []byte("data"), 0o644))
			return []string{"read", p}, nil
		}, want: []string{"permission denied", "no such file"}, container: inContainer},
		{id: "A3", name: "read a group-root file through inherited groups", control: asNobodyRootGrp, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			p := filepath.Join(f.ws, unique("grp-secret"))
			must(t, os.WriteFile(p, []byte("secret"), 0o640))
			must(t, os.Chown(p, 0, 0))
			return []string{"read", p}, nil
		}, want: []string{"permission denied"}, container: inContainer},
		{id: "A4", name: "write into a world-writable directory outside the workspace", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			p := filepath.Join(f.outside, unique("pwned"))
			return []string{"write", p}, exists(p)
			// The root holds only the system paths and the grants: the
			// outside directory is not there (it was read-only before).
		}, want: []string{"no such file"}, container: inContainer},
		{id: "A5", name: "write /dev/shm", noContainer: noShm, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			p := "/dev/shm/" + unique("sbx")
			t.Cleanup(func() { os.Remove(p) })
			return []string{"write", p}, exists(p)
		}, want: []string{"no such file", "permission denied"}},
		{id: "A5", name: "write /tmp stays private", allowed: true, container: inContainer, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			p := "/tmp/" + unique("sbx")
			t.Cleanup(func() { os.Remove(p) })
			return []string{"write", p}, exists(p)
		}},
		{id: "A9", name: "write through a workspace symlink to outside", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			target := filepath.Join(f.outside, unique("f"))
			link := filepath.Join(f.ws, unique("ln"))
			must(t, os.Symlink(target, link))
			return []string{"write", link}, exists(target)
			// The root holds only the system paths and the grants: the
			// outside directory is not there (it was read-only before).
		}, want: []string{"no such file"}, container: inContainer},
		{id: "A9", name: "read through a workspace symlink to /etc/shadow", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			link := filepath.Join(f.ws, unique("ln"))
			must(t, os.Symlink("/etc/shadow", link))
			return []string{"read", link}, nil
		}, want: []string{"permission denied"}, container: &containerCase{want: []string{"no such file"}}},
		{id: "A12", name: "mknod a memory device in the workspace", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			p := filepath.Join(f.ws, unique("mem"))
			return []string{"mknod", p}, exists(p)
		}, want: wantEPERM, container: inContainer},
		{id: "A13", name: "exec a setuid-root copy to read /etc/shadow", noContainer: noSetuidCopy, control: asNobody, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			p := filepath.Join(f.bin, unique("suid"))
			copyFile(t, f.attacker, p, 0o755)
			must(t, os.Chmod(p, os.ModeSetuid|0o755))
			return []string{"execread", p, "/etc/shadow"}, nil
		}, want: []string{"permission denied"}},
		{id: "A14", name: "remount / read-write", control: asRootPrivateMnt, setup: fixed("remount"), want: wantEPERM, container: inContainer},
		{id: "A15", name: "nested user namespace", setup: fixed("nesteduserns", "/bin/true"), want: wantEPERM, container: inContainer},
		{id: "A16", name: "add a git hook", setup: protectedSetup(".git/hooks/pre-commit", "write"), want: []string{"read-only file system"}, container: inContainer},
		{id: "A16", name: "change .git/config", setup: protectedSetup(".git/config", "append"), want: []string{"read-only file system"}, container: inContainer},
		{id: "A16", name: "change .bashrc", setup: protectedSetup(".bashrc", "append"), want: []string{"read-only file system"}, container: inContainer},
		{id: "A16", name: "change .mcp.json", setup: protectedSetup(".mcp.json", "append"), want: []string{"read-only file system"}, container: inContainer},
		{id: "A16", name: "add .vscode/settings.json", setup: protectedSetup(".vscode/settings.json", "write"), want: []string{"read-only file system"}, container: inContainer},
		{id: "A16", name: "add a session-start hook to .claude/settings.json", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			must(t, os.MkdirAll(filepath.Join(f.ws, ".claude"), 0o755))
			must(t, os.WriteFile(filepath.Join(f.ws, ".claude", "settings.json"), []byte("{}\n"), 0o644))
			return protectedSetup(".claude/settings.json", "append")(t, f)
		}, want: []string{"read-only file system"}, container: inContainer},
		{id: "A16", name: "write .git/objects stays allowed", allowed: true, hostEffect: true, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			protectedSetup(".git/config", "append")(t, f)
			p := filepath.Join(f.ws, ".git", "objects", unique("obj"))
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.Chown(filepath.Dir(p), DefaultUID, DefaultUID))
			return []string{"write", p}, exists(p)
		}, container: inContainer},
		{id: "A45", name: "replace .git by renaming it: a planted hook and core.fsmonitor", setup: structureSetup(".git", "hooks/pre-commit", plantedHook, "config", plantedConfig),
			want: wantBusy, container: inContainer},
		{id: "A45", name: "replace .claude by renaming it: a planted command", setup: structureSetup(".claude", "commands/review.md", "run: touch PWNED\n"),
			want: wantBusy, container: inContainer},
		{id: "A45", name: "replace .git/hooks by renaming it", setup: structureSetup(".git/hooks", "pre-commit", plantedHook), want: wantBusy, container: inContainer},
		{id: "A45", name: "change .git/objects under the protected .git stays allowed", allowed: true, hostEffect: true, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			structureSetup(".git", "hooks/pre-commit", plantedHook)(t, f)
			p := filepath.Join(f.ws, ".git", "objects", unique("obj"))
			return []string{"write", p}, exists(p)
		}, container: inContainer},
		{id: "A46", name: "rewrite a .git file (worktree, submodule) to lead elsewhere", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			resetGit(t, f)
			p := filepath.Join(f.ws, ".git")
			must(t, os.WriteFile(p, []byte("gitdir: /srv/repo/.git/worktrees/ws\n"), 0o644))
			must(t, os.Lchown(p, DefaultUID, DefaultUID))
			return []string{"append", p}, fileHas(p, "pwned")
		}, want: []string{"read-only file system"}, container: inContainer},
		{id: "A46", name: "plant a hook in the repository a .git file leads to inside the workspace", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			resetGit(t, f)
			must(t, os.WriteFile(filepath.Join(f.ws, ".git"), []byte("gitdir: modules/sub.git\n"), 0o644))
			gitdirLayout(t, filepath.Join(f.ws, "modules", "sub.git"))
			chownAll(t, f.ws)
			p := filepath.Join(f.ws, "modules", "sub.git", "hooks", "pre-commit")
			return []string{"write", p}, exists(p)
		}, want: []string{"read-only file system"}, container: inContainer},
		{id: "A46", name: "plant core.fsmonitor in a submodule's repository under .git/modules", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			resetGit(t, f)
			gitdirLayout(t, filepath.Join(f.ws, ".git"))
			gitdirLayout(t, filepath.Join(f.ws, ".git", "modules", "lib", "sub"))
			chownAll(t, f.ws)
			p := filepath.Join(f.ws, ".git", "modules", "lib", "sub", "config")
			return []string{"append", p}, fileHas(p, "pwned")
		}, want: []string{"read-only file system"}, container: inContainer},
		{id: "A47", name: "plant a setuid-root binary in a workspace root owns (idmapped to the caller)", noContainer: notIdmapped, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			ws := rootOwnedWorkspace(t, f)
			p := filepath.Join(ws, unique("suid"))
			return []string{"setuid", f.attacker, p}, setIDRoot(p)
		}, policy: func(p *Policy) { p.Workspace = rootWorkspace(p) }, want: wantEPERM},
		{id: "A47", name: "create a setuid-root file in a workspace root owns", noContainer: notIdmapped, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			ws := rootOwnedWorkspace(t, f)
			p := filepath.Join(ws, unique("suid"))
			return []string{"createsuid", p}, setIDRoot(p)
		}, policy: func(p *Policy) { p.Workspace = rootWorkspace(p) }, want: wantEPERM},
		{id: "A47", name: "write a file of the caller's in a workspace root owns stays allowed", noContainer: notIdmapped, allowed: true, hostEffect: true, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			ws := rootOwnedWorkspace(t, f)
			p := filepath.Join(ws, unique("mine"))
			must(t, os.WriteFile(p, []byte("original\n"), 0o644))
			return []string{"append", p}, fileHas(p, "pwned")
		}, policy: func(p *Policy) { p.Workspace = rootWorkspace(p) }},
		{id: "A47", name: "read another user's 0600 file in a workspace root owns", noContainer: notIdmapped, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			ws := rootOwnedWorkspace(t, f)
			p := filepath.Join(ws, unique("theirs"))
			must(t, os.WriteFile(p, []byte("secret"), 0o600))
			must(t, os.Chown(p, 1000, 1000))
			return []string{"read", p}, nil
		}, policy: func(p *Policy) { p.Workspace = rootWorkspace(p) }, want: []string{"permission denied"}},
		{id: "A17", name: "fill the disk past the file size limit", policy: func(p *Policy) { p.Limits.FileSize = 1 << 20 }, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			p := filepath.Join(f.ws, unique("big"))
			return []string{"writesize", p, strconv.Itoa(3 << 20)}, func() bool {
				st, err := os.Stat(p)
				return err == nil && st.Size() > 1<<20
			}
		}, want: []string{"file too large"}, container: inContainer},
		{id: "A17", name: "fill the private /tmp", policy: func(p *Policy) { p.Limits.Tmp = 1 << 20 }, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			p := "/tmp/" + unique("big")
			t.Cleanup(func() { os.Remove(p) })
			return []string{"writesize", p, strconv.Itoa(3 << 20)}, exists(p)
		}, want: []string{"no space left"}, container: inContainer},
		{id: "A48", name: "16 × fallocate into /tmp past the write budget", policy: func(p *Policy) { p.Limits.WriteBytes = 8 << 20 },
			setup: fixed("fallocate", "/tmp", "16", strconv.Itoa(1<<20)), outcome: WriteLimit, container: &containerCase{want: []string{"no space left"}, blocked: true}},
		{id: "A48", name: "fallocate into /tmp under the write budget stays allowed", allowed: true, policy: func(p *Policy) { p.Limits.WriteBytes = 8 << 20 },
			// A warm container's /tmp lives as long as it does, and the row
			// above filled the one its policy shares: another budget, another
			// container.
			setup: fixed("fallocate", "/tmp", "4", strconv.Itoa(1<<20)), container: &containerCase{policy: func(p *Policy) { p.Limits.WriteBytes = 9 << 20 }}},
		{id: "A49", name: "16 × fallocate into the workspace past the write budget", noContainer: notWorkspaceBudget, policy: func(p *Policy) { p.Limits.WriteBytes = 8 << 20 },
			setup: fallocateSetup(16), outcome: WriteLimit},
		{id: "A49", name: "fallocate into the workspace under the write budget stays allowed, applied after the run", noContainer: notWorkspaceBudget, allowed: true, hostEffect: true,
			policy: func(p *Policy) { p.Limits.WriteBytes = 8 << 20 }, setup: fallocateSetup(4)},
		{id: "A49", name: "plant .git/hooks/pre-commit and core.fsmonitor in a workspace without .git: made in the run's view, never applied", noContainer: notWorkspaceBudget, allowed: true,
			setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
				resetGit(t, f)
				hook, config := exists(filepath.Join(f.ws, ".git", "hooks", "pre-commit")), exists(filepath.Join(f.ws, ".git", "config"))
				return []string{"plant", f.ws, ".git/hooks/pre-commit", plantedHook, ".git/config", plantedConfig}, func() bool { return hook() || config() }
			}},
		{id: "A49", name: "plant a .git file naming a repository with a hook in a workspace without .git: never applied", noContainer: notWorkspaceBudget, allowed: true,
			setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
				resetGit(t, f)
				return []string{"plant", f.ws, ".git", "gitdir: modules/evil\n", "modules/evil/hooks/pre-commit", plantedHook}, exists(filepath.Join(f.ws, ".git"))
			}},
		{id: "A51", name: "redirect git's common directory: plant .git/commondir leading to a repository with core.fsmonitor", noContainer: notWorkspaceBudget, allowed: true,
			setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
				resetGit(t, f)
				gitdirLayout(t, filepath.Join(f.ws, ".git"))
				chownAll(t, f.ws)
				return []string{"plant", f.ws, "modules/evil/config", plantedConfig, "modules/evil/HEAD", "ref: refs/heads/main\n", ".git/commondir", "../modules/evil\n"},
					exists(filepath.Join(f.ws, ".git", "commondir"))
			}},
		{id: "A51", name: "plant .git/config.worktree (read when the config sets extensions.worktreeConfig)", noContainer: notWorkspaceBudget, allowed: true,
			setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
				resetGit(t, f)
				gitdirLayout(t, filepath.Join(f.ws, ".git"))
				chownAll(t, f.ws)
				return []string{"plant", f.ws, ".git/config.worktree", plantedConfig}, exists(filepath.Join(f.ws, ".git", "config.worktree"))
			}},
		{id: "A52", name: "plant a pre-commit hook in a repository nested in the workspace (vendor/lib, made by git init)",
			setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
				nestedSetup(t, f)
				p := filepath.Join(f.ws, "vendor", "lib", ".git", "hooks", "pre-commit")
				return []string{"write", p}, exists(p)
			}, want: []string{"read-only file system"}, container: inContainer},
		{id: "A52", name: "plant core.fsmonitor in a nested repository's .git/config",
			setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
				nestedSetup(t, f)
				p := filepath.Join(f.ws, "vendor", "lib", ".git", "config")
				return []string{"append", p}, fileHas(p, "pwned")
			}, want: []string{"read-only file system"}, container: inContainer},
		{id: "A52", name: "rewrite a nested .git file (a worktree's) to lead elsewhere",
			setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
				nestedSetup(t, f)
				p := filepath.Join(f.ws, "vendor", "wt", ".git")
				return []string{"append", p}, fileHas(p, "pwned")
			}, want: []string{"read-only file system"}, container: inContainer},
		{id: "A52", name: "plant a hook in the repository a nested .git file names inside the workspace",
			setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
				nestedSetup(t, f)
				p := filepath.Join(f.ws, "vendor", "repos", "wt.git", "hooks", "pre-commit")
				return []string{"write", p}, exists(p)
			}, want: []string{"read-only file system"}, container: inContainer},
		{id: "A52", name: "plant a hook in a nested repository's submodule (its repository under .git/modules)",
			setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
				nestedSetup(t, f)
				p := filepath.Join(f.ws, "vendor", "lib", ".git", "modules", "sub", "hooks", "pre-commit")
				return []string{"write", p}, exists(p)
			}, want: []string{"read-only file system"}, container: inContainer},
		{id: "A52", name: "plant core.fsmonitor in a nested repository's submodule's config",
			setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
				nestedSetup(t, f)
				p := filepath.Join(f.ws, "vendor", "lib", ".git", "modules", "sub", "config")
				return []string{"append", p}, fileHas(p, "pwned")
			}, want: []string{"read-only file system"}, container: inContainer},
		{id: "A52", name: "rewrite a nested submodule checkout's .git file to lead elsewhere",
			setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
				nestedSetup(t, f)
				p := filepath.Join(f.ws, "vendor", "lib", "sub", ".git")
				return []string{"append", p}, fileHas(p, "pwned")
			}, want: []string{"read-only file system"}, container: inContainer},
		{id: "A18", name: "exhaust the private /tmp's inodes", policy: func(p *Policy) { p.Limits.Tmp = 1 << 20 }, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			return []string{"manyfiles", "3000"}, nil
		}, want: []string{"no space left"}, container: inContainer},
		{id: "A19", name: "TCP connect to a host loopback listener", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			addr, accepted := listenTCP(t)
			return []string{"tcp", addr}, accepted
		}, want: wantNoNet, container: &containerCase{want: []string{"connection refused"}}},
		{id: "A20", name: "an interface with a route out", setup: fixed("interfaces"), want: []string{"network is unreachable"}, container: inContainer},
		{id: "A21", name: "MPTCP connect to a host loopback listener", noContainer: ownLoopback, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			addr, accepted := listenTCP(t)
			_, port, _ := net.SplitHostPort(addr)
			return []string{"mptcp", port}, accepted
		}, want: wantNoNet},
		{id: "A22", name: "UDP datagram to a host loopback listener", noContainer: ownLoopback, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			c, err := net.ListenPacket("udp", "127.0.0.1:0")
			must(t, err)
			t.Cleanup(func() { c.Close() })
			var got atomic.Bool
			return []string{"udp", c.LocalAddr().String()}, func() bool {
				c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				buf := make([]byte, 64)
				if _, _, err := c.ReadFrom(buf); err == nil {
					got.Store(true)
				}
				return got.Load()
			}
		}, want: wantNoNet},
		{id: "A23", name: "netlink socket", noContainer: ownLoopback, setup: fixed("netlink"), want: wantEPERM},
		{id: "A24", name: "connect to a host daemon socket under /run", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			p := "/run/" + unique("sbx") + ".sock"
			l, err := net.Listen("unix", p)
			must(t, err)
			t.Cleanup(func() { l.Close(); os.Remove(p) })
			must(t, os.Chmod(p, 0o777))
			return []string{"unix", p}, acceptedAny(l)
		}, want: []string{"no such file"}, container: inContainer},
		{id: "A24", name: "connect to the container engine's socket", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			requireEngineSocket(t)
			return []string{"unix", "/var/run/docker.sock"}, nil
		}, want: []string{"no such file"}, container: inContainer},
		{id: "A26", name: "open a TCP listener", noContainer: ownLoopback, setup: fixed("listen"), want: wantEPERM},
		{id: "A27", name: "spawn loop", policy: func(p *Policy) { p.Limits.Processes = 40 }, setup: fixed("spawn", "100"), want: []string{"resource temporarily unavailable"}, container: inContainer},
		{id: "A28", name: "allocate 512 MiB", policy: func(p *Policy) { p.Limits.Memory = 128 << 20 }, setup: fixed("alloc", "512"), outcome: MemoryLimit, container: inContainer},
		{id: "A29", name: "spin the CPU", policy: func(p *Policy) { p.Limits.CPU = time.Second }, setup: fixed("spin", "1200ms"), outcome: CPULimit,
			// The container row: a spin is killed at the deadline.
			// It spins for longer than the deadline, however idle the
			// machine: a 1.2 s spin ends before a 2 s deadline when the
			// machine is quiet.
			container: &containerCase{args: []string{"spin", "1m"}, policy: func(p *Policy) { p.Limits.CPU = 2 * time.Minute }, outcome: TimedOut, timeout: 2 * time.Second}},
		{id: "A30", name: "sleep past the deadline", control: noControl, setup: fixed("sleep"), outcome: TimedOut, timeout: 300 * time.Millisecond, container: &containerCase{timeout: 10 * time.Second}},
		{id: "A31", name: "endless output", control: noControl, policy: func(p *Policy) { p.Limits.Output = 64 << 10 }, setup: fixed("flood"), outcome: OutputLimit, container: inContainer},
		{id: "A33", name: "leave a daemonised child holding stdout", allowed: true, container: inContainer, setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			t.Cleanup(func() { killLeftovers(f.mark) })
			return []string{"background", "1000"}, func() bool {
				defer killLeftovers(f.mark)
				return leftovers(f.mark) > 0
			}
		}},
		{id: "A37", name: "exhaust descriptors", policy: func(p *Policy) { p.Limits.OpenFiles = 64 }, setup: fixed("openmany", "1000"), want: []string{"too many open files"}, container: inContainer},
		{id: "A38", name: "read a secret from the environment", setup: func(t *testing.T, f *fixture) ([]string, func() bool) {
			t.Setenv("SBX_HOST_SECRET", "hunter2")
			return []string{"env", "SBX_HOST_SECRET"}, nil
		}, want: []string{"not in the environment"}, container: inContainer},
		{id: "A39", name: "read the agent's /proc environ", setup: fixed("procenv", pid), want: []string{"no such file"}, container: inContainer},
		{id: "A40", name: "ptrace the agent", setup: fixed("ptrace", pid), want: []string{"no such process", "operation not permitted"}, container: inContainer},
		{id: "A41", name: "signal the agent", setup: fixed("kill0", pid), want: []string{"no such process"}, container: inContainer},
		{id: "A50", name: "signal the forker", noContainer: noForker, setup: forkerSetup("kill0"), want: []string{"no such process"}},
		{id: "A50", name: "signal the forker through a pidfd", noContainer: noForker, setup: forkerSetup("pidfd"), want: []string{"no such process"}},
		{id: "A50", name: "ptrace the forker", noContainer: noForker, setup: forkerSetup("ptrace"), want: []string{"no such process", "operation not permitted"}},
		{id: "A50", name: "read the forker's /proc environ", noContainer: noForker, setup: forkerSetup("procenv"), want: []string{"no such file"}},
		{id: "A50", name: "send a forged fork request on an inherited socket", noContainer: noForker, control: asForkerSupervisor,
			setup: fixed("forgefork"), want: []string{"no socket among the descriptors"}},
		{id: "A50", name: "read through a descriptor the supervisor holds without close-on-exec", noContainer: noStrayFD, setup: strayFDSetup,
			want: []string{"no descriptor beyond 0, 1 and 2"}},
		{id: "A43", name: "kernel attack surface (io_uring, bpf, userfaultfd, perf, keyctl, setns, kexec)", noContainer: engineSeccomp, setup: fixed("syscalls"), want: wantEPERM},
		{id: "A43", name: "the mount API's newer open_tree_attr", noContainer: engineSeccomp, setup: fixed("mountapi"), want: wantEPERM},
		{id: "A44", name: "open the controlling terminal", control: noControl, setup: fixed("tty"), want: []string{"no such file", "no such device"}, container: inContainer},
		{id: "A54", name: "a system call newer than the filter's table (the first number above it)", noContainer: engineSeccomp, setup: fixed("newsyscall"), want: []string{"function not implemented"}},
	}, archCatalogRows()...)
}

// strayFDSetup opens a secret file outside the workspace in this process
// without close-on-exec, as a descriptor a program inherited from its own
// parent is, for the run's command to find among its own (strayfds).
func strayFDSetup(t *testing.T, f *fixture) ([]string, func() bool) {
	secret := filepath.Join(f.outside, unique("strayfd"))
	must(t, os.WriteFile(secret, []byte("stray-secret"), 0o600))
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0)
	must(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	return []string{"strayfds"}, nil
}

// forkerSetup returns the attack op on the forker's process id.
func forkerSetup(op string) func(*testing.T, *fixture) ([]string, func() bool) {
	return func(t *testing.T, f *fixture) ([]string, func() bool) { return []string{op, f.forkerPid(t)}, nil }
}

// fallocateSetup returns the attack that allocates n files of 1 MiB in a
// new directory of the workspace and keeps them, after removing what
// earlier runs left; the host-side check says whether the workspace holds
// them all on the host's disk.
func fallocateSetup(n int) func(*testing.T, *fixture) ([]string, func() bool) {
	return func(t *testing.T, f *fixture) ([]string, func() bool) {
		old, _ := filepath.Glob(filepath.Join(f.ws, "fallocate-*"))
		for _, p := range old {
			must(t, os.RemoveAll(p))
		}
		return []string{"fallocatekeep", f.ws, strconv.Itoa(n), strconv.Itoa(1 << 20)}, func() bool {
			return diskUse(t, f.ws) >= int64(n)<<20
		}
	}
}

// protectedSetup creates the protected layout in the workspace and returns
// an attack on rel with op.
func protectedSetup(rel, op string) func(*testing.T, *fixture) ([]string, func() bool) {
	return func(t *testing.T, f *fixture) ([]string, func() bool) {
		for _, d := range []string{".git/hooks", ".vscode"} {
			must(t, os.MkdirAll(filepath.Join(f.ws, d), 0o755))
		}
		for _, file := range []string{".git/config", ".bashrc", ".mcp.json"} {
			must(t, os.WriteFile(filepath.Join(f.ws, file), []byte("original\n"), 0o644))
		}
		filepath.Walk(f.ws, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, DefaultUID, DefaultUID) })
		p := filepath.Join(f.ws, rel)
		if op == "append" {
			return []string{op, p}, fileHas(p, "pwned")
		}
		os.Remove(p)
		return []string{op, p}, exists(p)
	}
}

const (
	plantedHook   = "#!/bin/sh\ntouch PWNED\n"
	plantedConfig = "[core]\n\tfsmonitor = touch PWNED\n"
)

var wantBusy = []string{"device or resource busy"}

// resetGit removes what earlier rows left of .git, .claude and their
// replacements from the workspace.
func resetGit(t *testing.T, f *fixture) {
	t.Helper()
	for _, g := range []string{".git*", ".claude*", "modules", "vendor"} {
		m, _ := filepath.Glob(filepath.Join(f.ws, g))
		for _, p := range m {
			must(t, os.RemoveAll(p))
		}
	}
}

// nestedSetup gives the workspace repositories nested in it: vendor/lib
// made by git init, with a submodule (its repository under .git/modules,
// its checkout vendor/lib/sub), and vendor/wt, a working tree whose .git
// file names vendor/repos/wt.git.
func nestedSetup(t *testing.T, f *fixture) {
	t.Helper()
	resetGit(t, f)
	gitInit(t, f.ws, filepath.Join(f.ws, "vendor", "lib"))
	must(t, os.MkdirAll(filepath.Join(f.ws, "vendor", "wt"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.ws, "vendor", "wt", ".git"), []byte("gitdir: ../repos/wt.git\n"), 0o644))
	gitdirLayout(t, filepath.Join(f.ws, "vendor", "repos", "wt.git"))
	// A submodule of vendor/lib: its repository under .git/modules, its
	// checkout's .git file naming it.
	gitdirLayout(t, filepath.Join(f.ws, "vendor", "lib", ".git", "modules", "sub"))
	must(t, os.MkdirAll(filepath.Join(f.ws, "vendor", "lib", "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.ws, "vendor", "lib", "sub", ".git"), []byte("gitdir: ../.git/modules/sub\n"), 0o644))
	chownAll(t, f.ws)
}

// gitdirLayout makes dir look like a repository: HEAD, config, hooks.
func gitdirLayout(t *testing.T, dir string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, "hooks"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "objects"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n\tbare = false\n"), 0o644))
}

func chownAll(t *testing.T, dir string) {
	t.Helper()
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, DefaultUID, DefaultUID) })
}

// structureSetup gives the workspace a repository (.git with hooks and
// config) and .claude with commands and agents, and returns the attack
// that moves dir aside and plants the name/content pairs of plant in a
// new dir; the host-side check looks for any of them in place.
func structureSetup(dir string, plant ...string) func(*testing.T, *fixture) ([]string, func() bool) {
	return func(t *testing.T, f *fixture) ([]string, func() bool) {
		resetGit(t, f)
		gitdirLayout(t, filepath.Join(f.ws, ".git"))
		for _, d := range []string{".claude/commands", ".claude/agents"} {
			must(t, os.MkdirAll(filepath.Join(f.ws, d), 0o755))
		}
		chownAll(t, f.ws)
		base := filepath.Join(f.ws, dir)
		var planted []func() bool
		for i := 0; i+1 < len(plant); i += 2 {
			planted = append(planted, fileHas(filepath.Join(base, plant[i]), plant[i+1]))
		}
		return append([]string{"replace", base}, plant...), func() bool {
			return slices.ContainsFunc(planted, func(f func() bool) bool { return f() })
		}
	}
}

// rootOwnedWorkspace returns the fixture's second workspace, made by root
// as a user would (mkdir), beside the sandbox user's.
func rootOwnedWorkspace(t *testing.T, f *fixture) string {
	t.Helper()
	ws := f.ws + "-root"
	if err := os.Mkdir(ws, 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	return ws
}

func rootWorkspace(p *Policy) string { return p.Workspace + "-root" }

// setIDRoot reports whether path is a setuid or setgid file of root's.
func setIDRoot(path string) func() bool {
	return func() bool {
		st, err := os.Lstat(path)
		if err != nil {
			return false
		}
		sys := st.Sys().(*syscall.Stat_t)
		return st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 && (sys.Uid == 0 || sys.Gid == 0)
	}
}

// A target is a backend the catalog runs against, with what its results
// must say about it.
type target struct {
	name string
	b    Backend
	// container applies the rows' container overrides and the fixture's
	// container policy; the backend mounts the workspace at workspace.
	container bool
	workspace string
	// mode is the Mode every result must report ("" for any).
	mode Mode
}

// attack runs one catalog row against backend tg: the positive control
// without any sandbox, then the sandboxed attack and the host-side check.
func (f *fixture) attack(t *testing.T, row catalogRow, tg target) {
	// Positive control: without the sandbox the attack works.
	if row.control != noControl {
		args, effect := row.setup(t, f)
		out := f.unsandboxed(t, row.control, args...)
		if !strings.HasPrefix(out, "OK") {
			t.Fatalf("positive control: attack %v did not work without the sandbox: %q", args, out)
		}
		if effect != nil && !effect() {
			t.Fatalf("positive control: attack %v reported %q but left no effect on the host", args, out)
		}
	}

	args, effect := row.setup(t, f)
	p := f.policy()
	if row.policy != nil {
		row.policy(&p)
	}
	timeout := row.timeout
	want, outcome := row.want, row.outcome
	if tg.container {
		f.containerPolicy(&p)
		c := row.container
		if c.policy != nil {
			c.policy(&p)
		}
		if c.timeout != 0 {
			timeout = c.timeout
		}
		if c.args != nil {
			args = c.args
		}
		if c.want != nil {
			want = c.want
		}
		if c.outcome != "" {
			outcome = c.outcome
		}
		if c.blocked {
			outcome = ""
		}
	}
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if tg.workspace != "" {
		// The workspace is elsewhere inside the backend's root.
		args = slices.Clone(args)
		for i, a := range args {
			if rel, ok := strings.CutPrefix(a, f.ws+"/"); ok {
				args[i] = tg.workspace + "/" + rel
			}
		}
	}
	r := f.sandboxed(t, ctx, tg.b, p, args...)
	if tg.mode != "" && (r.Mode != tg.mode || r.Fallback != "") {
		t.Errorf("mode %s (fallback %q), want %s", r.Mode, r.Fallback, tg.mode)
	}
	out := string(r.Stdout)
	switch {
	case outcome != "":
		if r.Outcome != outcome {
			t.Errorf("outcome %s (%s, CPU %v), want %s; stdout %q stderr %q", r.Outcome, r.Summary(), r.CPU, outcome, out, trim(r.Stderr))
		}
	case row.allowed:
		if !strings.HasPrefix(out, "OK") {
			t.Errorf("allowed attack failed in the sandbox: %q %q", out, trim(r.Stderr))
		}
	default:
		if !strings.HasPrefix(out, "BLOCKED") || !containsAny(strings.ToLower(out), want) {
			t.Errorf("sandboxed: %q (stderr %q, %s), want BLOCKED with one of %q", out, trim(r.Stderr), r.Summary(), want)
		}
	}
	if effect != nil && row.hostEffect {
		if !effect() {
			t.Errorf("host-side check: the allowed attack %v left no effect on the host", args)
		}
	} else if effect != nil && effect() {
		t.Errorf("host-side check: the sandboxed attack %v changed the host", args)
	}
	if n := leftovers(f.mark); n > 0 {
		killLeftovers(f.mark)
		t.Errorf("%d processes left behind", n)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func trim(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

func startAgent(t *testing.T, f *fixture, mark string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(f.attacker, "agent", f.ws, f.bin, f.attacker)
	cmd.Env = append(os.Environ(), attackEnv+"=1", markEnv+"="+mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func requireEngineSocket(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no engine socket: ", err)
		}
		t.Skip("no engine socket: ", err)
	}
}

// containerPolicy adds what the attacker (this test binary) needs to run
// in the busybox image: the host's libraries when it is dynamically linked
// (as under -race).
func (f *fixture) containerPolicy(p *Policy) {
	ef, err := elf.Open(f.attacker)
	if err != nil {
		return
	}
	defer ef.Close()
	for _, prog := range ef.Progs {
		if prog.Type == elf.PT_INTERP {
			for _, dir := range []string{"/lib", "/lib64", "/usr/lib", "/usr/lib64"} {
				if real, err := filepath.EvalSymlinks(dir); err == nil {
					_ = real
					p.ReadOnly = append(p.ReadOnly, dir)
				}
			}
			return
		}
	}
}
