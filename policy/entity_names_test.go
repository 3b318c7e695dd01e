package policy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// TestUnknownEntityNamesAreErrors: a policy that names an entity type
// the Authorizer never makes (role, user, tool, a namespace) or an action
// it never decides (Action::"Call") never applies, and a forbid so
// written is silently dead: the suspended user's calls ran under the
// permit for all (the attack rows loaded before the fix, and the call
// the forbid's author meant to stop was allowed; the failure message
// shows it). Such a name is now an error at New, Load and Reload. The
// controls are the same forbids with the names the Authorizer makes,
// which refuse the call.
func TestUnknownEntityNamesAreErrors(t *testing.T) {
	const permitAll = `permit (principal, action == Action::"call", resource);` + "\n"
	eve := policy.Principal{ID: "eve", Roles: []string{"suspended"}}
	for _, tc := range []struct {
		name, forbid string
		bad          string // "": loads, and the forbid refuses eve's call
	}{
		{"control: Role in the scope", `forbid (principal in Role::"suspended", action, resource);`, ""},
		{"control: User in the scope", `forbid (principal == User::"eve", action, resource);`, ""},
		{"control: Action::\"call\"", `forbid (principal, action == Action::"call", resource == Tool::"kv");`, ""},
		{"control: Role in a condition", `forbid (principal, action, resource) when { principal in Role::"suspended" };`, ""},
		{"control: is User", `forbid (principal is User in Role::"suspended", action, resource);`, ""},
		{"control: actions in a list", `forbid (principal in Role::"suspended", action in [Action::"call", Action::"approve", Action::"approveOwn"], resource);`, ""},
		{"attack: role in the scope", `forbid (principal in role::"suspended", action, resource);`, `role::"suspended"`},
		{"attack: user in the scope", `forbid (principal == user::"eve", action, resource);`, `user::"eve"`},
		{"attack: Action::\"Call\"", `forbid (principal, action == Action::"Call", resource == Tool::"kv");`, `Action::"Call"`},
		{"attack: action::\"call\"", `forbid (principal == User::"eve", action == action::"call", resource);`, `action::"call"`},
		{"attack: tool in the scope", `forbid (principal == User::"eve", action, resource == tool::"kv");`, `tool::"kv"`},
		{"attack: role in a condition", `forbid (principal, action, resource) when { principal in role::"suspended" };`, `role::"suspended"`},
		{"attack: a namespaced Role", `forbid (principal in Clawtool::Role::"suspended", action, resource);`, `Clawtool::Role::"suspended"`},
		{"attack: is user", `forbid (principal is user, action, resource);`, "user"},
		{"attack: is user in a condition", `forbid (principal, action, resource) when { principal is user };`, "user"},
		{"attack: an action of another case in a list", `forbid (principal in Role::"suspended", action in [Action::"approve", Action::"CALL"], resource);`, `Action::"CALL"`},
		{"attack: a role in a set literal", `forbid (principal, action, resource) when { [role::"suspended"].contains(principal) || principal in role::"suspended" };`, `role::"suspended"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := permitAll + tc.forbid
			a, err := policy.New("p.cedar", []byte(src))
			if tc.bad == "" || err == nil {
				if err != nil {
					t.Fatal(err)
				}
				kv, _ := tool.New("kv", "Keeps notes.", func(context.Context, struct{}) (string, error) { return "ok", nil })
				d := a.Decide(policy.WithPrincipal(context.Background(), eve), tool.AccessRequest{Name: "kv", Tool: kv})
				if tc.bad != "" {
					t.Fatalf("New took %s; eve's call was then %s, the forbid dead", tc.bad, d.Effect)
				}
				if d.Effect != policy.Deny {
					t.Fatalf("eve's call: %s, want deny", d.Effect)
				}
				return
			}
			if !strings.Contains(err.Error(), tc.bad) {
				t.Fatalf("New = %v, want an error naming %s", err, tc.bad)
			}
			ok, err := policy.New("p.cedar", []byte(permitAll))
			if err != nil {
				t.Fatal(err)
			}
			if err := ok.Reload("p.cedar", []byte(src)); err == nil {
				t.Fatal("Reload took the policies")
			}
		})
	}
}
