package policy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// TestPathArgumentLists: WithPathArguments names arguments that hold
// paths "at any depth", and a list of paths is such an argument too.
// Its members must reach the policies cleaned, and be refused when they
// cannot be read one way only, as a single path is: otherwise
// ["docs/../secrets/k"] passes a forbid on secrets/k, which the tool then
// opens. Control: the same path as a single argument is forbidden, and
// the clean list is forbidden too.
func TestPathArgumentLists(t *testing.T) {
	const src = `permit (principal, action, resource);
@id("no-secrets") forbid (principal, action, resource) when {
  (context.args has file && context.args.file like "secrets/*") ||
  (context.args has files && context.args.files.containsAny(["secrets/k", "../secrets/k"]))
};`
	for _, cache := range []int{0, 1000} {
		a, err := policy.New("p.cedar", []byte(src), policy.WithPathArguments("file", "files", "deep"), policy.WithCacheSize(cache))
		if err != nil {
			t.Fatal(err)
		}
		reg := tool.NewRegistry(tool.WithAuthorizer(a))
		var opened []string
		reg.Register(tool.Must(tool.New("read", "Reads files.", func(ctx context.Context, in struct {
			File  string     `json:"file,omitempty"`
			Files []string   `json:"files,omitempty"`
			Deep  [][]string `json:"deep,omitempty"`
		}) (string, error) {
			opened = append(opened, in.Files...)
			return "read", nil
		})))
		ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann"})
		for _, tc := range []struct{ args, want string }{
			{`{"file":"docs/../secrets/k"}`, ""}, // control: a single path
			{`{"files":["secrets/k"]}`, ""},      // control: a clean list
			{`{"files":["docs/a","docs/../secrets/k"]}`, ""},
			{`{"files":["./secrets//k"]}`, ""},
			{`{"deep":[["docs/a"],["docs/../secrets/k\\x"]]}`, "backslash"},
			{`{"files":["docs/a","secrets\\k"]}`, "backslash"},
			{`{"files":["secrets/k\u0000.txt"]}`, "NUL"},
		} {
			opened = nil
			res := reg.Execute(ctx, "read", json.RawMessage(tc.args))
			if res.Kind != tool.KindDenied || len(opened) != 0 || !strings.Contains(res.Error, tc.want) {
				t.Errorf("cache %d: %s: %s %q (opened %v), want denied (%s)", cache, tc.args, res.Kind, res.Error, opened, tc.want)
			}
		}
		if res := reg.Execute(ctx, "read", json.RawMessage(`{"files":["docs/a","docs/b/../c"]}`)); res.IsError {
			t.Errorf("cache %d: a list of harmless paths: %s", cache, res.Error)
		}
	}
}
