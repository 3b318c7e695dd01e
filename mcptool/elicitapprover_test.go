package mcptool_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/policy"
)

// askingTool runs only as a task and asks its client with a form of
// schema, then answers with the action and the content it got.
func askingTool(name string, schema map[string]any) tool.Tool {
	return tool.Must(tool.New(name, "Asks first.", func(ctx context.Context, _ struct{}) (string, error) {
		if res, ok := mcptool.InputResponses(ctx)["q"].(*mcp.ElicitResult); ok {
			return fmt.Sprint(res.Action, " ", res.Content), nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Delete it?", RequestedSchema: schema}}, "")
	}, tool.WithTask(tool.TaskRequired)))
}

// TestElicitationApprover: an importing client without an elicitation
// handler answers an imported task's yes-or-no question with its
// approver (WithElicitationApprover): approved, the question is accepted
// with the boolean true (or no content for an empty form); refused, it
// is declined; an approver that cannot ask, and a question that is not
// yes-or-no, leave the call failing with the reason. The approver gets
// the call's principal, the imported tool's name and the question. The
// control: without an approver the client declares no elicitation, and
// the task fails for want of it.
func TestElicitationApprover(t *testing.T) {
	r := tool.NewRegistry()
	r.Register(askingTool("sure", map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}))
	r.Register(askingTool("empty", map[string]any{"type": "object", "properties": map[string]any{}}))
	r.Register(askingTool("name", map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}))
	url := taskServer(t, r)
	var mu sync.Mutex
	var seen []policy.ApprovalRequest
	approver := func(yes bool, err error) mcptool.ClientOption {
		return mcptool.WithElicitationApprover(policy.ApproverFunc(func(_ context.Context, req policy.ApprovalRequest) (bool, error) {
			mu.Lock()
			seen = append(seen, req)
			mu.Unlock()
			return yes, err
		}))
	}
	for _, tc := range []struct {
		name, tool string
		opt        mcptool.ClientOption // nil: no approver
		want       string
		isError    bool
		asked      bool // the approver was asked
	}{
		{"approved", "sure", approver(true, nil), "accept map[ok:true]", false, true},
		{"approved, an empty form", "empty", approver(true, nil), "accept map[]", false, true},
		{"refused", "sure", approver(false, nil), "decline map[]", false, true},
		{"no one to ask", "sure", approver(false, fmt.Errorf("away: %w", policy.ErrApprovalUnavailable)), "could not ask anyone", true, true},
		{"not yes-or-no", "name", approver(true, nil), "not a yes-or-no one", true, false},
		{"control: no approver", "sure", nil, "did not declare the elicitation capability", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			var opts []mcptool.ClientOption
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			reg := importTasks(t, url, opts...)
			ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann"})
			res := reg.Execute(ctx, tc.tool, []byte(`{}`))
			got := res.Output
			if res.IsError {
				got = res.Error
			}
			if res.IsError != tc.isError || !strings.Contains(got, tc.want) {
				t.Fatalf("result %+v, want isError %v and %q", res, tc.isError, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if !tc.asked {
				if len(seen) != 0 {
					t.Errorf("the approver was asked: %+v", seen)
				}
				return
			}
			if len(seen) != 1 || seen[0].Principal != "ann" || seen[0].Tool != tc.tool || string(seen[0].Args) != `{"question":"Delete it?"}` || len(seen[0].Digest) != 64 || seen[0].ID == "" {
				t.Errorf("the approver saw %+v", seen)
			}
		})
	}
}
