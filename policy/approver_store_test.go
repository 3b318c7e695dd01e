package policy_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// TestApproverGetsTheStoredID: an Approver is given the id of the
// request kept in the store, the same each time the waiting call is
// made again, so a host's UI answers what the store holds; an approver
// that decides at once leaves no request behind for someone to answer
// later (which would let the next identical call run unasked).
func TestApproverGetsTheStoredID(t *testing.T) {
	const del = `{"op":"delete","key":"notes/a"}`
	var decide atomic.Value // "wait", "yes", "no"
	var given []string
	ap := policy.ApproverFunc(func(ctx context.Context, req policy.ApprovalRequest) (bool, error) {
		given = append(given, req.ID)
		switch decide.Load() {
		case "yes":
			return true, nil
		case "no":
			return false, nil
		}
		return false, policy.ErrApprovalUnavailable
	})
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			given = nil
			s := store()
			p := newApprovalProcess(t, approvalPolicies, s, policy.WithApprover(ap))
			decide.Store("wait")
			first := wantRequest(t, p.call(otto, del))
			second := wantRequest(t, p.call(otto, del))
			if first.ID != second.ID || len(given) != 2 || given[0] != first.ID || given[1] != first.ID {
				t.Fatalf("requests %s, %s; the approver was given %q; want one id throughout", first.ID, second.ID, given)
			}
			asAnn := policy.WithPrincipal(context.Background(), ann)
			if _, err := p.a.Answer(asAnn, given[1], true, ""); err != nil {
				t.Fatalf("answering the id the approver was given: %v", err)
			}
			if res := p.call(otto, del); res.IsError || p.ran.Load() != 1 {
				t.Fatalf("the answered call: %+v", res)
			}

			// Decided at once: nothing lingers, and the next call asks again.
			decide.Store("yes")
			if res := p.call(otto, del); res.IsError || p.ran.Load() != 2 {
				t.Fatalf("approved at once: %+v", res)
			}
			if pend, _ := s.Pending(context.Background(), time.Now()); len(pend) != 0 {
				t.Errorf("a request lingers after the approver decided: %+v", pend)
			}
			decide.Store("no")
			if res := p.call(otto, del); res.Kind != tool.KindDenied || p.ran.Load() != 2 {
				t.Errorf("refused at once: %+v", res)
			}
			if pend, _ := s.Pending(context.Background(), time.Now()); len(pend) != 0 {
				t.Errorf("a request lingers after the approver refused: %+v", pend)
			}
		})
	}
}
