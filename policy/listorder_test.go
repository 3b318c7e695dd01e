package policy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// TestListComparedAsSet: Cedar has no lists, so a JSON array reaches the
// policies as a set, without its order or its repeats. A policy that
// permits one exact command line with == (argv == ["cp","a","b"]) would
// then permit ["cp","b","a"] too, which copies the other way, and
// ["git","status","status"]. A call whose list of two or more values a
// policy that may apply compares with == or != (or as an element that
// contains, containsAll or containsAny compares) is refused, saying so,
// the exact list too, since the policies cannot tell it from the others.
// One-value lists, lists the policies read only as sets (contains,
// containsAll, containsAny) and scalars compared beside a list are
// decided as before.
func TestListComparedAsSet(t *testing.T) {
	// Control: to Cedar the attack's list is the permitted one.
	s := func(vs ...string) cedar.Set {
		var out []cedar.Value
		for _, v := range vs {
			out = append(out, cedar.String(v))
		}
		return cedar.NewSet(out...)
	}
	if !s("cp", "notes.txt", "backup/notes.txt").Equal(s("cp", "backup/notes.txt", "notes.txt")) ||
		!s("git", "status").Equal(s("git", "status", "status")) {
		t.Fatal("control: Cedar tells the lists apart; the attack needs no defence")
	}
	type argv struct {
		Argv []string       `json:"argv"`
		Opts map[string]any `json:"opts,omitempty"`
		More [][]string     `json:"more,omitempty"`
	}
	const src = `
@id("copy-notes") permit (principal, action, resource == Tool::"run") when { context.args.argv == ["cp", "notes.txt", "backup/notes.txt"] };
@id("status") permit (principal, action, resource == Tool::"run") when { context.args.argv == ["git", "status"] };
@id("ls") permit (principal, action, resource == Tool::"run") when { !(context.args.argv != ["ls"]) };
@id("echo") permit (principal, action, resource == Tool::"echo") when { context.args.argv.contains("echo") && ["echo", "a", "b"].containsAll(context.args.argv) };
@id("mode") permit (principal, action, resource == Tool::"sync") when { context.args has opts && context.args.opts.mode == "dry" };
@id("in-set") permit (principal, action, resource == Tool::"pick") when { [["cp", "notes.txt", "backup/notes.txt"], ["ls"]].contains(context.args.argv) };
@id("any-of") permit (principal, action, resource == Tool::"batch") when { [["cp", "notes.txt", "backup/notes.txt"]].containsAll(context.args.more) };
@id("nested") permit (principal, action, resource == Tool::"deep") when { (if context.args has opts then context.args.opts else {}) == {"paths": ["a", "b"]} };
`
	for _, cache := range []int{0, 1000} {
		a, err := policy.New("p.cedar", []byte(src), policy.WithCacheSize(cache))
		if err != nil {
			t.Fatal(err)
		}
		reg := tool.NewRegistry(tool.WithAuthorizer(a))
		var ran [][]string
		for _, name := range []string{"run", "echo", "sync", "deep", "pick", "batch"} {
			reg.Register(tool.Must(tool.New(name, "Runs a command.", func(ctx context.Context, in argv) (string, error) {
				ran = append(ran, in.Argv)
				return "ran " + strings.Join(in.Argv, " "), nil
			})))
		}
		ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann"})
		for _, tc := range []struct {
			tool, args string
			runs       bool
		}{
			{"run", `{"argv":["cp","backup/notes.txt","notes.txt"]}`, false}, // the attack: the other way
			{"run", `{"argv":["git","status","status"]}`, false},             // a repeat
			{"run", `{"argv":["status","git"]}`, false},
			{"run", `{"argv":["cp","notes.txt","backup/notes.txt"]}`, false},               // the exact list: the policies cannot tell it apart
			{"deep", `{"argv":[],"opts":{"paths":["b","a"]}}`, false},                      // a list inside a compared record
			{"pick", `{"argv":["cp","backup/notes.txt","notes.txt"]}`, false},              // a list as the element contains compares
			{"batch", `{"argv":[],"more":[["cp","backup/notes.txt","notes.txt"]]}`, false}, // lists as the elements containsAll compares
			{"pick", `{"argv":["ls"]}`, true},
			{"run", `{"argv":["ls"]}`, true},                                                     // one value: a set says all a list does
			{"echo", `{"argv":["echo","b","a"]}`, true},                                          // read as a set, on purpose
			{"sync", `{"argv":["rsync","a","b"],"opts":{"mode":"dry","paths":["x","y"]}}`, true}, // a scalar compared beside lists
		} {
			ran = nil
			res := reg.Execute(ctx, tc.tool, json.RawMessage(tc.args))
			if tc.runs {
				if res.IsError || len(ran) != 1 {
					t.Errorf("cache %d: %s %s: %s %s, want it run", cache, tc.tool, tc.args, res.Kind, res.Error)
				}
				continue
			}
			if res.Kind != tool.KindDenied || len(ran) != 0 || !strings.Contains(res.Error, "without its order or repeats") {
				t.Errorf("cache %d: %s %s: %s %q (ran %v), want denied naming the list's order", cache, tc.tool, tc.args, res.Kind, res.Error, ran)
			}
		}
	}
}
