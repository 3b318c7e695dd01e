package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ownerOf returns the uid and gid of path on the host.
func ownerOf(t *testing.T, path string) (uint32, uint32) {
	t.Helper()
	st, err := os.Lstat(path)
	must(t, err)
	sys := st.Sys().(*syscall.Stat_t)
	return sys.Uid, sys.Gid
}

// TestOwnershipAsAUserMeetsIt runs, as root, in workspaces a user would
// make: with mkdir below a 0700 temporary directory (the sandbox user can
// search neither /tmp/tmp.XXXX nor /var/tmp/tmp.XXXX), owned by root or by
// another user. The command writes what the owner can, its new files
// belong to the owner on the host, and a file of the owner's written by
// the file tools (root's, 0644) is the command's to append to. Files of
// other users stay theirs: the command is "other" to them.
func TestOwnershipAsAUserMeetsIt(t *testing.T) {
	requireSandbox(t)
	for _, tc := range []struct {
		name     string
		base     string // where the 0700 temporary directory is made
		uid, gid int    // the workspace's owner
	}{
		{"root, mkdir /tmp/ws", "reachable", 0, 0},
		{"root below /tmp", "", 0, 0},
		{"root below /var/tmp", "/var/tmp", 0, 0},
		{"a user below /var/tmp", "/var/tmp", 1000, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == "reachable" {
				base = ""
			}
			parent, err := os.MkdirTemp(base, "clawtool-owner-")
			must(t, err)
			t.Cleanup(func() { os.RemoveAll(parent) })
			if tc.base == "reachable" {
				must(t, os.Chmod(parent, 0o755))
			} else if st, _ := os.Stat(parent); st.Mode().Perm() != 0o700 {
				t.Fatalf("the temporary directory is %v, want 0700", st.Mode())
			}
			must(t, os.WriteFile(filepath.Join(parent, "sibling-secret"), []byte("x"), 0o644))
			ws := filepath.Join(parent, "ws")
			must(t, os.Mkdir(ws, 0o755))
			must(t, os.Chown(ws, tc.uid, tc.gid))
			mine := filepath.Join(ws, "mine.txt")
			must(t, os.WriteFile(mine, []byte("from the file tools\n"), 0o644))
			must(t, os.Chown(mine, tc.uid, tc.gid))
			theirs := filepath.Join(ws, "theirs.txt")
			must(t, os.WriteFile(theirs, []byte("another user's\n"), 0o644))
			must(t, os.Chown(theirs, 4242, 4242))

			r, err := Run(context.Background(), Policy{Workspace: ws}, "sh", "-c",
				"pwd && echo new > new.txt && mkdir -p d && echo x > d/f && echo from exec >> mine.txt && if test -e ../sibling-secret; then echo sibling-secret; fi && "+
					"if echo pwned >> theirs.txt; then echo WROTE-THEIRS; fi")
			if err != nil {
				t.Fatal(err)
			}
			if !r.OK() {
				t.Fatalf("%s: stdout %q stderr %q", r.Summary(), r.Stdout, r.Stderr)
			}
			out := string(r.Stdout)
			if !strings.HasPrefix(out, ws+"\n") {
				t.Errorf("working directory: %q, want %s", out, ws)
			}
			if strings.Contains(out, "sibling-secret") && tc.base != "reachable" {
				t.Errorf("the run saw what the 0700 directory holds besides the workspace: %q", out)
			}
			if strings.Contains(out, "WROTE-THEIRS") || !strings.Contains(string(r.Stderr), "Permission denied") {
				t.Errorf("the run wrote another user's file: %q %q", out, r.Stderr)
			}
			for _, p := range []string{"new.txt", "d", "d/f", "mine.txt"} {
				if uid, gid := ownerOf(t, filepath.Join(ws, p)); int(uid) != tc.uid || int(gid) != tc.gid {
					t.Errorf("%s belongs to %d:%d on the host, want the workspace owner %d:%d", p, uid, gid, tc.uid, tc.gid)
				}
			}
			if b, _ := os.ReadFile(mine); string(b) != "from the file tools\nfrom exec\n" {
				t.Errorf("mine.txt = %q", b)
			}
			if b, _ := os.ReadFile(theirs); string(b) != "another user's\n" {
				t.Errorf("theirs.txt = %q", b)
			}
		})
	}
}
