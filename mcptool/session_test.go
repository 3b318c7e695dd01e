package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionPost sends body to h in the 2025-11-25 session id as principal
// (none when ""), and returns the status, the Content-Type and the
// JSON-RPC message of the response, as post does.
func sessionPost(t *testing.T, h http.Handler, id, principal, body string) (int, string, any) {
	t.Helper()
	return post(t, func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Mcp-Method")
		r.Header.Del("Mcp-Name")
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if id != "" {
			r.Header.Set("Mcp-Session-Id", id)
		}
		if principal != "" {
			r = r.WithContext(policy.WithPrincipal(r.Context(), policy.Principal{ID: principal}))
		}
		h.ServeHTTP(w, r)
	}, "", body, nil)
}

// openSession25 initializes a 2025-11-25 session of h for principal, its
// client declaring caps, and returns its ID.
func openSession25(t *testing.T, h http.Handler, principal, caps string) string {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"t","version":"1"}}}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if principal != "" {
		r = r.WithContext(policy.WithPrincipal(r.Context(), policy.Principal{ID: principal}))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	id := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || id == "" {
		t.Fatalf("initialize: status %d, session %q: %s", w.Code, id, w.Body)
	}
	if status, _, _ := sessionPost(t, h, id, principal, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", status)
	}
	return id
}

// TestServerHTTPSessionDirect checks that ServeHTTP answers a tools/call
// of a 2025-11-25 session exactly as go-sdk's session handler does (the
// same message, in one application/json body where it answers itself),
// and leaves to go-sdk every call whose answer could carry more than the
// response (a progress token, a client that declared sampling or
// elicitation, one that set a log level), every request of another
// shape, and every request that names a session that is not its caller's.
func TestServerHTTPSessionDirect(t *testing.T) {
	call := func(id, name, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
	}
	tests := []struct {
		name      string
		caps      string // the client's capabilities
		setLevel  bool   // the client sent logging/setLevel first
		principal string // of the call; the session is alice's
		body      string
		direct    bool
	}{
		{"text result", `{}`, false, "alice", call("1", "echo", `{"text":"hi"}`), true},
		{"structured result", `{}`, false, "alice", call("2", "add", `{"a":1,"b":2}`), true},
		{"wrapped structured result", `{}`, false, "alice", call("3", "words", `{"text":"a b"}`), true},
		{"parts", `{}`, false, "alice", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"media"}}`, true},
		{"invalid arguments", `{}`, false, "alice", call("5", "add", `{"a":"x"}`), true},
		{"tool error", `{}`, false, "alice", call("6", "add", `{"a":-1,"b":-1}`), true},
		{"string id, spaces", `{"roots":{"listChanged":true}}`, false, "alice",
			` { "params" : { "arguments":{"text":"x"}, "name":"echo" }, "id" : "a\u0062" , "method":"tools/call","jsonrpc":"2.0"} `, true},
		{"missing capability", `{}`, false, "alice", call("7", "confirm", `{"what":"cache"}`), true},

		{"other caller", `{}`, false, "bob", call("8", "echo", `{"text":"hi"}`), false},
		{"anonymous caller", `{}`, false, "", call("9", "echo", `{"text":"hi"}`), false},
		{"progress token", `{}`, false, "alice", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":1}}}`, false},
		{"elicitation declared", `{"elicitation":{}}`, false, "alice", call("11", "echo", `{"text":"hi"}`), false},
		{"sampling declared", `{"sampling":{}}`, false, "alice", call("12", "echo", `{"text":"hi"}`), false},
		{"log level set", `{}`, true, "alice", call("13", "echo", `{"text":"hi"}`), false},
		{"unknown tool", `{}`, false, "alice", call("15", "nope", `{}`), false},
		{"repeated key", `{}`, false, "alice", `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"echo","name":"add","arguments":{"text":"hi"}}}`, false},
		{"arguments not an object", `{}`, false, "alice", call("17", "echo", `["hi"]`), false},
		{"fractional id", `{}`, false, "alice", call("1.5", "echo", `{"text":"hi"}`), false},
		{"tools/list", `{}`, false, "alice", `{"jsonrpc":"2.0","id":18,"method":"tools/list"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One server and session per case: after MCP, the same
			// session is served by go-sdk alone.
			srv := mcptool.NewServer(newRegistry(echo{}, add{}, words{}, media{}, confirm()))
			defer srv.Close()
			id := openSession25(t, srv, "alice", tt.caps)
			if tt.setLevel {
				if status, _, msg := sessionPost(t, srv, id, "alice", `{"jsonrpc":"2.0","id":99,"method":"logging/setLevel","params":{"level":"debug"}}`); status != http.StatusOK {
					t.Fatalf("logging/setLevel: %d %v", status, msg)
				}
			}
			status, ct, got := sessionPost(t, srv, id, tt.principal, tt.body)
			srv.MCP() // from here on, go-sdk serves everything
			wantStatus, wantCT, want := sessionPost(t, srv, id, tt.principal, tt.body)
			if status != wantStatus {
				t.Errorf("status %d, go-sdk's %d", status, wantStatus)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("response differs from go-sdk's (-sdk +direct):\n%s", diff)
			}
			if tt.direct {
				wantCT = "application/json" // go-sdk's: an event stream
			}
			if ct != wantCT {
				t.Errorf("Content-Type %q, want %q", ct, wantCT)
			}
		})
	}
}

// rootsTool asks for the client's roots with RequestInput and reports
// how many there are.
func rootsTool() tool.Tool {
	return tool.Must(tool.New("roots", "Counts the client's roots.", func(ctx context.Context, _ struct{}) (string, error) {
		answers := mcptool.InputResponses(ctx)
		if answers == nil {
			return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"r": &mcp.ListRootsParams{}}, "s")
		}
		roots, ok := answers["r"].(*mcp.ListRootsResult)
		if !ok {
			return "", fmt.Errorf("no roots: %v", answers)
		}
		return fmt.Sprintf("%d roots (%s)", len(roots.Roots), mcptool.RequestState(ctx)), nil
	}))
}

// TestServerHTTPSessionDirectRoots checks a call the direct session path
// takes whose tool asks for the client's roots (the one request a client
// without sampling and elicitation can answer): the request reaches the
// client on the session's stream, and the tool runs again with the answer,
// as go-sdk does for a 2025-11-25 client.
func TestServerHTTPSessionDirectRoots(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(rootsTool()))
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	rec := &contentTypes{}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	c.AddRoots(&mcp.Root{URI: "file:///a"}, &mcp.Root{URI: "file:///b"})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: rec}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "roots", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("CallTool = %+v, %v", res, err)
	}
	data, _ := json.Marshal(res.Content)
	if !strings.Contains(string(data), "2 roots (s)") {
		t.Errorf("result %s, want 2 roots (s)", data)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.types) != 1 || rec.types[0] != "application/json" {
		t.Errorf("tools/call answered as %q, want [application/json] (the direct session path)", rec.types)
	}
}

// TestServerHTTPSessionDirectCancel checks that notifications/cancelled
// cancels a call the direct session path runs, as go-sdk cancels the
// calls it runs, and that one naming another request does not.
func TestServerHTTPSessionDirectCancel(t *testing.T) {
	sl := newSlow()
	srv := mcptool.NewServer(newRegistry(sl))
	defer srv.Close()
	id := openSession25(t, srv, "alice", `{}`)
	type answer struct {
		status int
		ct     string
	}
	answers := make(chan answer, 1)
	go func() {
		status, ct, _ := sessionPost(t, srv, id, "alice", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
		answers <- answer{status, ct}
	}()
	select {
	case <-sl.started:
	case <-time.After(wait):
		t.Fatal("the call did not start")
	}
	// Another request's cancellation: the call goes on.
	if status, _, _ := sessionPost(t, srv, id, "alice", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"7"}}`); status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: status %d", status)
	}
	select {
	case err := <-sl.stopped:
		t.Fatalf("a cancellation of request \"7\" stopped call 7: %v", err)
	case <-answers:
		t.Fatal("a cancellation of request \"7\" answered call 7")
	default:
	}
	if status, _, _ := sessionPost(t, srv, id, "alice", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"changed my mind"}}`); status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: status %d", status)
	}
	select {
	case err := <-sl.stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the tool stopped with %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		t.Fatal("notifications/cancelled did not cancel the call")
	}
	select {
	case a := <-answers:
		if a.ct == "text/event-stream" {
			t.Errorf("the call was served by go-sdk (%d %s), not by the direct session path", a.status, a.ct)
		}
	case <-time.After(wait):
		t.Fatal("the canceled call did not return")
	}
}
