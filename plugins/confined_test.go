package plugins

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/miniopenclaw/tool/sandbox"
)

// requireSandbox stops a test that needs the native sandbox: it fails in
// CI, where the sandbox's layers are present, and skips elsewhere.
func requireSandbox(t testing.TB) {
	t.Helper()
	reason := ""
	if os.Geteuid() != 0 {
		reason = "confined servers' tests need root (to give the workspace to the sandbox user)"
	} else {
		r := sandbox.Probe()
		for _, l := range append(sandbox.RequiredLayers, sandbox.LayerNetNS) {
			if !r.Has(l) {
				reason = "the sandbox lacks " + string(l)
			}
		}
	}
	if reason == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(reason)
	}
	t.Skip(reason)
}

// confinedFixture is fixture with the test binary copied into a
// directory the sandbox user can reach (the go tool's build directory
// is its owner's alone): the policy must list filepath.Dir(Command).
func confinedFixture(t *testing.T, tools ...string) Server {
	t.Helper()
	s := fixture(t, "", tools...)
	s.Command = reachableCopy(t, s.Command)
	return s
}

// reachableCopy copies the executable file into a fresh directory
// anyone may search and returns the copy's path.
func reachableCopy(t *testing.T, file string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "plugins-confined-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(dir, filepath.Base(file))
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// assertOwnedLike checks that file has the owner and group of dir (the
// workspace's owner, the caller), not the sandbox user's.
func assertOwnedLike(t *testing.T, file, dir string) {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, d := fi.Sys().(*syscall.Stat_t), di.Sys().(*syscall.Stat_t)
	if f.Uid != d.Uid || f.Gid != d.Gid {
		t.Errorf("%s belongs to %d:%d, the workspace's owner is %d:%d", file, f.Uid, f.Gid, d.Uid, d.Gid)
	}
}
