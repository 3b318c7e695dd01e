package policy_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// TestApprovedCallRunsOnceConcurrently: one approval, and 32 goroutines
// (two processes' Authorizers on one file store, or one memory store)
// make the approved call at the same moment: it runs exactly once, every
// other call gets a new approval request or a refusal, and another
// principal's identical call, made in the same burst, never uses it.
// Run under -race. The control is the approved call itself: it runs.
func TestApprovedCallRunsOnceConcurrently(t *testing.T) {
	const args = `{"op":"delete","key":"notes/race"}`
	mallory := policy.Principal{ID: "mallory", Roles: []string{"operator"}}
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) (policy.ApprovalStore, policy.ApprovalStore)
	}{
		{"memory", func(*testing.T) (policy.ApprovalStore, policy.ApprovalStore) {
			s := policy.NewMemoryApprovalStore()
			return s, s
		}},
		{"file, two processes", func(t *testing.T) (policy.ApprovalStore, policy.ApprovalStore) {
			dir := t.TempDir()
			return &policy.FileApprovalStore{Dir: dir}, &policy.FileApprovalStore{Dir: dir}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s1, s2 := tc.store(t)
			p1, p2 := newApprovalProcess(t, approvalPolicies, s1), newApprovalProcess(t, approvalPolicies, s2)
			req := wantRequest(t, p1.call(otto, args))
			if _, err := p1.a.Answer(policy.WithPrincipal(context.Background(), ann), req.ID, true, ""); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var ok atomic.Int64
			start := make(chan struct{})
			for i := range 32 {
				p, who := p1, otto
				if i%2 == 1 {
					p = p2
				}
				if i%8 == 7 {
					who = mallory
				}
				wg.Go(func() {
					<-start
					if res := p.call(who, args); !res.IsError {
						ok.Add(1)
						if who.ID != "otto" {
							t.Errorf("%s's call ran with otto's approval", who.ID)
						}
					} else if res.Kind != tool.KindDenied {
						t.Errorf("%s's call: %+v, want a refusal", who.ID, res)
					}
				})
			}
			close(start)
			wg.Wait()
			if n := p1.ran.Load() + p2.ran.Load(); n != 1 || ok.Load() != 1 {
				t.Errorf("the approved call ran %d times (%d results without error), want once", n, ok.Load())
			}
		})
	}
}
