package policy_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

type modeArgs struct {
	Mode string `json:"mode" enum:"a,b,c"`
	Flag bool   `json:"flag"`
}

// TestListingProperty checks, over random policy sets, that a principal
// lists exactly the tools for which some permit applies to some
// arguments and no single forbid applies to all of them, each side found
// by brute force over a finite argument domain (mode a, b or c; flag true
// or false) with Decide on one-policy sets, independently of the partial
// evaluation listing uses. It also checks that every tool some call may
// run is listed.
func TestListingProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	users := []policy.Principal{
		{ID: "u0", Roles: []string{"r0"}},
		{ID: "u1", Roles: []string{"r1"}},
		{ID: "u2", Roles: []string{"r2"}}, // r2 inherits r1
		{ID: "u3"},
	}
	pscopes := []string{"principal", `principal in Role::"r0"`, `principal in Role::"r1"`, `principal == User::"u3"`}
	conds := []string{"", `when { context.args.mode == "a" }`, `when { context.args.flag }`, `when { resource.readOnly }`, `unless { context.args.mode == "b" }`}
	for round := range 200 {
		reg := tool.NewRegistry()
		var tools []tool.Tool
		for i := range 4 {
			tl := tool.Must(tool.New(fmt.Sprintf("t%d", i), "T.", func(ctx context.Context, a modeArgs) (string, error) { return "", nil },
				tool.WithAnnotations(tool.Annotations{ReadOnly: rng.IntN(2) == 0})))
			tools = append(tools, tl)
			reg.Register(tl)
		}
		var b strings.Builder
		var permits, forbids []string
		for range 1 + rng.IntN(6) {
			effect := []string{"permit", "forbid", `@effect("ask") permit`}[rng.IntN(3)]
			res := "resource"
			if rng.IntN(2) == 0 {
				res = fmt.Sprintf(`resource == Tool::"t%d"`, rng.IntN(4))
			}
			line := fmt.Sprintf("%s (%s, action, %s) %s;\n", effect, pscopes[rng.IntN(len(pscopes))], res, conds[rng.IntN(len(conds))])
			b.WriteString(line)
			if effect == "forbid" {
				forbids = append(forbids, line)
			} else {
				permits = append(permits, line)
			}
		}
		src := b.String()
		a, err := policy.New("random.cedar", []byte(src), policy.WithRoleParents(map[string][]string{"r2": {"r1"}}))
		if err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, src)
		}
		load := func(src string) *policy.Authorizer {
			a, err := policy.New("part.cedar", []byte(src), policy.WithRoleParents(map[string][]string{"r2": {"r1"}}))
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		permitOnly := load(strings.Join(permits, ""))
		var forbidEach []*policy.Authorizer
		for _, f := range forbids {
			forbidEach = append(forbidEach, load(f+"permit (principal, action, resource);\n"))
		}
		for _, u := range users {
			ctx := policy.WithPrincipal(context.Background(), u)
			listed := map[string]bool{}
			for _, tl := range a.View(ctx, reg).List() {
				listed[tl.Name()] = true
			}
			for _, tl := range tools {
				decide := func(a *policy.Authorizer, args string) policy.Effect {
					return a.Decide(ctx, tool.AccessRequest{Tool: tl, Name: tl.Name(), Options: tool.OptionsOf(tl), Args: []byte(args)}).Effect
				}
				callable, somePermit := false, false
				forbidsAll := make([]bool, len(forbidEach))
				for i := range forbidsAll {
					forbidsAll[i] = true
				}
				for _, mode := range []string{"a", "b", "c"} {
					for _, flag := range []bool{false, true} {
						args := fmt.Sprintf(`{"mode":%q,"flag":%v}`, mode, flag)
						callable = callable || decide(a, args) != policy.Deny
						somePermit = somePermit || decide(permitOnly, args) != policy.Deny
						for i, f := range forbidEach {
							forbidsAll[i] = forbidsAll[i] && decide(f, args) == policy.Deny
						}
					}
				}
				want := somePermit
				for _, all := range forbidsAll {
					want = want && !all
				}
				if listed[tl.Name()] != want {
					t.Errorf("round %d: %s: %s listed %v, want %v; policies:\n%s", round, u.ID, tl.Name(), listed[tl.Name()], want, src)
				}
				if callable && !listed[tl.Name()] {
					t.Errorf("round %d: %s: %s may be called but is not listed; policies:\n%s", round, u.ID, tl.Name(), src)
				}
			}
		}
	}
}
