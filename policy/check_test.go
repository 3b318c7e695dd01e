package policy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
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

// schemaTool is a tool with a hand-written schema, for Check.
type schemaTool struct{ name, schema string }

func (s schemaTool) Name() string                { return s.name }
func (s schemaTool) Description() string         { return "A tool." }
func (s schemaTool) Parameters() json.RawMessage { return json.RawMessage(s.schema) }
func (s schemaTool) Execute(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, nil
}

// TestCheckWarnsOfNumbers: a policy that reads a number argument, or one
// without a single type, passes Cedar's validation (a has guard makes an
// argument the Cedar schema leaves out type as false), yet some values
// make it refuse the call at run time: Check warns of it, and of nothing
// for an integer argument.
func TestCheckWarnsOfNumbers(t *testing.T) {
	tools := []tool.Tool{schemaTool{"pay", `{"type":"object","properties":{
		"amount":{"type":"number"},"count":{"type":"integer"},"note":{},
		"order":{"type":"object","properties":{"total":{"type":"number"}}},
		"items":{"type":"array","items":{"type":"number"}}}}`}}
	for _, tc := range []struct {
		name, cond string
		want       string // a substring of the one warning; "" for none
	}{
		{"number", `context.args has amount && context.args.amount > 100`, "argument amount holds a JSON number"},
		{"number unguarded", `context.args.amount > 100`, "argument amount holds a JSON number"},
		{"nested number", `context.args has order && context.args.order has total && context.args.order.total > 100`, "argument order holds a JSON number"},
		{"set of numbers", `context.args has items && context.args.items.contains(5)`, "argument items holds a JSON number"},
		{"record holding a number", `context.args has order && context.args.order has total`, "argument order holds a JSON number"},
		{"untyped", `context.args has note && context.args.note > 100`, "argument note has no single JSON type"},
		{"integer", `context.args has count && context.args.count > 100`, ""},
		{"has only", `context.args has amount`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `@id("f") forbid (principal, action, resource == Tool::"pay") when { ` + tc.cond + ` };`
			problems, err := policy.Check("p.cedar", []byte(src), tools, "")
			if err != nil {
				t.Fatal(err)
			}
			var warnings, errs []string
			for _, p := range problems {
				if p.Warning {
					warnings = append(warnings, p.String())
				} else {
					errs = append(errs, p.String())
				}
			}
			if tc.cond == "context.args.amount > 100" {
				// Unguarded on an optional argument: an error too.
				if len(errs) == 0 {
					t.Errorf("no error for an unguarded optional argument")
				}
			} else if len(errs) > 0 {
				t.Errorf("errors %q", errs)
			}
			switch {
			case tc.want == "" && len(warnings) > 0:
				t.Errorf("warnings %q, want none", warnings)
			case tc.want != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.want) || !strings.Contains(warnings[0], "warning: ")):
				t.Errorf("warnings %q, want one with %q", warnings, tc.want)
			}
		})
	}
}

// TestCheckWarnsOfLists: a policy that compares with == or != (or as an
// element of contains, containsAll, containsAny) a value whose schema
// allows a list passes Cedar's validation, yet every call with a list of
// two or more values there is refused at run time (Cedar sees a list as
// a set): Check warns of it, once per argument, and of nothing for a
// list read as a set of scalars.
func TestCheckWarnsOfLists(t *testing.T) {
	tools := []tool.Tool{schemaTool{"run", `{"type":"object","required":["argv","mode","opts","groups"],"properties":{
		"argv":{"type":"array","items":{"type":"string"}},
		"mode":{"type":"string"},
		"opts":{"type":"object","required":["paths","dry"],"properties":{"paths":{"type":"array","items":{"type":"string"}},"dry":{"type":"boolean"}}},
		"groups":{"type":"array","items":{"type":"array","items":{"type":"string"}}}}}`}}
	for _, tc := range []struct {
		name, cond string
		want       []string // substrings, one per warning
	}{
		{"list equals", `context.args.argv == ["cp", "a", "b"]`, []string{"argument argv may hold a list"}},
		{"list not equals", `context.args.argv != ["rm"]`, []string{"argument argv may hold a list"}},
		{"list as element", `[["cp", "a", "b"]].contains(context.args.argv)`, []string{"argument argv may hold a list"}},
		{"if branch", `(if context.args.mode == "x" then context.args.argv else ["a"]) == ["a"]`, []string{"argument argv may hold a list"}},
		{"record holding a list", `context.args.opts == {"paths": ["a"], "dry": true}`, []string{"argument opts may hold a list"}},
		{"list inside elements", `context.args.groups.contains(["a", "b"])`, []string{"argument groups may hold a list"}},
		{"whole context", `context.args == context.args`, []string{"argument argv may hold a list", "argument groups may hold a list", "argument opts may hold a list"}},
		{"set of scalars", `context.args.argv.contains("rm")`, nil},
		{"containsAny", `context.args.argv.containsAny(["rm", "dd"])`, nil},
		{"scalar beside a list", `context.args.opts.dry == true && context.args.mode == "x"`, nil},
		{"isEmpty", `context.args.argv.isEmpty()`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `@id("f") forbid (principal, action, resource == Tool::"run") when { ` + tc.cond + ` };`
			problems, err := policy.Check("p.cedar", []byte(src), tools, "")
			if err != nil {
				t.Fatal(err)
			}
			var warnings []string
			for _, p := range problems {
				if !p.Warning {
					t.Errorf("error %q", p)
					continue
				}
				warnings = append(warnings, p.String())
			}
			if len(warnings) != len(tc.want) {
				t.Fatalf("warnings %q, want %d", warnings, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(warnings[i], w) || !strings.Contains(warnings[i], "warning: ") {
					t.Errorf("warning %d = %q, want it to mention %q", i, warnings[i], w)
				}
			}
		})
	}
}
