package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy"
)

// TestAnswerRejudgedWhenUsed: an approval answer is judged when it is
// given and again when it is used, under the policies in force then. The
// stores kept only the answerer's id, so an answer stayed usable until it
// expired after a reload forbade its answerer, or took the permit away:
// a lead suspended after approving still had the call run (the attack
// rows ran the call before the fix). The controls: the same answer, the
// policies unchanged or changed for someone else, runs the call once;
// a denial stands whatever the reload says of its answerer.
func TestAnswerRejudgedWhenUsed(t *testing.T) {
	const base = approvalPolicies + `
@id("leads-approve")
permit (principal in Role::"lead", action == Action::"approve", resource == Tool::"kv");
`
	lea := policy.Principal{ID: "lea", Roles: []string{"lead"}, Attrs: map[string]any{"level": 3, "team": "ops", "big": int64(1)<<60 + 1}}
	const del = `{"op":"delete","key":"notes/a"}`
	for _, tc := range []struct {
		name    string
		reload  string // the policies in force when the answer is used
		approve bool
		refused string // "": the answer is used as given
	}{
		{"control: the policies unchanged", base, true, ""},
		{"control: a forbid for someone else", base + `@id("no-bob") forbid (principal == User::"bob", action, resource);`, true, ""},
		{"control: a forbid on attributes that do not match", base + `@id("no-big") forbid (principal, action == Action::"approve", resource) when { principal.big > 1152921504606846977 };`, true, ""},
		{"control: a denial stands once the permit is gone", approvalPolicies, false, "denied by lea"},
		{"attack: the answerer is forbidden now", base + `@id("no-lea") forbid (principal == User::"lea", action, resource);`, true, "no-lea"},
		{"attack: the answerer's role is suspended now", base + `@id("no-leads") forbid (principal in Role::"lead", action == Action::"approve", resource);`, true, "no-leads"},
		{"attack: the permit is gone", approvalPolicies, true, "no permit names"},
		{"attack: a forbid on the answerer's attributes", base + `@id("no-ops") forbid (principal, action == Action::"approve", resource) when { principal.team == "ops" && principal.level >= 3 };`, true, "no-ops"},
		{"attack: a forbid on a large attribute read whole", base + `@id("no-big") forbid (principal, action == Action::"approve", resource) when { principal.big == 1152921504606846977 };`, true, "no-big"},
		{"attack: a forbid that fails on the answerer", base + `@id("broken") forbid (principal, action == Action::"approve", resource) when { principal.clearance > 2 };`, true, "could not be evaluated"},
	} {
		for _, st := range []struct {
			name string
			new  func(t *testing.T) policy.ApprovalStore
		}{
			{"memory", func(t *testing.T) policy.ApprovalStore { return policy.NewMemoryApprovalStore() }},
			{"file", func(t *testing.T) policy.ApprovalStore { return &policy.FileApprovalStore{Dir: t.TempDir()} }},
		} {
			t.Run(tc.name+"/"+st.name, func(t *testing.T) {
				store := st.new(t)
				p := newApprovalProcess(t, base, store)
				req := wantRequest(t, p.call(otto, del))
				if _, err := p.a.Answer(policy.WithPrincipal(context.Background(), lea), req.ID, tc.approve, "ok"); err != nil {
					t.Fatalf("Answer: %v", err)
				}
				if err := p.a.Reload("approvals.cedar", []byte(tc.reload)); err != nil {
					t.Fatal(err)
				}
				res := p.call(otto, del)
				if tc.refused == "" {
					if res.IsError || p.ran.Load() != 1 {
						t.Fatalf("approved call: %+v, ran %d times, want it run once", res, p.ran.Load())
					}
					return
				}
				if !res.IsError || p.ran.Load() != 0 {
					t.Fatalf("the call ran on an answer its answerer may no longer give: %+v", res)
				}
				if text := res.Error; !strings.Contains(text, tc.refused) {
					t.Fatalf("result %q does not say why (%q)", text, tc.refused)
				}
				// The used answer is gone: the next call asks afresh.
				if tc.approve {
					wantRequest(t, p.call(otto, del))
				}
			})
		}
	}
}

// TestAnswerWithoutAnswererJudgedByID: a record answered before the
// stores kept who answered as what (or written to the store by a host
// naming a person) has only the answerer's id: it is judged as that id
// alone, without roles or attributes, so it fails closed where the
// policies permit by role. The host's own answers (Grant, an Approver's)
// stand. The control is a permit naming the user, which such a record
// still meets.
func TestAnswerWithoutAnswererJudgedByID(t *testing.T) {
	const del = `{"op":"delete","key":"notes/a"}`
	for _, tc := range []struct {
		name, extra, by string
		runs            bool
	}{
		{"control: the host's grant", "", "the host", true},
		{"control: a permit naming the user", `@id("ann-approves") permit (principal == User::"ann", action == Action::"approve", resource == Tool::"kv");`, "ann", true},
		{"attack: a role permit, no roles kept", "", "ann", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &policy.FileApprovalStore{Dir: t.TempDir()}
			p := newApprovalProcess(t, approvalPolicies+tc.extra, store)
			req := wantRequest(t, p.call(otto, del))
			if _, err := store.Answer(context.Background(), req.ID, policy.ApprovalAnswer{Approved: true, By: tc.by}, time.Now()); err != nil {
				t.Fatal(err)
			}
			res := p.call(otto, del)
			if ran := p.ran.Load() == 1; ran != tc.runs {
				t.Fatalf("ran = %v, want %v: %+v", ran, tc.runs, res)
			}
		})
	}
}

// TestAnswererNamedAsTheHost: a principal named "the host" or "the
// approver" (a token's sub is whatever its issuer wrote) answered as any
// admin, and its answer read as the host's own everywhere it is shown,
// and stood unjudged in a store that drops the answerer; one of an empty
// id (User::"", which a host's WithPrincipal may carry) answered as
// "the anonymous caller", whom no one may hold to account. Such a
// principal answers nothing; the control is an admin of another name.
func TestAnswererNamedAsTheHost(t *testing.T) {
	for _, tc := range []struct {
		id     string
		refuse bool
	}{{"ann", false}, {"the host", true}, {"the approver", true}, {"", true}} {
		t.Run(tc.id, func(t *testing.T) {
			p := newApprovalProcess(t, approvalPolicies, policy.NewMemoryApprovalStore())
			req := wantRequest(t, p.call(otto, `{"op":"delete","key":"notes/a"}`))
			who := policy.Principal{ID: tc.id, Roles: []string{"admin"}}
			_, err := p.a.Answer(policy.WithPrincipal(context.Background(), who), req.ID, true, "")
			if refused := errors.Is(err, policy.ErrNotApprover); refused != tc.refuse {
				t.Fatalf("Answer as %q: %v, want refused %v", tc.id, err, tc.refuse)
			}
		})
	}
}
