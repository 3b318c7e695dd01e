//go:build unix

package natstool_test

import (
	"os"
	"testing"

	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/approvaltest"
	"github.com/nats-io/nats.go"
)

const (
	crashURLEnv = "CLAWTOOL_NATS_CRASH_URL"
	crashBucket = "approvals_crash"
)

// TestCrashBetweenApprovalAndRunNATS runs approvaltest.TestCrash on the
// NATS store, each run on a server of its own: a worker killed with
// SIGKILL after it used an approval and before the tool did anything
// leaves the approval interrupted and claimed, and a person's new answer
// lets the call run exactly once more.
func TestCrashBetweenApprovalAndRunNATS(t *testing.T) {
	approvaltest.TestCrash(t, approvaltest.Crash{
		Test: "TestCrashBetweenApprovalAndRunNATS",
		Open: func(t *testing.T, dir string) (policy.ApprovalStore, []string) {
			srv := startServer(t, true)
			return openApprovals(t, connect(t, srv), crashBucket, 0), []string{crashURLEnv + "=" + srv.ClientURL()}
		},
		Reopen: func(t *testing.T, dir string) policy.ApprovalStore {
			nc, err := nats.Connect(os.Getenv(crashURLEnv))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			return openApprovals(t, nc, crashBucket, 0)
		},
	})
}

var _ policy.ApprovalClaimer = (*natstool.Approvals)(nil)
