package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRoundStateOpen: a requestState opens only for the caller, tool and
// arguments it was sealed for, unchanged and before it expires.
func TestRoundStateOpen(t *testing.T) {
	r := newRounds(InputRoundLimits{StateTTL: time.Minute})
	now := time.Unix(1_800_000_000, 0)
	r.now = func() time.Time { return now }
	args := json.RawMessage(`{"path": "a"}`)
	good := r.seal("alice", "remove", args, roundState{Tool: "step2"})
	for _, tc := range []struct {
		name, caller, tool, args, state string
		later                           time.Duration
		want                            string // "" opens
	}{
		{name: "as sealed", caller: "alice", tool: "remove", args: `{"path": "a"}`, state: good},
		{name: "arguments re-encoded", caller: "alice", tool: "remove", args: "{\"path\":\n\"a\"}", state: good},
		{name: "another caller", caller: "bob", tool: "remove", args: `{"path": "a"}`, state: good, want: "not one this server sent"},
		{name: "another tool", caller: "alice", tool: "delete", args: `{"path": "a"}`, state: good, want: "not one this server sent"},
		{name: "other arguments", caller: "alice", tool: "remove", args: `{"path": "b"}`, state: good, want: "not one this server sent"},
		{name: "changed payload", caller: "alice", tool: "remove", args: `{"path": "a"}`, state: "e30" + good[3:], want: "not one this server sent"},
		{name: "no seal", caller: "alice", tool: "remove", args: `{"path": "a"}`, state: "step2", want: "not one this server sent"},
		{name: "expired", caller: "alice", tool: "remove", args: `{"path": "a"}`, state: good, later: time.Minute + time.Second, want: "expired"},
		{name: "oversized", caller: "alice", tool: "remove", args: `{"path": "a"}`, state: strings.Repeat("a", maxStateBytes+1), want: "more than this server ever sends"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now = time.Unix(1_800_000_000, 0).Add(tc.later)
			st, jerr := r.open(tc.caller, tc.tool, json.RawMessage(tc.args), tc.state)
			switch {
			case tc.want == "" && (jerr != nil || st.Tool != "step2"):
				t.Errorf("open: %+v %v, want the tool's state step2", st, jerr)
			case tc.want != "" && (jerr == nil || jerr.Code != -32602 || !strings.Contains(jerr.Message, tc.want)):
				t.Errorf("open: %+v %v, want -32602 %q", st, jerr, tc.want)
			}
		})
	}
}

// asker returns a call that asks n questions through its held call and
// then answers with the answers' actions, and a channel that gets the
// error of a question that failed.
func asker(n int, failed chan<- error) func(ctx context.Context) (*mcp.CallToolResult, error) {
	return func(ctx context.Context) (*mcp.CallToolResult, error) {
		var got []string
		for range n {
			res, err := heldFrom(ctx).elicit(ctx, &mcp.ElicitParams{Message: "?"})
			if err != nil {
				failed <- err
				return nil, err
			}
			got = append(got, res.Action)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(got, ",")}}}, nil
	}
}

var accept = &mcp.ElicitResult{Action: "accept"}

// roundOf returns the held round a requestState names.
func roundOf(t *testing.T, r *rounds, caller string, res *mcp.CallToolResult) string {
	t.Helper()
	st, jerr := r.open(caller, "t", nil, res.RequestState)
	if jerr != nil || st.Round == "" {
		t.Fatalf("state %q: %+v %v", res.RequestState, st, jerr)
	}
	return st.Round
}

// TestHeldRoundBounds: a held round that nobody answers within Keep ends
// its call, and its retry is refused; a caller with PerCaller rounds
// waiting, or a server with Total, cannot park another (the call that
// asks gets an error result and ends); a call may ask Rounds questions,
// no more.
func TestHeldRoundBounds(t *testing.T) {
	t.Run("keep", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRounds(InputRoundLimits{Keep: time.Minute})
			defer r.close()
			failed := make(chan error, 1)
			res, err := r.hold(t.Context(), "alice", "t", nil, asker(1, failed))
			if err != nil || res.InputRequests == nil {
				t.Fatalf("first round: %+v %v", res, err)
			}
			id := roundOf(t, r, "alice", res)
			time.Sleep(time.Minute + time.Second)
			synctest.Wait()
			if err := <-failed; !errors.Is(err, context.Canceled) {
				t.Errorf("the unanswered call ended with %v, want it cancelled", err)
			}
			if _, err := r.resume(t.Context(), "alice", "t", nil, id, mcp.InputResponseMap{"clawtool_input_1": accept}); err == nil || !strings.Contains(err.Error(), "no call waits") {
				t.Errorf("retry after Keep: %v", err)
			}
			if len(r.held) != 0 || len(r.per) != 0 {
				t.Errorf("left behind: %v %v", r.held, r.per)
			}
		})
	})
	t.Run("per caller and total", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRounds(InputRoundLimits{PerCaller: 1, Total: 2})
			defer r.close()
			failed := make(chan error, 4)
			park := func(caller string) *mcp.CallToolResult {
				res, err := r.hold(t.Context(), caller, "t", nil, asker(1, failed))
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			if res := park("alice"); res.InputRequests == nil {
				t.Fatalf("alice's first: %+v", res)
			}
			if res := park("alice"); !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "calls of this caller already wait") {
				t.Errorf("alice's second: %+v, want an error result", res)
			}
			if err := <-failed; !errors.Is(err, context.Canceled) {
				t.Errorf("the refused call ended with %v", err)
			}
			bob := park("bob")
			if bob.InputRequests == nil {
				t.Fatalf("bob's first: %+v", bob)
			}
			if res := park("carol"); !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "2 calls already wait") {
				t.Errorf("carol over the total: %+v", res)
			}
			// Bob answers; his call completes and frees its place.
			res, err := r.resume(t.Context(), "bob", "t", nil, roundOf(t, r, "bob", bob), mcp.InputResponseMap{"clawtool_input_1": accept})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "accept" {
				t.Errorf("bob's answer: %+v %v", res, err)
			}
			if r.per["bob"] != 0 || len(r.held) != 1 {
				t.Errorf("after bob: %v %v", r.per, r.held)
			}
		})
	})
	t.Run("rounds", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRounds(InputRoundLimits{Rounds: 2})
			defer r.close()
			failed := make(chan error, 1)
			res, err := r.hold(t.Context(), "alice", "t", nil, asker(3, failed))
			for i := 1; i <= 2; i++ {
				if err != nil || res.InputRequests == nil {
					t.Fatalf("round %d: %+v %v", i, res, err)
				}
				key := ""
				for k := range res.InputRequests {
					key = k
				}
				res, err = r.resume(t.Context(), "alice", "t", nil, roundOf(t, r, "alice", res), mcp.InputResponseMap{key: accept})
			}
			if err == nil || !strings.Contains((<-failed).Error(), "asked its client 2 questions") {
				t.Errorf("third question: %+v %v", res, err)
			}
		})
	})
}
