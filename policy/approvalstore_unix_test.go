//go:build unix

package policy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy"
)

// TestFileApprovalStoreLockHeld: a store whose lock another holds waits
// until the context ends, then fails; the control, the lock released,
// succeeds.
func TestFileApprovalStoreLockHeld(t *testing.T) {
	dir := t.TempDir()
	s := &policy.FileApprovalStore{Dir: dir}
	if _, err := s.Pending(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "approvals.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Pending(ctx, t0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Pending with the lock held = %v, want the context's error", err)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if _, err := s.Pending(context.Background(), t0); err != nil {
		t.Errorf("Pending once released = %v", err)
	}
}
