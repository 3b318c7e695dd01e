package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// TestWithDefaultPrincipal: a call whose context carries no principal is
// decided, listed, approved and audited for the default one; a principal
// on the context wins. Control: without the option the same call is the
// anonymous principal's, and refused.
func TestWithDefaultPrincipal(t *testing.T) {
	roles := []string{"viewer"}
	var audit bytes.Buffer
	def := newTestAuthorizer(t, policy.WithDefaultPrincipal(policy.Principal{ID: "carol", Roles: roles, Attrs: map[string]any{"tenant": "a"}}),
		policy.WithAudit(policy.NewAuditLog(&audit)))
	roles[0] = "admin" // the option keeps its own copy
	plain := newTestAuthorizer(t)
	bg := context.Background()
	read := json.RawMessage(`{"path":"docs/a"}`)
	for _, tc := range []struct {
		name string
		a    *policy.Authorizer
		ctx  context.Context
		tool string
		args json.RawMessage
		want policy.Effect
		who  string
	}{
		{"control: anonymous without the option", plain, bg, "read_file", read, policy.Deny, ""},
		{"no principal: the default", def, bg, "read_file", read, policy.Allow, "carol"},
		{"no principal: the default's attributes", def, bg, "report", json.RawMessage(`{}`), policy.Allow, "carol"},
		{"no principal: the default's roles only", def, bg, "write_file", json.RawMessage(`{"path":"docs/a","content":"x"}`), policy.Deny, "carol"},
		{"WithoutPrincipal: the default", def, policy.WithoutPrincipal(policy.WithPrincipal(bg, bob)), "read_file", read, policy.Allow, "carol"},
		{"a principal on the context wins", def, policy.WithPrincipal(bg, bob), "write_file", json.RawMessage(`{"path":"docs/a","content":"x"}`), policy.Allow, "bob"},
		{"a principal on the context wins, refused", def, policy.WithPrincipal(bg, dave), "read_file", read, policy.Deny, "dave"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, _ := testRegistry(t, tc.a)
			tl, _ := reg.Get(tc.tool)
			d := tc.a.Decide(tc.ctx, tool.AccessRequest{Tool: tl, Name: tc.tool, Options: tool.OptionsOf(tl), Args: tc.args})
			if d.Effect != tc.want || d.Principal.ID != tc.who {
				t.Errorf("Decide: %s for %q, want %s for %q", d.Effect, d.Principal.ID, tc.want, tc.who)
			}
			res := reg.Execute(tc.ctx, tc.tool, tc.args)
			if (res.Kind == tool.KindDenied) != (tc.want == policy.Deny) {
				t.Errorf("Execute: %s %s", res.Kind, res.Error)
			}
			if got := tc.a.CanList(tc.ctx, tc.tool, tool.OptionsOf(tl)); tc.tool == "read_file" && got != (tc.want == policy.Allow) {
				t.Errorf("CanList = %v", got)
			}
		})
	}
	if !strings.Contains(audit.String(), `"principal":"carol"`) || strings.Contains(audit.String(), `"principal":""`) {
		t.Errorf("the audit log does not name the default principal:\n%s", audit.String())
	}
	if !def.DefersArgs() || !def.RecordsOutcomes() || plain.RecordsOutcomes() {
		t.Error("the option changed what the registry is told of the Authorizer")
	}
}

// TestExplain: Explain decides on the arguments a registry would check,
// defaults applied, and neither runs the tool nor records the decision;
// arguments a registry refuses are an error, with no decision.
func TestExplain(t *testing.T) {
	var audit bytes.Buffer
	a := newTestAuthorizer(t, policy.WithAudit(policy.NewAuditLog(&audit)))
	reg, ran := testRegistry(t, a)
	search, _ := reg.Get("search")
	ctx := policy.WithPrincipal(context.Background(), carol)
	for _, tc := range []struct {
		name, args, want string
		effect           policy.Effect
		policies         []string
		err              string
	}{
		{"defaults applied", `{"query":"q","opts":{}}`, `{"query":"q","limit":10,"opts":{"lang":"en"}}`, policy.Allow, []string{"search-english"}, ""},
		{"refused over the limit", `{"query":"q","limit":50,"opts":{}}`, `{"query":"q","limit":50,"opts":{"lang":"en"}}`, policy.Deny, nil, ""},
		{"unknown argument", `{"query":"q","bogus":1}`, "", "", nil, "bogus"},
		{"wrong type", `{"query":7}`, "", "", nil, "query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := a.Explain(ctx, search, json.RawMessage(tc.args))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(e.Args) != tc.want || e.Decision.Effect != tc.effect || e.Decision.Principal.ID != "carol" {
				t.Errorf("got %s %s for %q, want %s %s", e.Decision.Effect, e.Args, e.Decision.Principal.ID, tc.effect, tc.want)
			}
			if tc.policies != nil && strings.Join(e.Decision.Policies, ",") != strings.Join(tc.policies, ",") {
				t.Errorf("policies %v, want %v", e.Decision.Policies, tc.policies)
			}
		})
	}
	if _, ok := ran.Load("search"); ok {
		t.Error("Explain ran the tool")
	}
	if audit.Len() != 0 {
		t.Errorf("Explain recorded a decision:\n%s", audit.String())
	}
}
