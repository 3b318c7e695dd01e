package policy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// unmodelledPolicies permit every call, except for a principal whose
// clearance is below 3 or whose risk is over 0.5: guarded with has, as
// Cedar's authors advise for an attribute some principals lack.
const unmodelledPolicies = `
permit(principal, action, resource);
@id("low-clearance")
forbid(principal, action, resource) when { principal has clearance && principal.clearance < 3 };
@id("risky")
forbid(principal, action, resource) when { principal has risk && principal.risk.greaterThan(decimal("0.5")) };
`

// TestUnmodelledAttributeIsNoAllow: a principal's attribute holds a value
// Cedar has no type for (an unsigned or 32-bit integer a host set, a
// number with more than four decimal places or beyond 64 bits from a
// token's claims, a nested value past the depth bound). Converted by
// leaving it out, the forbid guarded by has does not apply and the call
// is allowed: the attribute meant to refuse it allows it. Every call of
// such a principal is refused, saying which attribute, and no tool is
// listed for it. Controls: the same values in types Cedar holds are
// refused by the forbid itself, and a null (absent, as documented) or an
// attribute of a modelled type is allowed.
func TestUnmodelledAttributeIsNoAllow(t *testing.T) {
	a, err := policy.New("unmodelled.cedar", []byte(unmodelledPolicies))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	tl, err := tool.New("report", "Reports.", func(context.Context, struct{}) (string, error) { return "ok", nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(tl); err != nil {
		t.Fatal(err)
	}
	deep := any("x")
	for range 80 {
		deep = map[string]any{"in": deep}
	}
	for _, tc := range []struct {
		name  string
		attrs map[string]any
		want  policy.Effect
		why   string // in the reason of a refusal
	}{
		{"control: clearance 1 as int", map[string]any{"clearance": 1}, policy.Deny, ""},
		{"control: clearance 5", map[string]any{"clearance": 5}, policy.Allow, ""},
		{"control: risk 0.9", map[string]any{"risk": 0.9}, policy.Deny, ""},
		{"control: risk null is absent", map[string]any{"risk": nil}, policy.Allow, ""},
		{"control: a token's number", map[string]any{"clearance": json.Number("1")}, policy.Deny, ""},
		{"clearance 1 as uint8", map[string]any{"clearance": uint8(1)}, policy.Deny, "clearance"},
		{"clearance 1 as int32", map[string]any{"clearance": int32(1)}, policy.Deny, "clearance"},
		{"risk with five decimal places", map[string]any{"risk": 0.99999}, policy.Deny, "risk"},
		{"clearance beyond 64 bits", map[string]any{"clearance": json.Number("-1e30")}, policy.Deny, "clearance"},
		{"in a list", map[string]any{"teams": []any{"a", uint(2)}}, policy.Deny, "teams[1]"},
		{"in a record", map[string]any{"org": map[string]any{"since": time.Unix(0, 0)}}, policy.Deny, "org.since"},
		{"past the depth bound", map[string]any{"deep": deep}, policy.Deny, "deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u", Attrs: tc.attrs})
			d := a.Decide(ctx, tool.AccessRequest{Tool: tl, Name: "report", Options: tool.OptionsOf(tl), Args: json.RawMessage(`{}`)})
			if d.Effect != tc.want || tc.why != "" && !strings.Contains(d.Reason, tc.why) {
				t.Fatalf("Decide: %s (%s), want %s naming %q", d.Effect, d.Reason, tc.want, tc.why)
			}
			res := reg.Execute(ctx, "report", []byte(`{}`))
			if (res.Kind == tool.KindDenied) != (tc.want == policy.Deny) {
				t.Errorf("Execute: %s %s, want %s", res.Kind, res.Error, tc.want)
			}
			if got := a.CanList(ctx, "report", tool.OptionsOf(tl)); got != (tc.want == policy.Allow) {
				t.Errorf("CanList = %v, want %v", got, tc.want == policy.Allow)
			}
		})
	}
}
