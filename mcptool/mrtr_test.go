package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// manualClient connects a 2026-07-28 go-sdk client that declares
// elicitation and does the multi round trips by hand.
func manualClient(t *testing.T, srv *mcptool.Server) *mcp.ClientSession {
	return connectRaw(t, srv, "2026-07-28", &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("this client answers by hand")
		},
	})
}

var approve = mcp.InputResponseMap{"clawtool_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}

// TestPlainCallRoundAttacks: a 2026-07-28 client answers the approval a
// policy ask puts to it in a plain call (no task). A client that forges
// the requestState, replays an answered retry, changes the state or the
// arguments, or answers another request, does not get the call run, and
// gets a -32602 error (or the question again) saying why. Each control
// row runs the same attack against the server as it was before (state =
// the call's digest, unsealed; the call not held) and shows it worked.
func TestPlainCallRoundAttacks(t *testing.T) {
	argsA := map[string]any{"path": "a"}
	for _, tc := range []struct {
		name    string
		control bool
		// attack runs the attack and returns its call's result or error.
		attack  func(t *testing.T, cs *mcp.ClientSession, digest string) (*mcp.CallToolResult, error)
		wantErr string // "" for a result
		wantRan int32
	}{
		{name: "forged state: the call's digest with an accepted answer, never asked", attack: forged,
			wantErr: "requestState refused: it is not one this server sent", wantRan: 0},
		{name: "control: forged state", control: true, attack: forged, wantRan: 1},
		{name: "replayed retry", attack: replay, wantErr: "no call waits for this answer", wantRan: 1},
		{name: "control: replayed retry", control: true, attack: replay, wantRan: 2},
		{name: "tampered state", attack: func(t *testing.T, cs *mcp.ClientSession, _ string) (*mcp.CallToolResult, error) {
			first := round1(t, cs, argsA)
			return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: argsA, InputResponses: approve, RequestState: first.RequestState + "x"})
		}, wantErr: "requestState refused: it is not one this server sent", wantRan: 0},
		{name: "state of a call with other arguments", attack: func(t *testing.T, cs *mcp.ClientSession, _ string) (*mcp.CallToolResult, error) {
			first := round1(t, cs, argsA)
			return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: map[string]any{"path": "b"}, InputResponses: approve, RequestState: first.RequestState})
		}, wantErr: "requestState refused: it is not one this server sent", wantRan: 0},
		{name: "answer to another request is asked again", attack: func(t *testing.T, cs *mcp.ClientSession, _ string) (*mcp.CallToolResult, error) {
			first := round1(t, cs, argsA)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: argsA, RequestState: first.RequestState,
				InputResponses: mcp.InputResponseMap{"other": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}})
			if err != nil || !res.NeedsInput() || res.InputRequests["clawtool_approval"] == nil || res.RequestState == first.RequestState {
				t.Errorf("a retry answering another request: %v %+v, want the question again under a new state", err, res)
			}
			return res, err
		}, wantRan: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, a, ran := approverServer(t, mcptool.ElicitApprover{})
			if tc.control {
				mcptool.WithoutRoundDefences(srv)
			}
			cs := manualClient(t, srv)
			digest := a.Decide(context.Background(), removeRequest(`{"path":"a"}`)).Digest
			res, err := tc.attack(t, cs, digest)
			var jerr *jsonrpc.Error
			switch {
			case tc.wantErr != "":
				if !errors.As(err, &jerr) || jerr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(jerr.Message, tc.wantErr) {
					t.Errorf("got %v %+v, want error -32602 %q", err, res, tc.wantErr)
				}
			case err != nil:
				t.Errorf("got error %v", err)
			}
			if ran.Load() != tc.wantRan {
				t.Errorf("the call ran %d times, want %d", ran.Load(), tc.wantRan)
			}
		})
	}
}

// round1 makes the first call of remove with args and returns its
// input_required result.
func round1(t *testing.T, cs *mcp.ClientSession, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: args})
	if err != nil || !res.NeedsInput() || res.InputRequests["clawtool_approval"] == nil || res.RequestState == "" {
		t.Fatalf("round 1: %v %+v, want the approval as an input request", err, res)
	}
	return res
}

func forged(t *testing.T, cs *mcp.ClientSession, digest string) (*mcp.CallToolResult, error) {
	return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remove", Arguments: map[string]any{"path": "a"}, InputResponses: approve, RequestState: digest})
}

func replay(t *testing.T, cs *mcp.ClientSession, _ string) (*mcp.CallToolResult, error) {
	args := map[string]any{"path": "a"}
	first := round1(t, cs, args)
	retry := &mcp.CallToolParams{Name: "remove", Arguments: args, InputResponses: approve, RequestState: first.RequestState}
	res, err := cs.CallTool(t.Context(), retry)
	if err != nil || res.IsError || res.NeedsInput() {
		t.Fatalf("the answered retry: %v %+v", err, res)
	}
	return cs.CallTool(t.Context(), retry)
}

// TestPlainCallRelay: a 2026-07-28 client calls, as a plain call (no
// task), a tool that an aggregating server imported from another server,
// and that server asks its user a question — in a task of its own, or
// with a multi round-trip request of its own. The question reaches the
// top client as an input request of its plain call, its answer goes back
// down, and the call completes. The controls: a top client without an
// elicitation handler gets an error result, and so does a middle server
// whose client has no WithElicitationRelay, for a multi round-trip
// request (go-sdk fulfills those with the client's elicitation handler
// only).
func TestPlainCallRelay(t *testing.T) {
	upReg := tool.NewRegistry()
	ask := func(ctx context.Context, _ struct{}) (string, error) {
		if res, ok := mcptool.InputResponses(ctx)["name"].(*mcp.ElicitResult); ok {
			return "hello " + fmt.Sprint(res.Content["name"]), nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}, "")
	}
	upReg.Register(tool.Must(tool.New("ask_task", "Asks the user for a name, in a task.", ask, tool.WithTask(tool.TaskRequired))))
	upReg.Register(tool.Must(tool.New("ask_mrtr", "Asks the user for a name, with a multi round-trip request.", ask)))
	lim := mcptool.WithTasks(mcptool.TaskLimits{PollInterval: time.Millisecond, PollsPerSecond: 1000, PollBurst: 1000})
	up := taskServer(t, upReg, lim)
	fast := mcptool.WithTaskPolling(time.Millisecond, 20*time.Millisecond)
	relayMid := taskServer(t, importTasks(t, up, fast, mcptool.WithElicitationRelay()), lim)
	relayMidLegacy := taskServer(t, importTasks(t, up, fast, mcptool.WithProtocolVersion("2025-11-25"), mcptool.WithElicitationRelay()), lim)
	plainMid := taskServer(t, importTasks(t, up, fast), lim)
	var asked atomic.Int32
	answer := mcptool.WithElicitationHandler(func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked.Add(1)
		if p.Message != "Your name?" {
			return nil, fmt.Errorf("unexpected question %q", p.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Cy"}}, nil
	})
	for _, tc := range []struct {
		name    string
		mid     string
		tool    string
		opts    []mcptool.ClientOption
		want    string
		isError bool
		asked   int32
	}{
		{"imported task, 2026-07-28 middle", relayMid, "ask_task", []mcptool.ClientOption{answer}, "hello Cy", false, 1},
		{"imported task, 2025-11-25 middle", relayMidLegacy, "ask_task", []mcptool.ClientOption{answer}, "hello Cy", false, 1},
		{"imported multi round trip", relayMid, "ask_mrtr", []mcptool.ClientOption{answer}, "hello Cy", false, 1},
		{"control: no handler on top", relayMid, "ask_mrtr", nil, "did not declare the elicitation capability", true, 0},
		{"control: no relay in the middle", plainMid, "ask_mrtr", []mcptool.ClientOption{answer}, "client does not support elicitation", true, 0},
		// A task's questions are relayed without the option, as before.
		{"imported task, middle without the relay option", plainMid, "ask_task", []mcptool.ClientOption{answer}, "hello Cy", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked.Store(0)
			top := importTasks(t, tc.mid, append([]mcptool.ClientOption{fast, mcptool.WithoutTasks()}, tc.opts...)...)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			res := top.Execute(ctx, tc.tool, []byte(`{}`))
			got := res.Output
			if res.IsError {
				got = res.Error
			}
			if res.IsError != tc.isError || !strings.Contains(got, tc.want) {
				t.Errorf("result %+v, want isError %v and %q", res, tc.isError, tc.want)
			}
			if asked.Load() != tc.asked {
				t.Errorf("the top client was asked %d times, want %d", asked.Load(), tc.asked)
			}
		})
	}
}

// TestInputFirstComposition: a tool that runs only as a task, wrapped by
// InputFirst, asks for a name with multi round trips of the plain call
// and becomes a task on the round that has it; this package's client
// answers the question, follows the task and gets the greeting. The
// control: a client that cannot answer gets no task, and an error result.
func TestInputFirstComposition(t *testing.T) {
	reg := tool.NewRegistry()
	name := func(ctx context.Context) (string, bool) {
		res, ok := mcptool.InputResponses(ctx)["user_name"].(*mcp.ElicitResult)
		if !ok || res.Action != "accept" {
			return "", false
		}
		return fmt.Sprint(res.Content["name"]), true
	}
	reg.Register(mcptool.InputFirst(tool.Must(tool.New("greet_later", "Asks for a name, then greets in a task.",
		func(ctx context.Context, _ struct{}) (string, error) {
			n, _ := name(ctx)
			return "Hello, " + n + "!", nil
		}, tool.WithTask(tool.TaskRequired))),
		func(ctx context.Context, _ json.RawMessage) error {
			if _, ok := name(ctx); ok {
				return nil
			}
			return mcptool.RequestInput(ctx, mcp.InputRequestMap{"user_name": &mcp.ElicitParams{Message: "Your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}, "")
		}))
	url := taskServer(t, reg, mcptool.WithTasks(mcptool.TaskLimits{PollInterval: time.Millisecond, PollsPerSecond: 1000, PollBurst: 1000}))
	fast := mcptool.WithTaskPolling(time.Millisecond, 20*time.Millisecond)
	answer := mcptool.WithElicitationHandler(func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Cy"}}, nil
	})
	for _, tc := range []struct {
		name     string
		opts     []mcptool.ClientOption
		want     string
		isError  bool
		statuses string
	}{
		{"answered", []mcptool.ClientOption{fast, answer}, "Hello, Cy!", false, "completed"},
		{"control: no answer", []mcptool.ClientOption{fast}, "elicitation", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := importTasks(t, url, tc.opts...)
			var log eventLog
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			res := top.Execute(mcptool.WithTaskEvents(ctx, log.add), "greet_later", []byte(`{}`))
			got := res.Output
			if res.IsError {
				got = res.Error
			}
			if res.IsError != tc.isError || !strings.Contains(got, tc.want) {
				t.Errorf("result %+v, want isError %v and %q", res, tc.isError, tc.want)
			}
			statuses := log.statuses()
			if tc.statuses == "" && len(statuses) > 0 || tc.statuses != "" && (len(statuses) == 0 || statuses[len(statuses)-1] != tc.statuses) {
				t.Errorf("task states %v, want them to end with %q", statuses, tc.statuses)
			}
		})
	}
}

// BenchmarkPlainCallHeld measures what holding costs a plain 2026-07-28
// call (the direct path) that asks nothing: the same tools/call from a
// client that declared elicitation (the call runs on a goroutine of its
// own, ready to be held) and from one that did not, interleaved in chunks,
// with the ratio (held/plain).
func BenchmarkPlainCallHeld(b *testing.B) {
	srv := mcptool.NewServer(newRegistry(echo{}))
	defer srv.Close()
	body := func(caps string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	}
	held, plain := body(`{"elicitation":{}}`), body(`{}`)
	serve := func(body string) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		r.Header.Set("Mcp-Method", "tools/call")
		r.Header.Set("Mcp-Name", "echo")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"hi"`) {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	const chunk = 64
	var h, p time.Duration
	b.ReportAllocs()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := time.Now()
		for range n {
			serve(held)
		}
		t1 := time.Now()
		for range n {
			serve(plain)
		}
		h += t1.Sub(t0)
		p += time.Since(t1)
	}
	b.ReportMetric(float64(h.Nanoseconds())/float64(b.N), "held-ns/call")
	b.ReportMetric(float64(p.Nanoseconds())/float64(b.N), "plain-ns/call")
	b.ReportMetric(float64(h)/float64(p), "held/plain")
}
