package policy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

const docsOnly = `
permit (principal, action, resource) when { context.args.path like "docs/*" };
`

// TestPathArgumentsLexical checks what a policy sees of a path argument
// it cleans lexically, and that a path it cannot read one way only is
// refused rather than guessed, on Cedar's path and on the compiled one.
func TestPathArgumentsLexical(t *testing.T) {
	src := docsOnly + `forbid (principal, action, resource) when { context.args.path like "secrets/*" };`
	type args struct {
		Path string `json:"path"`
	}
	tests := []struct {
		path, want string // want: "" allowed, else a part of the refusal
	}{
		{"docs/a", ""},
		{"docs//a/./b", ""},
		{"docs/a/", ""},
		{"docs/../secrets/k", "no permission covers"},
		{"docs/../../docs/a", "no permission covers"}, // ../docs/a: out of the root
		{"secrets/k", "no permission covers"},
		// The form of issue 25: a name with a backslash is a separator to
		// one tool and a name byte to another; it is refused, not guessed.
		{`docs\x`, "contains a backslash"},
		{`docs\..\secrets\k`, "contains a backslash"},
		{"docs/a\x00.txt", "contains a NUL byte"},
		{"docs/\xff", "not valid UTF-8"},
	}
	for _, cedarOnly := range []bool{false, true} {
		opts := []policy.Option{policy.WithPathArguments("path")}
		if cedarOnly {
			opts = append(opts, policy.WithCacheSize(0))
		}
		a, err := policy.New("docs.cedar", []byte(src), opts...)
		if err != nil {
			t.Fatal(err)
		}
		reg := tool.NewRegistry(tool.WithAuthorizer(a))
		reg.Register(tool.Must(tool.New("read", "Reads.", func(ctx context.Context, in args) (string, error) { return "ran", nil })))
		hand := tool.NewRegistry(tool.WithAuthorizer(a))
		hand.Register(handTool{name: "read"})
		for _, tt := range tests {
			in, _ := json.Marshal(args{Path: tt.path})
			if !utf8.ValidString(tt.path) {
				in = []byte(`{"path":"` + tt.path + `"}`) // raw: Marshal would replace the bytes
			}
			for _, r := range []*tool.Registry{reg, hand} {
				res := r.Execute(context.Background(), "read", in)
				if tt.want == "" {
					if res.IsError || res.Output != "ran" {
						t.Errorf("cedarOnly=%v %q: %+v, want allowed", cedarOnly, tt.path, res)
					}
					continue
				}
				if !utf8.ValidString(tt.path) {
					// The registry refuses such JSON before any decision;
					// Decide, given the bytes directly, refuses them too.
					if !res.IsError || res.Output == "ran" {
						t.Errorf("cedarOnly=%v %q: %+v, want refused", cedarOnly, tt.path, res)
					}
					if d := a.Decide(context.Background(), tool.AccessRequest{Name: "read", Args: in}); d.Effect != policy.Deny || !strings.Contains(d.Reason, "UTF-8") {
						t.Errorf("cedarOnly=%v Decide(%q) = %+v", cedarOnly, tt.path, d)
					}
					continue
				}
				if res.Kind != tool.KindDenied || !strings.Contains(res.Error, tt.want) || res.Output == "ran" {
					t.Errorf("cedarOnly=%v %q: %q (%s), want denied with %q", cedarOnly, tt.path, res.Error, res.Kind, tt.want)
				}
			}
		}
	}
}

// handTool is a tool with a hand-written schema taking a path: the
// Authorizer reads the checked bytes, not a bound value.
type handTool struct{ name string }

func (h handTool) Name() string        { return h.name }
func (h handTool) Description() string { return "Reads." }
func (h handTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
}
func (h handTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return tool.Result{Output: "ran"}, nil
}

// TestPolicyArgsShowsCleanedPaths checks what explain prints as the
// arguments the policies saw.
func TestPolicyArgsShowsCleanedPaths(t *testing.T) {
	a, err := policy.New("docs.cedar", []byte(docsOnly), policy.WithPathArguments("path"))
	if err != nil {
		t.Fatal(err)
	}
	if seen, err := a.PolicyArgs("read", json.RawMessage(`{"path":"docs//x/../a","content":"x"}`)); err != nil || string(seen) != `{"content":"x","path":"docs/a"}` {
		t.Errorf("PolicyArgs = %s, %v", seen, err)
	}
	if _, err := a.PolicyArgs("read", json.RawMessage(`{"path":"docs\\x"}`)); err == nil || !strings.Contains(err.Error(), "backslash") {
		t.Errorf("PolicyArgs with a backslash: %v", err)
	}
}
