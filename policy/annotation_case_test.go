package policy_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// TestAnnotationCaseVariantIsAnError: Cedar's annotation names are case
// sensitive and any name is allowed, so @Effect("ask") is not @effect:
// the Authorizer ignored it, and a permit its author meant to ask a
// person ran every call at once (the attack rows: the delete ran without
// an approval before the fix). So with @ID, which left the policy
// unnamed in decisions, and @Reason, whose message the model never got.
// A name equal to one of them but for case is now an error, at New,
// Load and Reload (which keeps the policies in force); the controls are
// the exact names, and an annotation of another name, which stays the
// author's own.
func TestAnnotationCaseVariantIsAnError(t *testing.T) {
	const deletes = `
permit (principal in Role::"operator", action == Action::"call", resource == Tool::"kv")
when { context.args.op == "delete" };`
	for _, tc := range []struct {
		name, src string
		bad       string // "": the policies load
		ask       bool   // the delete asks
	}{
		{"control: @effect asks", `@effect("ask")` + deletes, "", true},
		{"control: another annotation is the author's", `@effect("ask") @note("Effect: ask")` + deletes, "", true},
		{"control: no annotation allows", deletes, "", false},
		{"attack: @Effect", `@Effect("ask")` + deletes, "@Effect", false},
		{"attack: @EFFECT", `@EFFECT("ask")` + deletes, "@EFFECT", false},
		{"attack: @effecT beside @id", `@id("deletes") @effecT("ask")` + deletes, "@effecT", false},
		{"attack: @ID", `@ID("deletes") @effect("ask")` + deletes, "@ID", false},
		{"attack: @Reason on a forbid", `@Reason("no") forbid (principal, action, resource == Tool::"calc");` + `@effect("ask")` + deletes, "@Reason", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.New("kv.cedar", []byte(tc.src))
			if tc.bad != "" {
				if err == nil {
					// Without the defence: what the author's ask became.
					p := newApprovalProcess(t, tc.src, policy.NewMemoryApprovalStore())
					res := p.call(otto, `{"op":"delete","key":"k"}`)
					t.Fatalf("New took %s; the delete then ran %d times without an approval (error result: %v)", tc.bad, p.ran.Load(), res.IsError)
				}
				if !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("New = %v, want an error naming %s", err, tc.bad)
				}
				// A reload to it keeps the policies in force.
				p := newApprovalProcess(t, `@effect("ask")`+deletes, policy.NewMemoryApprovalStore())
				if err := p.a.Reload("kv.cedar", []byte(tc.src)); err == nil {
					t.Fatal("Reload took the policies")
				}
				wantRequest(t, p.call(otto, `{"op":"delete","key":"k"}`))
				if p.ran.Load() != 0 {
					t.Fatal("the delete ran after a refused reload")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := newApprovalProcess(t, tc.src, policy.NewMemoryApprovalStore())
			res := p.call(otto, `{"op":"delete","key":"k"}`)
			if tc.ask {
				wantRequest(t, res)
			} else if res.IsError || p.ran.Load() != 1 {
				b, _ := json.Marshal(res)
				t.Fatalf("delete: %s, ran %d; want it run", b, p.ran.Load())
			}
		})
	}
}
