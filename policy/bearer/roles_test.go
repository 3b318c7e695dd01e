package bearer_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/bearer"
)

// TestRolesClaimOfAnotherShape: a token's roles claim is not a list of
// strings: one string, as some authorization servers write a single
// role, a list holding a number, an object. Read as no roles (or as the
// strings of the list only), the role a forbid names is lost and the
// call it refuses is allowed. A single string is one role, null none;
// any other shape refuses the token. Control: the list ["suspended"] is
// refused by the forbid.
func TestRolesClaimOfAnotherShape(t *testing.T) {
	a, err := policy.New("roles.cedar", []byte(`permit(principal, action, resource);
forbid(principal in Role::"suspended", action, resource);`))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := tool.New("report", "Reports.", func(context.Context, struct{}) (string, error) { return "ok", nil })
	if err != nil {
		t.Fatal(err)
	}
	v := verifier()
	for _, tc := range []struct {
		name   string
		roles  any
		want   policy.Effect // "": the token is refused
		roles2 []string
	}{
		{"control: a list", []string{"suspended"}, policy.Deny, []string{"suspended"}},
		{"control: none", nil, policy.Allow, nil},
		{"one string", "suspended", policy.Deny, []string{"suspended"}},
		{"a list holding a number", []any{"viewer", 7, "suspended"}, "", nil},
		{"a list holding a list", []any{[]any{"suspended"}}, "", nil},
		{"an object", map[string]any{"suspended": true}, "", nil},
		{"a number", 7, "", nil},
		{"null: none", json.RawMessage("null"), policy.Allow, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := claimsFor("carol")
			if tc.roles == nil {
				delete(c, "roles")
			} else {
				c["roles"] = tc.roles
			}
			p, err := v.VerifyToken(context.Background(), sign(t, c, hmacKey, jwt.SigningMethodHS256, ""))
			if tc.want == "" {
				if !errors.Is(err, bearer.ErrInvalidToken) {
					t.Fatalf("VerifyToken: %+v, %v; want the token refused", p, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Roles, tc.roles2) {
				t.Errorf("roles %q, want %q", p.Roles, tc.roles2)
			}
			ctx := policy.WithPrincipal(context.Background(), p)
			if d := a.Decide(ctx, tool.AccessRequest{Tool: tl, Name: "report", Options: tool.OptionsOf(tl)}); d.Effect != tc.want {
				t.Errorf("Decide: %s, want %s", d.Effect, tc.want)
			}
		})
	}
}
