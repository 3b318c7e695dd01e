package sandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox/internal/helper"
)

// ungrantedMounts returns the mount points of a mountinfo text that lie
// outside every path of granted (and are not "/" itself): what a run's
// mount table tells it about the host beyond what it was given.
func ungrantedMounts(mountinfo string, granted []string) []string {
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		point := unescapeMount(f[4])
		if point == "/" {
			continue
		}
		if slices.ContainsFunc(granted, func(g string) bool {
			return point == g || strings.HasPrefix(point, strings.TrimSuffix(g, "/")+"/")
		}) {
			continue
		}
		out = append(out, point)
	}
	return out
}

// TestMountTableShowsOnlyGrants is the attack of reading the run's own
// mount table (/proc/self/mountinfo, and the same tree through
// listmount/statmount): before, the run's root was a read-only copy of
// the host's whole mount tree, so the table listed every mount point of
// the host (/sys and its cgroups, /var/lib/docker, what /run and /dev
// covered, a container engine's network namespaces), where Landlock
// already refused to read. Now the root is a tmpfs holding the system
// paths and what the policy grants, nothing else: the table lists only
// those. The control runs the same detector on this process's own table,
// which holds /sys on any Linux host, so the detector can fail; the run
// still works (a shell, a library, a read of /etc).
func TestMountTableShowsOnlyGrants(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	ro := reachableDir(t)
	if err := os.WriteFile(ro+"/f", []byte("ro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	granted := append(SystemReadOnly(), "/tmp", "/proc", "/dev", ws, ro)

	// Control: the host's table has mount points outside the grants.
	host, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if got := ungrantedMounts(string(host), granted); !slices.Contains(got, "/sys") {
		t.Fatalf("control: the detector did not find /sys in this process's mount table (found %q)", got)
	}

	for _, p := range []Policy{
		{Workspace: ws, ReadOnly: []string{ro}},
		{Workspace: ws, ReadOnly: []string{ro}, Without: []Layer{LayerWriteBudget}},
		{Workspace: ws, ReadOnly: []string{ro}, Without: []Layer{LayerLandlock}},
	} {
		r, err := Run(context.Background(), p, "sh", "-c", "cat /proc/self/mountinfo && echo --- && cat "+ro+"/f && head -c 4 /etc/passwd && echo")
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() {
			t.Fatalf("without %v: %s: %s", p.Without, r.Summary(), r.Stderr)
		}
		table, rest, _ := strings.Cut(string(r.Stdout), "---\n")
		if got := ungrantedMounts(table, granted); len(got) != 0 {
			t.Errorf("without %v: the run's mount table shows host mount points it was not given: %q", p.Without, got)
		}
		if !strings.HasPrefix(rest, "ro\nroot\n") {
			t.Errorf("without %v: the run could not read its grants: %q %s", p.Without, rest, r.Stderr)
		}
	}
}

// TestRootDirsAreTheSystemPaths keeps the helper's list of the root's
// directories the same as the paths Landlock grants: a system path bound
// but not granted would be visible and unreadable, one granted but not
// bound missing.
func TestRootDirsAreTheSystemPaths(t *testing.T) {
	if !slices.Equal(helper.RootDirs, SystemReadOnly()) {
		t.Fatalf("helper.RootDirs %q, SystemReadOnly %q", helper.RootDirs, SystemReadOnly())
	}
}

// hostCgroupPaths returns the lines of a /proc/PID/cgroup text whose path
// is not the root of the reader's cgroup namespace: where the host's
// cgroup tree (and the leaf's name, which holds the supervisor's process
// id) shows through.
func hostCgroupPaths(text string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[2] != "/" {
			out = append(out, line)
		}
	}
	return out
}

// TestCgroupPathHidden is the attack of reading the run's own cgroup
// (/proc/self/cgroup): before, the run saw the host's path of its leaf
// ("4:memory:/process_api/0516…/clawtool-sandbox-22341-1": the host's
// cgroup tree and the supervisor's process id). The helper now unshares
// a cgroup namespace once it is in the leaf, whose root the run's paths
// are relative to. The control gives the detector the line a run printed
// before.
func TestCgroupPathHidden(t *testing.T) {
	requireSandbox(t)
	if got := hostCgroupPaths("4:memory:/process_api/0516476d/clawtool-sandbox-22341-1\n0::/\n"); len(got) != 1 {
		t.Fatalf("control: the detector found %q", got)
	}
	for _, p := range []Policy{{}, {Without: []Layer{LayerCgroup}}} {
		r, err := Run(context.Background(), p, "cat", "/proc/self/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() {
			t.Fatalf("without %v: %s: %s", p.Without, r.Summary(), r.Stderr)
		}
		if got := hostCgroupPaths(string(r.Stdout)); len(got) != 0 {
			t.Errorf("without %v (cgroup leaf %v): the run sees the host's cgroup paths: %q", p.Without, r.Cgroup, got)
		}
	}
}

// TestDaemonSocketOutsideGrants is the attack of connecting to a daemon's
// named unix socket in a directory the sandbox neither grants nor hides
// (a rootless engine's under a home directory, an agent's under /var):
// neither Landlock nor the seccomp filter looks at a connect to a named
// socket, and before, the run's root was the host's whole tree, so the
// connect went through. The root now holds only the system paths and the
// policy's grants: the socket is not there. The control grants the
// socket's directory read-only, and the connect goes through: the attack
// is stopped by the socket's absence, not by anything else.
func TestDaemonSocketOutsideGrants(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.outside, unique("daemon"))
	must(t, os.Mkdir(dir, 0o755))
	sock := filepath.Join(dir, "d.sock")
	l, err := net.Listen("unix", sock)
	must(t, err)
	t.Cleanup(func() { l.Close(); os.Remove(sock) })
	must(t, os.Chmod(sock, 0o777))
	accepted := acceptedAny(l)

	p := f.policy()
	r := f.sandboxed(t, context.Background(), DefaultNative(), p, "unix", sock)
	if strings.HasPrefix(string(r.Stdout), "OK") || accepted() {
		t.Errorf("the run connected to a socket outside its grants: %q %q", r.Stdout, trim(r.Stderr))
	} else if !strings.Contains(string(r.Stdout), "no such file") {
		t.Errorf("the connect failed otherwise than by the socket's absence: %q", r.Stdout)
	}

	p.ReadOnly = append(p.ReadOnly, dir)
	r = f.sandboxed(t, context.Background(), DefaultNative(), p, "unix", sock)
	if !strings.HasPrefix(string(r.Stdout), "OK") || !accepted() {
		t.Fatalf("control: the run did not connect through the read-only grant: %q %q", r.Stdout, trim(r.Stderr))
	}
}
