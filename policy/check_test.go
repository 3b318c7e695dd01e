package policy_test

import (
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

func TestCheck(t *testing.T) {
	reg, _ := testRegistry(t, nil)
	problems, err := policy.Check("test.cedar", []byte(testPolicies), reg.List(), "tenant?: String")
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Errorf("the test policies have problems: %v", problems)
	}
	// A conditional forbid shadows nothing.
	problems, _ = policy.Check("ok.cedar", []byte(`permit (principal, action, resource == Tool::"read_file");
forbid (principal, action, resource) when { context.args has path && context.args.path like "secrets/*" };`), reg.List(), "")
	if len(problems) != 0 {
		t.Errorf("problems = %v", problems)
	}
	tests := []struct {
		name, src, want string
	}{
		{"unknown tool", `permit (principal, action, resource == Tool::"wirte_file");`, `no tool is named "wirte_file"`},
		{"unknown argument", `@id("p") permit (principal, action, resource == Tool::"write_file") when { context.args.pth like "docs/*" };`, "pth"},
		{"wrong type", `@id("p") permit (principal, action, resource == Tool::"search") when { context.args.limit like "1*" };`, "for tool search"},
		{"nested argument", `permit (principal, action, resource == Tool::"search") when { context.args.opts.language == "en" };`, "language"},
		{"unguarded argument on every tool", `forbid (principal, action, resource) when { context.args.path like "secrets/*" };`, "for tool admin_reset"},
		{"shadowed permit", `@id("w") permit (principal in Role::"editor", action, resource == Tool::"write_file");
@id("nobody-writes") forbid (principal, action, resource == Tool::"write_file");`, "this permit can never apply: forbid nobody-writes"},
		{"shadowed by role", `@id("w") permit (principal == User::"bob", action, resource);
@id("no-editors") forbid (principal in Role::"x", action, resource);
@id("no-bob") forbid (principal in User::"bob", action, resource);`, "forbid no-bob"},
		{"unknown principal attribute", `permit (principal, action, resource) when { principal.team == "x" };`, "team"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems, err := policy.Check("bad.cedar", []byte(tt.src), reg.List(), "tenant?: String")
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, p := range problems {
				all = append(all, p.String())
			}
			if !strings.Contains(strings.Join(all, "\n"), tt.want) {
				t.Errorf("problems = %q, want one mentioning %q", all, tt.want)
			}
		})
	}
}
