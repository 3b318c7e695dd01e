package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeApprovalMRTR: serve --http --approve-by-client puts the
// approval of a plain call (no task) to a 2026-07-28 client that declared
// elicitation as a multi round-trip input request; the client's retry with
// the accepted answer runs the call, and the same retry sent again (a
// replay) is refused with -32602 instead of running the call again.
func TestServeApprovalMRTR(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	pol := filepath.Join("testdata", "policy", "approvals.cedar")
	addr := startHTTP(t, "--policy", pol, "--as", "otto:operator", "--approve-by-client")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // the rounds by hand
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("answered by hand")
		},
	}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	args := map[string]any{"op": "delete", "key": "a"}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "kv", Arguments: args})
	q, _ := res.InputRequests["clawtool_approval"].(*mcp.ElicitParams)
	if err != nil || !res.NeedsInput() || q == nil || !strings.Contains(q.Message, `"kv"`) || res.RequestState == "" {
		t.Fatalf("round 1: %v %+v, want the approval question as an input request", err, res)
	}
	retry := &mcp.CallToolParams{Name: "kv", Arguments: args, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{"clawtool_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}}
	if res, err := cs.CallTool(t.Context(), retry); err != nil || res.IsError || res.NeedsInput() {
		t.Fatalf("the approved retry: %v %+v", err, res)
	}
	var jerr *jsonrpc.Error
	if res, err := cs.CallTool(t.Context(), retry); !errors.As(err, &jerr) || jerr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(jerr.Message, "no call waits") {
		t.Errorf("the replayed retry: %v %+v, want -32602", err, res)
	}
}
