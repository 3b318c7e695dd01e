package policy_test

import (
	"testing"

	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/approvaltest"
)

// TestApprovalStores runs the stores' shared contract (approvaltest)
// over the memory store and the file store; natstool runs it over the
// NATS store.
func TestApprovalStores(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		approvaltest.TestStore(t, func(t *testing.T) (policy.ApprovalStore, policy.ApprovalStore) {
			s := policy.NewMemoryApprovalStore()
			return s, s
		})
	})
	t.Run("file", func(t *testing.T) {
		approvaltest.TestStore(t, func(t *testing.T) (policy.ApprovalStore, policy.ApprovalStore) {
			dir := t.TempDir()
			return &policy.FileApprovalStore{Dir: dir}, &policy.FileApprovalStore{Dir: dir}
		})
		approvaltest.TestFull(t, &policy.FileApprovalStore{Dir: t.TempDir(), Max: 4}, 4)
	})
}
