package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A writer of the workspace working while a run's changes are applied
// (another run's apply step, a streamed run or MCP server bound to the
// same workspace directly, any process of the host) swaps a directory
// the apply step has checked, d, for a symbolic link to .git/hooks
// inside the workspace, between two of d's files. The apply step judged
// d/pre-commit by its name, which is not protected, and wrote it through
// an os.Root by path: an os.Root follows a link that stays inside it, so
// the file landed in .git/hooks, a hook planted past the protected
// paths. The control writes the same name the same way through an
// os.Root after the same swap and finds it in .git/hooks; the apply step
// must follow no link on the way to what it writes, and refuse what it
// finds behind one.
func TestApplyRaceSymlinkSwap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the apply tests make whiteouts and need root")
	}
	const hook = "#!/bin/sh\ntouch PWNED\n"
	swap := func(ws string) {
		must(t, os.RemoveAll(filepath.Join(ws, "d")))
		must(t, os.Symlink(".git/hooks", filepath.Join(ws, "d")))
	}
	layout := func(t *testing.T) (ws string) {
		ws = t.TempDir()
		makeUpper(t, ws, []upperEntry{{path: ".git/hooks/h", kind: "f", data: "h"}, {path: "d/keep", kind: "f", data: "k"}})
		return ws
	}
	planted := func(ws string) bool {
		_, err := os.Lstat(filepath.Join(ws, ".git/hooks/pre-commit"))
		return err == nil
	}

	t.Run("control", func(t *testing.T) {
		ws := layout(t)
		swap(ws)
		root, err := os.OpenRoot(ws)
		must(t, err)
		defer root.Close()
		f, err := root.OpenFile("d/pre-commit", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
		must(t, err)
		f.Write([]byte(hook))
		f.Close()
		if !planted(ws) {
			t.Fatal("control: a write by path through the swapped directory did not reach .git/hooks")
		}
	})

	for _, race := range []struct{ name, at string }{
		{"file after the swap", "d/pre-commit"},
		{"hard link after the swap", "d/x"},
		{"directory after the swap", "d/sub"},
	} {
		t.Run(race.name, func(t *testing.T) {
			ws, upper := layout(t), t.TempDir()
			makeUpper(t, upper, []upperEntry{{path: "d/a", kind: "f", data: "a"},
				{path: "d/pre-commit", kind: "f", data: hook, mode: 0o755},
				{path: "d/sub/pre-push", kind: "f", data: hook, mode: 0o755},
				{path: "d/x", kind: "h", data: "d/a"}})
			fd, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			must(t, err)
			defer unix.Close(fd)
			res, err := applyUpperRacing(fd, ws, []string{".git/hooks", ".git/config"}, nil, 1<<20, func(p string) {
				if p == race.at {
					swap(ws)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"pre-commit", "x", "sub", "a"} {
				if _, err := os.Lstat(filepath.Join(ws, ".git/hooks", name)); err == nil {
					t.Errorf("the apply step wrote .git/hooks/%s through the swapped link (not applied: %q)", name, res.notApplied)
				}
			}
			if len(res.notApplied) == 0 {
				t.Error("nothing listed as not applied")
			}
			t.Logf("not applied: %q", res.notApplied)
		})
	}
}
