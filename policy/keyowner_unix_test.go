//go:build unix

package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckKeyOwner: a key file owned by the process's user or by root
// is taken; one owned by another user is refused, whoever runs the test
// (as root, the file is given to another user; otherwise the check is
// asked for another user than the file's owner).
func TestCheckKeyOwner(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(p, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	stat := func() os.FileInfo {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	me := os.Geteuid()
	if err := checkKeyOwner(p, stat()); err != nil {
		t.Fatalf("own file: %v", err)
	}
	if me == 0 {
		if err := checkKeyOwnerFor(p, stat(), 4242); err != nil {
			t.Fatalf("root's file read by another user: %v", err)
		}
		if err := os.Chown(p, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if err := checkKeyOwner(p, stat()); err == nil || !strings.Contains(err.Error(), "owned by user 4242") {
			t.Fatalf("another user's file: %v", err)
		}
		if _, err := ReadSignerKeyFile(p); err == nil || !strings.Contains(err.Error(), "owned by user 4242") {
			t.Fatalf("ReadSignerKeyFile of another user's file: %v", err)
		}
		return
	}
	if err := checkKeyOwnerFor(p, stat(), me+1); err == nil || !strings.Contains(err.Error(), "neither this process's user") {
		t.Fatalf("a file owned by another user than the reader: %v", err)
	}
}
