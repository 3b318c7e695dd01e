package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// TestBlanketForbidStopsAnswers: a forbid written for every action,
// such as forbid (principal in Role::"suspended", action, resource), was
// left out when an answer was decided (only policies naming
// Action::"approve" decided), so a suspended lead still approved calls
// (the attack rows answered before the fix). Such a forbid now applies
// to answers too, unless it reads the context, which an answer's lacks
// (context.args): it was written for calls' arguments, and would fail
// every answer. A permit for every action still makes no one an
// approver. The controls: a lead who is not suspended answers, and so
// does one under a forbid for every action that reads the arguments.
func TestBlanketForbidStopsAnswers(t *testing.T) {
	const leads = approvalPolicies + `
@id("leads-approve")
permit (principal in Role::"lead", action == Action::"approve", resource == Tool::"kv");
@id("anyone-calls-read")
permit (principal, action, resource == Tool::"read");
`
	for _, tc := range []struct {
		name, extra string
		answerer    policy.Principal
		refused     string // "": answered
	}{
		{"control: a lead", `@id("no-suspended") forbid (principal in Role::"suspended", action, resource);`,
			policy.Principal{ID: "lea", Roles: []string{"lead"}}, ""},
		{"control: a forbid for every action on the arguments", `@id("no-admin-keys") forbid (principal, action, resource == Tool::"kv") when { context.args has key && context.args.key like "admin/*" };`,
			policy.Principal{ID: "lea", Roles: []string{"lead"}}, ""},
		{"control: a permit for every action makes no approver", `permit (principal, action, resource);`,
			policy.Principal{ID: "vic", Roles: []string{"viewer"}}, "no permit names"},
		{"attack: a suspended lead", `@id("no-suspended") forbid (principal in Role::"suspended", action, resource);`,
			policy.Principal{ID: "lea", Roles: []string{"lead", "suspended"}}, "no-suspended"},
		{"attack: a forbid on the user for every action", `@id("no-lea") forbid (principal == User::"lea", action, resource);`,
			policy.Principal{ID: "lea", Roles: []string{"lead"}}, "no-lea"},
		{"attack: a forbid on leads and the tool for every action", `@id("kv-closed") forbid (principal in Role::"lead", action, resource == Tool::"kv");`,
			policy.Principal{ID: "lea", Roles: []string{"lead"}}, "kv-closed"},
		{"attack: a forbid for every action that fails", `@id("levels") forbid (principal in Role::"lead", action, resource) when { principal.level > 2 };`,
			policy.Principal{ID: "lea", Roles: []string{"lead"}}, "could not be evaluated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newApprovalProcess(t, leads+tc.extra, policy.NewMemoryApprovalStore())
			req := wantRequest(t, p.call(otto, `{"op":"delete","key":"notes/a"}`))
			_, err := p.a.Answer(policy.WithPrincipal(context.Background(), tc.answerer), req.ID, true, "fine")
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("Answer: %v, want it answered", err)
				}
				return
			}
			if !errors.Is(err, policy.ErrNotApprover) || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("Answer: %v, want %v naming %q", err, policy.ErrNotApprover, tc.refused)
			}
			if res := p.call(otto, `{"op":"delete","key":"notes/a"}`); !res.IsError || p.ran.Load() != 0 {
				t.Fatalf("the call ran after a refused answer: %+v", res)
			}
		})
	}
}
