package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/policy"
)

const askPolicy = `
@id("ask-remove")
@effect("ask")
permit (principal, action == Action::"call", resource == Tool::"remove");
`

// approverServer serves a tool "remove" that needs an approval, with an
// ElicitApprover, and counts the calls that ran.
func approverServer(t *testing.T, ap policy.Approver) (*mcptool.Server, *policy.Authorizer, *atomic.Int32) {
	t.Helper()
	a, err := policy.New("ask.cedar", []byte(askPolicy), policy.WithApprover(ap))
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	r := tool.NewRegistry(tool.WithAuthorizer(a))
	r.Register(removeTool(&ran))
	srv := mcptool.NewServer(r)
	t.Cleanup(func() { srv.Close() })
	return srv, a, &ran
}

// removeTool is the tool approverServer (and the task tests, with
// tool.WithTask) serve, counting its runs in ran.
func removeTool(ran *atomic.Int32, opts ...tool.Option) tool.Tool {
	return tool.Must(tool.New("remove", "Removes a file.", func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		ran.Add(1)
		return "removed " + in.Path, nil
	}, opts...))
}

// removeRequest is the access request of a call of approverServer's
// tool with args: the digest of its decision is the call's.
func removeRequest(args string) tool.AccessRequest {
	t := removeTool(new(atomic.Int32))
	return tool.AccessRequest{Tool: t, Name: "remove", Options: tool.OptionsOf(t), Args: json.RawMessage(args)}
}

func TestElicitApprover(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) { testElicitApprover(t, era) })
	}
}

// testElicitApprover: in a 2025-11-25 session the client is asked while
// the call waits; a 2026-07-28 client gets a multi round-trip request,
// answers it and calls again (go-sdk's client does it).
func testElicitApprover(t *testing.T, era string) {
	srv, _, ran := approverServer(t, mcptool.ElicitApprover{})
	var asked []string
	var answer atomic.Value
	cs := connectRaw(t, srv, era, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			raw, _ := json.Marshal(req.Params.RequestedSchema)
			var schema struct {
				Properties map[string]struct{ Type string }
				Required   []string
			}
			if json.Unmarshal(raw, &schema); schema.Properties["approve"].Type != "boolean" || len(schema.Required) != 1 {
				t.Errorf("requested schema %s has no required boolean approve", raw)
			}
			return answer.Load().(*mcp.ElicitResult), nil
		},
	})
	call := func(path string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: map[string]any{"path": path}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	text := func(res *mcp.CallToolResult) string { return res.Content[0].(*mcp.TextContent).Text }

	answer.Store(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}})
	if res := call("notes/a\x1b[2J.txt"); res.IsError || text(res) != "removed notes/a\x1b[2J.txt" || ran.Load() != 1 {
		t.Fatalf("approved call: %+v %q (ran %d, asked %q)", res, text(res), ran.Load(), asked)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], `"remove"`) || !strings.Contains(asked[0], `notes/a\\u001b[2J.txt`) {
		t.Errorf("question %q does not name the tool and the escaped arguments", asked)
	}
	// The approval was for that call, once: the same call asks again.
	answer.Store(&mcp.ElicitResult{Action: "decline"})
	if res := call("notes/a\x1b[2J.txt"); !res.IsError || !strings.Contains(text(res), "not approved") || ran.Load() != 1 {
		t.Errorf("declined call: %+v (ran %d)", res, ran.Load())
	}
	answer.Store(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}})
	if res := call("b"); !res.IsError || !strings.Contains(text(res), "not approved") || ran.Load() != 1 {
		t.Errorf("accepted with approve false: %+v (ran %d)", res, ran.Load())
	}
	// Cancel: nobody decided, so the call waits for a grant as without
	// an approver.
	answer.Store(&mcp.ElicitResult{Action: "cancel"})
	if res := call("c"); !res.IsError || !strings.Contains(text(res), "approval request") || ran.Load() != 1 {
		t.Errorf("canceled: %+v (ran %d)", res, ran.Load())
	}
	if len(asked) != 4 {
		t.Errorf("the client was asked %d times, want 4", len(asked))
	}
}

func TestElicitApproverWithoutCapability(t *testing.T) {
	var fellBack atomic.Int32
	for _, tc := range []struct {
		name     string
		fallback policy.Approver
		want     string
		ran      int32
	}{
		{"no fallback", nil, "approval request", 0},
		{"fallback approves", policy.ApproverFunc(func(context.Context, policy.ApprovalRequest) (bool, error) {
			fellBack.Add(1)
			return true, nil
		}), "removed", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _, ran := approverServer(t, mcptool.ElicitApprover{Fallback: tc.fallback})
			for _, era := range eras {
				cs := connectRaw(t, srv, era, nil) // no elicitation declared
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: map[string]any{"path": "x"}})
				if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, tc.want) {
					t.Errorf("%s: %v %+v, want %q", era, err, res, tc.want)
				}
			}
			if ran.Load() != 2*tc.ran {
				t.Errorf("ran %d times, want %d", ran.Load(), 2*tc.ran)
			}
		})
	}
	if fellBack.Load() != 2 {
		t.Errorf("fallback asked %d times, want 2", fellBack.Load())
	}
}

func TestElicitApproverTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv, a, ran := approverServer(t, mcptool.ElicitApprover{Timeout: 20 * time.Millisecond})
	cs := connectRaw(t, srv, "2025-11-25", &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select { // the user never answers
			case <-ctx.Done():
			case <-release:
			}
			return nil, errors.New("no answer")
		},
	})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: map[string]any{"path": "x"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "approval request") || ran.Load() != 0 {
		t.Fatalf("unanswered: %v %+v (ran %d)", err, res, ran.Load())
	}
	// The request is pending: the host grants it and the same call runs.
	text := res.Content[0].(*mcp.TextContent).Text
	id := strings.Fields(text[strings.Index(text, "approval request ")+len("approval request "):])[0]
	if err := a.Grant(id); err != nil {
		t.Fatalf("grant %q: %v", id, err)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: map[string]any{"path": "x"}})
	if err != nil || res.IsError || ran.Load() != 1 {
		t.Errorf("granted call: %v %+v (ran %d)", err, res, ran.Load())
	}
}

// TestElicitApproverRoundTripBound: in a 2026-07-28 call, an approval
// answer counts only with the state the server sent for the same call; an
// answer carried over to a call with other arguments, under another
// call's digest as its state, is refused before anything runs (see also
// TestPlainCallRoundAttacks).
func TestElicitApproverRoundTripBound(t *testing.T) {
	srv, a, ran := approverServer(t, mcptool.ElicitApprover{})
	var asked []string
	cs := connectRaw(t, srv, "2026-07-28", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	digestA := a.Decide(context.Background(), removeRequest(`{"path":"a"}`)).Digest
	if digestA == "" {
		t.Fatal("no digest for the asking call")
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{
		Name: "remove", Arguments: map[string]any{"path": "b"}, RequestState: digestA,
		InputResponses: mcp.InputResponseMap{"clawtool_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}},
	})
	var jerr *jsonrpc.Error
	if !errors.As(err, &jerr) || jerr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(jerr.Message, "requestState refused") || ran.Load() != 0 {
		t.Fatalf("call: %v %+v (ran %d), want -32602 requestState refused", err, res, ran.Load())
	}
	if len(asked) != 0 {
		t.Errorf("the client was asked %q", asked)
	}
	// The same call without the carried-over state asks and runs.
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: map[string]any{"path": "b"}})
	if err != nil || res.IsError || ran.Load() != 1 || len(asked) != 1 || !strings.Contains(asked[0], `{\"path\":\"b\"}`) {
		t.Errorf("call: %v %+v (ran %d, asked %q)", err, res, ran.Load(), asked)
	}
}

// TestApprovalQuestionShowsWholeArguments: the question an ElicitApprover
// put to the client's user showed the call's arguments cut to 500 bytes,
// so a model that padded an argument ("notes/a.txt", 600 spaces, then
// "/../../secrets") had the user approve the start of it while the call
// ran with the whole (canonical arguments sort their keys, so a padding
// field named "a…" does the same to every argument after it). The
// control is that cut: the end is out of sight. Now the question shows
// the arguments whole, up to MaxApprovalArgsShown, and longer ones are
// not put to the user at all: the call is refused with an approval
// request the host may grant where the arguments are shown, and nothing
// runs.
func TestApprovalQuestionShowsWholeArguments(t *testing.T) {
	const tail = "/../../secrets"
	padded := "notes/a.txt" + strings.Repeat(" ", 600) + tail
	args, _ := json.Marshal(map[string]string{"path": padded})
	if control := string(args[:500]); strings.Contains(control, tail) {
		t.Fatalf("control: the first 500 bytes of the arguments show their end: %q", control)
	}
	for _, era := range eras {
		srv, _, ran := approverServer(t, mcptool.ElicitApprover{})
		var asked []string
		cs := connectRaw(t, srv, era, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			},
		})
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: map[string]any{"path": padded}})
		if err != nil || res.IsError || ran.Load() != 1 {
			t.Fatalf("%s: approved call: %v %+v (ran %d)", era, err, res, ran.Load())
		}
		if len(asked) != 1 || !strings.Contains(asked[0], tail+`\"}`) {
			t.Errorf("%s: the question does not show the arguments to their end: %q", era, asked)
		}
		huge := "notes/a.txt" + strings.Repeat(" ", mcptool.MaxApprovalArgsShown) + tail
		res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: map[string]any{"path": huge}})
		if err != nil || !res.IsError || ran.Load() != 1 || len(asked) != 1 {
			t.Errorf("%s: a call whose arguments a question cannot show whole: %v %+v (ran %d, asked %d times)", era, err, res, ran.Load(), len(asked))
		} else if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "approval request") {
			t.Errorf("%s: refused without naming the approval request: %q", era, text)
		}
	}
}
