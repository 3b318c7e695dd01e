//go:build unix

package policy_test

import (
	"testing"

	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/approvaltest"
)

// TestCrashBetweenApprovalAndRun runs approvaltest.TestCrash on the file
// store: a process killed with SIGKILL after it used an approval and
// before the tool did anything leaves the approval interrupted, and a
// person's new answer lets the call run exactly once more.
func TestCrashBetweenApprovalAndRun(t *testing.T) {
	open := func(t *testing.T, dir string) policy.ApprovalStore { return &policy.FileApprovalStore{Dir: dir} }
	approvaltest.TestCrash(t, approvaltest.Crash{
		Test:   "TestCrashBetweenApprovalAndRun",
		Open:   func(t *testing.T, dir string) (policy.ApprovalStore, []string) { return open(t, dir), nil },
		Reopen: open,
	})
}
