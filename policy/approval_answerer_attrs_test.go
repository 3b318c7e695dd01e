package policy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// answererForbid lets leads answer kv's approvals, except leads whose
// risk is over 5: the forbid is guarded by has, as a policy on an
// optional attribute must be.
const answererForbid = approvalPolicies + `
@id("leads-approve")
permit (principal in Role::"lead", action == Action::"approve", resource == Tool::"kv");

@id("no-risky-approvers")
forbid (principal, action == Action::"approve", resource == Tool::"kv")
when { principal has risk && principal.risk > 5 };
`

// TestAnswererAttributeUnreadableIsRefused: an answerer one of whose
// attributes the policies cannot read (a uint8, a number beyond what
// Cedar holds) may not answer an approval, as it may not make a call.
// Left out of the entity, the attribute reads as absent, and the forbid
// guarded by has let the answer through: before the fix MayAnswer judged
// the answerer without the check every call makes (the attack rows
// failed, answering as a lead the forbid names).
func TestAnswererAttributeUnreadableIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		risk any
		want error // nil: the answer is let through
	}{
		// Controls: the forbid is what stands between a risky lead
		// and the answer, and a lead without risk answers.
		{"control: a risk the policies read (9) is forbidden", 9, policy.ErrNotApprover},
		{"control: no risk answers", nil, nil},
		{"control: a low risk answers", 1, nil},
		// The attacks: the same risk in a form the policies cannot read.
		{"attack: risk as a uint8", uint8(9), policy.ErrNotApprover},
		{"attack: risk beyond a Long", 1e30, policy.ErrNotApprover},
		{"attack: risk of five decimal places", 9.00001, policy.ErrNotApprover},
		{"attack: risk nested in a list", []any{uint8(9)}, policy.ErrNotApprover},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newApprovalProcess(t, answererForbid, policy.NewMemoryApprovalStore())
			req := wantRequest(t, p.call(otto, `{"op":"delete","key":"notes/a"}`))
			lead := policy.Principal{ID: "lea", Roles: []string{"lead"}}
			if tc.risk != nil {
				lead.Attrs = map[string]any{"risk": tc.risk}
			}
			_, err := p.a.Answer(policy.WithPrincipal(context.Background(), lead), req.ID, true, "fine")
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Answer: %v, want it answered", err)
				}
				if res := p.call(otto, `{"op":"delete","key":"notes/a"}`); res.IsError || p.ran.Load() != 1 {
					t.Fatalf("approved call: %+v, ran %d times, want it run once", res, p.ran.Load())
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Answer: %v, want %v", err, tc.want)
			}
			if res := p.call(otto, `{"op":"delete","key":"notes/a"}`); !res.IsError || p.ran.Load() != 0 {
				t.Fatalf("call after a refused answer: %+v, ran %d times, want it still waiting", res, p.ran.Load())
			}
		})
	}
}
