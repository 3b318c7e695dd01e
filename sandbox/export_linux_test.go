package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A CatalogBackend is a backend the attack catalog runs against, with what
// its results must say about it. It and [RunCatalog] are the hooks of the
// one conformance test, TestCatalog in catalog_backends_linux_test.go
// (package sandbox_test): the container backends import this package, so
// only an external test can hold them beside this package's fixture (the
// test binary, which doubles as the attacker).
type CatalogBackend struct {
	Backend Backend
	// Container applies the rows' container overrides and runs only the
	// rows that apply to a container (the others say why not).
	Container bool
	// Workspace is where the backend mounts Policy.Workspace ("" for the
	// host path itself).
	Workspace string
	// Mode is the Mode every result must report.
	Mode Mode
	// Forker, when set, returns the process id of the backend's forker
	// (0 when none runs), which the forker rows attack; otherwise they
	// attack a forker the catalog starts for a native backend.
	Forker func() int
}

// ForkerPid returns the process id of n's forker, or 0 when none runs.
func (n *Native) ForkerPid() int { return n.forkerPid() }

// RunCatalog runs every catalog row that applies to cb, each as a subtest
// with its positive control and host-side check.
func RunCatalog(t *testing.T, cb CatalogBackend) {
	f := newFixture(t)
	if !cb.Container {
		f.startForker(t)
		f.targetForker = cb.Forker
	}
	tg := target{name: string(cb.Mode), b: cb.Backend, container: cb.Container, workspace: cb.Workspace, mode: cb.Mode}
	for _, row := range catalog() {
		if cb.Container && row.container == nil {
			continue // row.noContainer says why; TestCatalogRowsSayWhy holds it
		}
		t.Run(row.id+" "+row.name, func(t *testing.T) { f.attack(t, row, tg) })
	}
}

// TestCatalogRowsSayWhy: every row either runs against the container
// backends or says why it does not, never both.
func TestCatalogRowsSayWhy(t *testing.T) {
	for _, row := range catalog() {
		if (row.container == nil) == (strings.TrimSpace(row.noContainer) == "") {
			t.Errorf("%s %s: container %v, noContainer %q: want exactly one", row.id, row.name, row.container != nil, row.noContainer)
		}
	}
}

// newTestNative returns a native backend with the options o and the hooks
// k (nil for none), closed when tb ends.
func newTestNative(tb testing.TB, o NativeOptions, k *nativeHooks) *Native {
	n := NewNative(o)
	n.pool.hooks = k
	tb.Cleanup(func() { n.Close() })
	return n
}

// runOn runs argv under p on n, as [Run] does on [DefaultNative].
func runOn(n *Native, ctx context.Context, p Policy, argv ...string) (*Result, error) {
	return n.Run(ctx, p, argv, nil)
}

// settle waits until no spare start, discard or background reap of n is
// under way.
func (n *Native) settle() { n.pool.settle() }

// waitingSpare returns the process id of one idle spare of n, or 0.
func (n *Native) waitingSpare() int {
	n.pool.lockInit()
	defer n.pool.mu.Unlock()
	for _, s := range n.pool.slots {
		if s.h != nil {
			return s.h.proc.Pid
		}
	}
	return 0
}

// spareShapes returns how many shapes n keeps a spare slot for.
func (n *Native) spareShapes() int {
	n.pool.lockInit()
	defer n.pool.mu.Unlock()
	return len(n.pool.slots)
}

// BuildHelperProgram builds the command clawtool-sandbox-helper of this
// tree, without cgo, into a directory of tb's and returns its path;
// ldflags are passed to the linker (empty for none). Without the go
// command it fails in CI and skips elsewhere.
func BuildHelperProgram(tb testing.TB, ldflags string) string {
	tb.Helper()
	return buildCommand(tb, "./cmd/clawtool-sandbox-helper", ldflags, false)
}

// BuildClawtool builds the clawtool command of this module as go build
// does by default (cgo as the toolchain has it), into a directory of tb's,
// and returns its path: a program as large as a user's, whose own binary
// the default backend re-executes for its forker and helpers.
func BuildClawtool(tb testing.TB) string {
	tb.Helper()
	return buildCommand(tb, "../cmd/clawtool", "", true)
}

// buildCommand builds the command in the package pkg (relative to this
// package's directory), with ldflags (empty for none) and cgo only when
// withCgo is set, as BuildHelperProgram says.
func buildCommand(tb testing.TB, pkg, ldflags string, withCgo bool) string {
	tb.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err = os.Stat(gocmd); err != nil {
			if os.Getenv("CI") == "true" {
				tb.Fatal("the go command is needed to build " + pkg)
			}
			tb.Skip("no go command to build " + pkg)
		}
	}
	// A directory of its own (a test's TempDir is under one only its
	// owner may search), searchable by the sandbox user the helper
	// starts as.
	dir, err := os.MkdirTemp("", "clawtool-helper-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	args := []string{"build", "-o", out}
	if ldflags != "" {
		args = append(args, "-ldflags="+ldflags)
	}
	cmd := exec.Command(gocmd, append(args, pkg)...)
	cmd.Env = os.Environ()
	if !withCgo {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}
