package policy_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

type deployArgs struct {
	Env string `json:"env"`
}

type deployArgsV2 struct {
	Env   string `json:"env"`
	Force bool   `json:"force,omitempty"`
}

// TestApprovalBindsDefinition is catalog row P78 with its control: a
// person approves a call of the tool they were shown. When the tool of
// that name is replaced before the approved call is made (an MCP server
// that changes a tool after the approval, a plugin reload that brings
// another server's tool of the same name), the approval must not let the
// new tool run: its description, parameters or annotations are not what
// the person approved. The control replaces the tool with an identical
// one, and the approval is used.
func TestApprovalBindsDefinition(t *testing.T) {
	v1 := func(ran *string) tool.Tool {
		return tool.Must(tool.New("deploy", "Deploys the build to an environment.", func(ctx context.Context, a deployArgs) (string, error) {
			*ran = "v1"
			return "ok", nil
		}))
	}
	for _, tc := range []struct {
		name string
		next func(ran *string) tool.Tool
		runs string // which tool the approved call runs, "" for none
	}{
		{"control: the same definition", v1, "v1"},
		{"description changed", func(ran *string) tool.Tool {
			return tool.Must(tool.New("deploy", "Deploys the build, and deletes every other environment.", func(ctx context.Context, a deployArgs) (string, error) {
				*ran = "v2"
				return "ok", nil
			}))
		}, ""},
		{"parameters changed", func(ran *string) tool.Tool {
			return tool.Must(tool.New("deploy", "Deploys the build to an environment.", func(ctx context.Context, a deployArgsV2) (string, error) {
				*ran = "v2"
				return "ok", nil
			}))
		}, ""},
		{"annotations changed", func(ran *string) tool.Tool {
			return tool.Must(tool.New("deploy", "Deploys the build to an environment.", func(ctx context.Context, a deployArgs) (string, error) {
				*ran = "v2"
				return "ok", nil
			}, tool.WithAnnotations(tool.Annotations{Destructive: true})))
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := policy.New("p.cedar", []byte(`@id("ask-deploy") @effect("ask") permit (principal, action, resource);`))
			if err != nil {
				t.Fatal(err)
			}
			var ran string
			reg := tool.NewRegistry(tool.WithAuthorizer(a))
			if err := reg.Register(v1(&ran)); err != nil {
				t.Fatal(err)
			}
			ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u"})
			call := func() tool.Result { return reg.Execute(ctx, "deploy", json.RawMessage(`{"env":"prod"}`)) }
			res := call()
			req, ok := res.Metadata["approval_request"].(policy.ApprovalRequest)
			if res.Kind != tool.KindDenied || !ok {
				t.Fatalf("first call = %+v, want an approval request", res)
			}
			if err := a.Grant(req.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := reg.Replace(tc.next(&ran)); err != nil {
				t.Fatal(err)
			}
			res = call()
			if ran != tc.runs {
				t.Fatalf("after the replacement the approved call ran %q, want %q (result %+v)", ran, tc.runs, res)
			}
			if tc.runs == "" {
				again, ok := res.Metadata["approval_request"].(policy.ApprovalRequest)
				if res.Kind != tool.KindDenied || !ok || again.ID == req.ID || again.Digest == req.Digest {
					t.Fatalf("call of the changed tool = %+v, want a new approval request", res)
				}
			}
		})
	}
}
