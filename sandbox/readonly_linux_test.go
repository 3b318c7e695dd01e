package sandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyReexposesDaemonSockets: the sandbox hides /run, /var/run
// and $XDG_RUNTIME_DIR under a tmpfs so that the daemons' sockets there
// (D-Bus's system bus, a container engine's, an agent's) are out of
// reach, but Policy.ReadOnly bound what it named back over them: a
// read-only bind stops writes, not a connect to a socket, and neither
// Landlock nor the seccomp filter looks at a connect to a named unix
// socket. A policy naming /run, a socket under it, or a link to either
// gave the run the socket. The control binds a socket in a directory the
// sandbox does not hide and connects to it: the read-only bind lets the
// connect through. With the defence each attack's policy is refused
// before anything runs, and the socket is never reached.
func TestReadOnlyReexposesDaemonSockets(t *testing.T) {
	f := newFixture(t)
	listen := func(t *testing.T, p string) func() bool {
		t.Helper()
		l, err := net.Listen("unix", p)
		must(t, err)
		t.Cleanup(func() { l.Close(); os.Remove(p) })
		must(t, os.Chmod(p, 0o777))
		return acceptedAny(l)
	}
	t.Run("control: a socket under a read-only path outside the hidden directories", func(t *testing.T) {
		dir := filepath.Join(f.outside, unique("sockdir"))
		must(t, os.Mkdir(dir, 0o755))
		sock := filepath.Join(dir, "d.sock")
		accepted := listen(t, sock)
		p := f.policy()
		p.ReadOnly = append(p.ReadOnly, dir)
		r := f.sandboxed(t, context.Background(), DefaultNative(), p, "unix", sock)
		if !strings.HasPrefix(string(r.Stdout), "OK") || !accepted() {
			t.Fatalf("the control did not connect through the read-only bind: %q %q", r.Stdout, trim(r.Stderr))
		}
	})
	link := filepath.Join(f.outside, unique("runlink"))
	must(t, os.Symlink("/run", link))
	xdg := filepath.Join(f.outside, unique("xdg"))
	must(t, os.Mkdir(xdg, 0o755))
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	for _, tc := range []struct {
		name, dir string
		ro        func(sock string) string
	}{
		{"/run", "/run", func(string) string { return "/run" }},
		{"the socket itself", "/run", func(sock string) string { return sock }},
		{"a link to /run", "/run", func(string) string { return link }},
		{"the root directory, which holds /run", "/run", func(string) string { return "/" }},
		{"$XDG_RUNTIME_DIR", xdg, func(string) string { return xdg }},
		// The host's /dev showed 107 device nodes (the disk's among them)
		// and the host's /proc every process.
		{"/dev, which holds the host's devices", "/run", func(string) string { return "/dev" }},
		{"/proc, which holds every process", "/run", func(string) string { return "/proc" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(tc.dir, unique("sbx")+".sock")
			accepted := listen(t, sock)
			p := f.policy()
			ro := tc.ro(sock)
			p.ReadOnly = append(p.ReadOnly, ro)
			r, err := DefaultNative().Run(context.Background(), p, []string{f.attacker, "unix", sock}, nil)
			if err == nil {
				t.Errorf("ReadOnly %q: the run ran: %q %q; want the policy refused", ro, r.Stdout, trim(r.Stderr))
			} else if !strings.Contains(err.Error(), "hides") && !strings.Contains(err.Error(), "socket") && !strings.Contains(err.Error(), "view of its own") {
				t.Errorf("ReadOnly %q: %v; want the refusal to say why", ro, err)
			}
			if accepted() {
				t.Errorf("ReadOnly %q: the run reached the socket %s", ro, sock)
			}
		})
	}
}
