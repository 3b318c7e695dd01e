//go:build unix

package policy_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// TestFileApprovalStoreRefusesAnotherUsersDir is an attack on the file
// store of approvals: it refused a directory others may write, but not
// one another user owns (mode 0755, say), whose owner may write an
// approved answer into it, or change its mode, at will: a root clawtool
// run with the HOME of the user who made the directory would take that
// user's answers. The control is the same store in a directory of its
// own user's.
func TestFileApprovalStoreRefusesAnotherUsersDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := &policy.FileApprovalStore{Dir: dir}
	if _, err := s.Put(ctx, record(id(1), "d1"), t0); err != nil {
		t.Fatalf("control: %v", err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	} else {
		s = &policy.FileApprovalStore{Dir: "/"} // root's, mode 0755
	}
	if _, err := s.Pending(ctx, t0); err == nil || !strings.Contains(err.Error(), "another user") {
		t.Errorf("a directory another user owns: %v, want it refused", err)
	}
}
