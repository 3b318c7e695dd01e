package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two protocol eras every server test runs in.
var eras = []string{"2026-07-28", "2025-11-25"}

// wait bounds every wait for something asynchronous; hitting it is a
// failure, not a timing assertion.
const wait = 10 * time.Second

// connectRaw connects a go-sdk client to srv over in-memory transports,
// asking for protocol version.
func connectRaw(t *testing.T, srv *mcptool.Server, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatalf("server Connect: %v", err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, opts)
	cs, err := c.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("client Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestServerListsTools(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			srv := mcptool.NewServer(newRegistry(echo{}, add{}, words{}))
			defer srv.Close()
			cs := connectRaw(t, srv, era, nil)
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(res.Tools)
			var gotAny, wantAny any
			json.Unmarshal(got, &gotAny)
			json.Unmarshal([]byte(`[
			 {"name":"add","title":"Add","description":"Adds two integers.",
			  "inputSchema":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false},
			  "outputSchema":{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]},
			  "annotations":{"title":"Add","readOnlyHint":true,"idempotentHint":true}},
			 {"name":"echo","description":"Echoes the text back.",
			  "inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}},"required":["text"],"additionalProperties":false}},
			 {"name":"words","description":"Splits text into words.",
			  "inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}},"required":["text"],"additionalProperties":false},
			  "outputSchema":{"type":"object","properties":{"result":{"type":"array","items":{"type":"string"}}},"required":["result"],"additionalProperties":false}}
			]`), &wantAny)
			if diff := cmp.Diff(wantAny, gotAny); diff != "" {
				t.Errorf("tools/list (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServerPaginates(t *testing.T) {
	r := tool.NewRegistry()
	var want []string
	for _, n := range []string{"t1", "t2", "t3", "t4", "t5"} {
		r.Register(named(n))
		want = append(want, n)
	}
	srv := mcptool.NewServer(r, mcptool.WithPageSize(2))
	defer srv.Close()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			cs := connectRaw(t, srv, era, nil)
			var got []string
			pages := 0
			cursor := ""
			for {
				res, err := cs.ListTools(t.Context(), &mcp.ListToolsParams{Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, tl := range res.Tools {
					got = append(got, tl.Name)
				}
				if res.NextCursor == "" {
					break
				}
				cursor = res.NextCursor
			}
			if diff := cmp.Diff(want, got); diff != "" || pages != 3 {
				t.Errorf("pages = %d, want 3; names (-want +got):\n%s", pages, diff)
			}
			if _, err := cs.ListTools(t.Context(), &mcp.ListToolsParams{Cursor: "bogus"}); err == nil {
				t.Error("ListTools with a bogus cursor: no error")
			}
		})
	}
}

func TestServerCalls(t *testing.T) {
	tests := []struct {
		name       string
		tool       string
		args       string
		isError    bool
		text       string // substring of the first text block
		structured string // JSON, "" for none
	}{
		{"text", "echo", `{"text":"hi"}`, false, "hi", ""},
		{"structured", "add", `{"a":2,"b":40}`, false, `{"sum":42}`, `{"sum":42}`},
		{"wrapped array", "words", `{"text":"a b"}`, false, `["a","b"]`, `{"result":["a","b"]}`},
		{"wrong type", "add", `{"a":"x","b":1}`, true, "/a", ""},
		{"missing property", "add", `{"a":1}`, true, "invalid arguments", ""},
		{"unknown property", "echo", `{"text":"x","loud":true}`, true, "loud", ""},
		{"tool error", "add", `{"a":-1,"b":-1}`, true, "both addends are negative", ""},
	}
	srv := mcptool.NewServer(newRegistry(echo{}, add{}, words{}))
	defer srv.Close()
	for _, era := range eras {
		cs := connectRaw(t, srv, era, nil)
		for _, tt := range tests {
			t.Run(era+"/"+tt.name, func(t *testing.T) {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.tool, Arguments: json.RawMessage(tt.args)})
				if err != nil {
					t.Fatalf("CallTool: %v (want a result)", err)
				}
				if res.IsError != tt.isError {
					t.Errorf("IsError = %v, want %v", res.IsError, tt.isError)
				}
				if len(res.Content) == 0 {
					t.Fatal("no content")
				}
				text := res.Content[0].(*mcp.TextContent).Text
				if !strings.Contains(text, tt.text) {
					t.Errorf("text = %q, want it to contain %q", text, tt.text)
				}
				var got []byte
				if res.StructuredContent != nil {
					got, _ = json.Marshal(res.StructuredContent)
				}
				if string(got) != tt.structured {
					t.Errorf("structuredContent = %s, want %s", got, tt.structured)
				}
			})
		}
	}
}

// TestServerParts checks that a result's parts reach the client as MCP
// content blocks of the matching types, after the text, bytes intact.
func TestServerParts(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(media{}))
	defer srv.Close()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			cs := connectRaw(t, srv, era, nil)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "media", Arguments: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			want := []mcp.Content{
				&mcp.TextContent{Text: "here:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: mediaParts[0].Data},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: mediaParts[1].Data},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://notes.txt", MIMEType: "text/plain", Text: "line 1\nline 2"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://data.bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 255}}},
				&mcp.ResourceLink{URI: "test://report.pdf", Name: "report.pdf", MIMEType: "application/pdf", Description: "The report."},
			}
			if res.IsError {
				t.Fatalf("IsError: %+v", res.Content)
			}
			if diff := cmp.Diff(want, res.Content); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServerUnknownTool(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(echo{}))
	defer srv.Close()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			cs := connectRaw(t, srv, era, nil)
			_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope"})
			var jerr *jsonrpc.Error
			if !errors.As(err, &jerr) || jerr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("CallTool(nope) error = %v, want a JSON-RPC error %d", err, jsonrpc.CodeInvalidParams)
			}
		})
	}
}

// TestServerFollowsRegistry checks that registering, replacing and
// removing tools reaches connected clients as list_changed notifications.
func TestServerFollowsRegistry(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := newRegistry(echo{})
			srv := mcptool.NewServer(r)
			defer srv.Close()
			changed := make(chan struct{}, 10)
			cs := connectRaw(t, srv, era, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			names := func() []string {
				var n []string
				for tl, err := range cs.Tools(t.Context(), nil) {
					if err != nil {
						t.Fatal(err)
					}
					n = append(n, tl.Name)
				}
				return n
			}
			// A 2026-07-28 client hears notifications on the
			// subscriptions/listen stream it opens after Connect: a change
			// made before that stream is open reaches nobody. Replace echo
			// with itself until one notification arrives (the stream is
			// then open), and let the ones still in flight drain.
			settle := time.After(wait)
		listening:
			for {
				r.Register(tool.With(echo{}, tool.WithTimeout(time.Hour)))
				select {
				case <-changed:
					break listening
				case <-time.After(50 * time.Millisecond):
				case <-settle:
					t.Fatal("no notifications/tools/list_changed for any change")
				}
			}
			for quiet := false; !quiet; {
				select {
				case <-changed:
				case <-time.After(200 * time.Millisecond):
					quiet = true
				}
			}
			step := func(what string, change func(), want ...string) {
				t.Helper()
				change()
				select {
				case <-changed:
				case <-time.After(wait):
					t.Fatalf("%s: no notifications/tools/list_changed", what)
				}
				if diff := cmp.Diff(want, names()); diff != "" {
					t.Errorf("%s: tools (-want +got):\n%s", what, diff)
				}
			}
			step("register", func() { r.Register(add{}) }, "add", "echo")
			step("remove", func() { r.Remove("echo") }, "add")
			step("replace", func() { r.Register(tool.With(add{}, tool.WithTimeout(time.Minute))) }, "add")
		})
	}
}

func TestServerCancellation(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			s := newSlow()
			srv := mcptool.NewServer(newRegistry(s))
			defer srv.Close()
			cs := connectRaw(t, srv, era, nil)
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
				errc <- err
			}()
			<-s.started
			cancel()
			select {
			case err := <-s.stopped:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("tool's context ended with %v, want context.Canceled", err)
				}
			case <-time.After(wait):
				t.Fatal("the tool's context was not canceled")
			}
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("CallTool error = %v, want context.Canceled", err)
			}
		})
	}
}

func TestServerProgress(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			s := newSlow()
			close(s.release)
			srv := mcptool.NewServer(newRegistry(s))
			defer srv.Close()
			notes := make(chan string, 10)
			cs := connectRaw(t, srv, era, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					notes <- req.Params.ProgressToken.(string) + " " + req.Params.Message
				},
			})
			params := &mcp.CallToolParams{Name: "slow"}
			params.SetProgressToken("tok")
			if _, err := cs.CallTool(t.Context(), params); err != nil {
				t.Fatal(err)
			}
			// Notifications may trail the response; wait for them.
			var got []string
			for len(got) < 3 {
				select {
				case n := <-notes:
					got = append(got, n)
				case <-time.After(wait):
					t.Fatalf("got %d progress notifications, want 3", len(got))
				}
			}
			if diff := cmp.Diff([]string{"tok step 1", "tok step 2", "tok step 3"}, got); diff != "" {
				t.Errorf("progress notifications (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServerHTTP serves over Streamable HTTP on loopback and connects in
// both eras: 2026-07-28 stateless and 2025-11-25 sessions.
func TestServerHTTP(t *testing.T) {
	r := newRegistry(echo{}, add{})
	srv := mcptool.NewServer(r)
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			changed := make(chan struct{}, 10)
			c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != era {
				t.Errorf("negotiated %q, want %q", got, era)
			}
			stateless := cs.ID() == ""
			if stateless != (era == "2026-07-28") {
				t.Errorf("session id %q in era %s", cs.ID(), era)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
			if err != nil || res.IsError {
				t.Fatalf("CallTool = %+v, %v", res, err)
			}
			res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": "x"}})
			if err != nil || !res.IsError {
				t.Errorf("CallTool with bad arguments = %+v, %v; want an isError result", res, err)
			}
			name := "late_" + strings.ReplaceAll(era, "-", "")
			r.Register(named(name))
			defer r.Remove(name)
			select {
			case <-changed:
			case <-time.After(wait):
				t.Fatal("no notifications/tools/list_changed")
			}
		})
	}
}

// TestServerTypedTool serves a tool built with tool.New: its inferred
// schemas are listed, its result is structured, and its arguments are
// checked by the code compiled from its Go type.
func TestServerTypedTool(t *testing.T) {
	type in struct {
		City  string `json:"city" description:"the city"`
		Units string `json:"units,omitempty" enum:"c,f" default:"c"`
	}
	type out struct {
		City string  `json:"city"`
		Temp float64 `json:"temp"`
	}
	weather, err := tool.New("weather", "Reports the weather.", func(_ context.Context, in in) (out, error) {
		temp := 21.5
		if in.Units == "f" {
			temp = 70.7
		}
		return out{in.City, temp}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcptool.NewServer(newRegistry(weather))
	defer srv.Close()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			cs := connectRaw(t, srv, era, nil)
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil || len(res.Tools) != 1 || res.Tools[0].OutputSchema == nil {
				t.Fatalf("ListTools = %+v, %v; want weather with an output schema", res, err)
			}
			call, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Oslo"}})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(call.StructuredContent)
			if call.IsError || string(got) != `{"city":"Oslo","temp":21.5}` {
				t.Errorf("weather(Oslo) = %s, isError %v", got, call.IsError)
			}
			call, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Oslo", "units": "k"}})
			if err != nil || !call.IsError || !strings.Contains(call.Content[0].(*mcp.TextContent).Text, "/units") {
				t.Errorf("weather(units k) = %+v, %v; want an isError result about /units", call, err)
			}
		})
	}
}

// TestServerHTTPRefusesCrossOrigin checks the Origin and Host checks the
// specification asks of HTTP servers.
func TestServerHTTPRefusesCrossOrigin(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(echo{}))
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`
	port := hs.URL[strings.LastIndex(hs.URL, ":")+1:]
	tests := []struct {
		name   string
		header map[string]string
		host   string
		want   int
	}{
		{"same origin", map[string]string{}, "", 200},
		{"cross-origin browser", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, "", 403},
		{"DNS rebinding", map[string]string{}, "evil.example", 403},
		{"DNS rebinding, trailing dot", map[string]string{}, "evil.example.", 403},
		{"DNS rebinding, localhost subdomain", map[string]string{}, "localhost.evil.example", 403},
		// Host names are case-insensitive and may end in a dot.
		{"LOCALHOST", map[string]string{}, "LOCALHOST:" + port, 200},
		{"localhost.", map[string]string{}, "localhost.:" + port, 200},
		{"LocalHost. without a port", map[string]string{}, "LocalHost.", 200},
		{"127.0.0.1.", map[string]string{}, "127.0.0.1.:" + port, 200},
		{"same origin, upper case", map[string]string{"Origin": "http://localhost:" + port}, "LOCALHOST:" + port, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequestWithContext(t.Context(), "POST", hs.URL, strings.NewReader(body))
			req.RequestURI = ""
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

// asker logs to its client, asks it for a completion (sampling) and for
// input (elicitation), through the context of its call.
type asker struct{}

func (asker) Name() string                { return "asker" }
func (asker) Description() string         { return "Asks the client." }
func (asker) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (asker) Execute(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	log := tool.ClientLogger(ctx)
	log.Info("asking", "step", 1)
	log.Debug("details nobody asked for")
	ss := mcptool.Session(ctx)
	if ss == nil {
		return tool.Result{}, errors.New("no MCP session in the call's context")
	}
	msg, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}}})
	if err != nil {
		return tool.Result{}, fmt.Errorf("sampling: %w", err)
	}
	el, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "name?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
	if err != nil {
		return tool.Result{}, fmt.Errorf("elicitation: %w", err)
	}
	return tool.Result{Output: fmt.Sprintf("model said %q; user %s %v", msg.Content.(*mcp.TextContent).Text, el.Action, el.Content)}, nil
}

// TestServerTalksToClient checks what a tool can do with its caller in a
// 2025-11-25 session: log at the level the client set (and nothing before
// it set one), and send sampling and elicitation requests through
// Session.
func TestServerTalksToClient(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(asker{}))
	defer srv.Close()
	logs := make(chan *mcp.LoggingMessageParams, 10)
	cs := connectRaw(t, srv, "2025-11-25", &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- req.Params },
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "hi"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	if caps := cs.InitializeResult().Capabilities; caps.Logging == nil {
		t.Errorf("capabilities %+v do not declare logging", caps)
	}
	call := func() string {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "asker", Arguments: json.RawMessage(`{}`)})
		if err != nil || res.IsError {
			t.Fatalf("CallTool = %+v, %v", res, err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if got, want := call(), `model said "hi"; user accept map[name:Ada]`; got != want {
		t.Errorf("result = %q, want %q", got, want)
	}
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	call()
	// Only one message was at or above info; messages from the first
	// call, before any level was set, must not have been sent.
	p := onlyOne(t, logs, "log message after the client set a level")
	data, _ := json.Marshal(p.Data)
	if p.Logger != "asker" || p.Level != "info" || !strings.Contains(string(data), `"msg":"asking","step":1`) {
		t.Errorf("log message = logger %q level %q data %s", p.Logger, p.Level, data)
	}
}

// onlyOne returns the first value on ch, failing the test when none comes
// within the wait bound, and reports any other that follows it within
// 50 ms.
func onlyOne[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	var first T
	select {
	case first = <-ch:
	case <-time.After(wait):
		t.Fatalf("no %s", what)
	}
	select {
	case v := <-ch:
		t.Errorf("unexpected second %s: %+v", what, v)
	case <-time.After(50 * time.Millisecond):
	}
	return first
}

// TestServerLogsPerRequest checks logging in the 2026-07-28 protocol,
// where each request carries the level it wants: messages at or above it
// reach the client, and a request without one gets none.
func TestServerLogsPerRequest(t *testing.T) {
	r := newRegistry(tool.Must(tool.New("logs", "Logs twice.", func(ctx context.Context, _ struct{}) (string, error) {
		tool.ClientLogger(ctx).Warn("careful")
		tool.ClientLogger(ctx).Info("fyi")
		return "ok", nil
	})))
	srv := mcptool.NewServer(r)
	defer srv.Close()
	logs := make(chan string, 10)
	cs := connectRaw(t, srv, "2026-07-28", &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- string(req.Params.Level) },
	})
	for _, level := range []string{"", "warning"} {
		params := &mcp.CallToolParams{Name: "logs", Arguments: json.RawMessage(`{}`)}
		if level != "" {
			params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: level}
		}
		if res, err := cs.CallTool(t.Context(), params); err != nil || res.IsError {
			t.Fatalf("CallTool = %+v, %v", res, err)
		}
	}
	if got := onlyOne(t, logs, "log message for the request that set a level"); got != "warning" {
		t.Errorf("log level = %q, want warning", got)
	}
}

// confirm asks the client's user to confirm, with a multi round-trip
// request, then reports the answer and the state it carried.
func confirm() tool.Tool {
	return tool.Must(tool.New("confirm", "Asks the user to confirm.", func(ctx context.Context, in struct {
		What string `json:"what"`
	}) (string, error) {
		answers := mcptool.InputResponses(ctx)
		if answers == nil {
			return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{
				"ok": &mcp.ElicitParams{Message: "Delete " + in.What + "?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"sure":{"type":"boolean"}}}`)},
			}, "asked about "+in.What)
		}
		el, ok := answers["ok"].(*mcp.ElicitResult)
		if !ok {
			return "", fmt.Errorf("no answer to the confirmation: %v", answers)
		}
		return fmt.Sprintf("%s (%s): %v", el.Action, mcptool.RequestState(ctx), el.Content["sure"]), nil
	}))
}

// TestServerRequestsInput checks multi round-trip requests in both eras:
// a 2026-07-28 client (go-sdk's, which fulfills them and calls again) and
// a 2025-11-25 client (go-sdk's server sends them on the session and
// calls the tool again), with the tool written once; and a client that
// did not declare the capability gets MissingRequiredClientCapability.
func TestServerRequestsInput(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(confirm()))
	defer srv.Close()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			var asked atomic.Int32
			cs := connectRaw(t, srv, era, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					if req.Params.Message != "Delete cache?" {
						return nil, fmt.Errorf("unexpected message %q", req.Params.Message)
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"sure": true}}, nil
				},
			})
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{"what": "cache"}})
			if err != nil || res.IsError {
				t.Fatalf("CallTool = %+v, %v", res, err)
			}
			if got, want := res.Content[0].(*mcp.TextContent).Text, "accept (asked about cache): true"; got != want {
				t.Errorf("result = %q, want %q", got, want)
			}
			if n := asked.Load(); n != 1 {
				t.Errorf("the client was asked %d times, want once", n)
			}

			bare := connectRaw(t, srv, era, nil) // declares no elicitation
			_, err = bare.CallTool(t.Context(), &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{"what": "cache"}})
			var rpc *jsonrpc.Error
			if !errors.As(err, &rpc) || rpc.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(rpc.Data), `"requiredCapabilities":{"elicitation":{}}`) {
				t.Errorf("CallTool without the capability: %v (data %s), want -32021 naming elicitation", err, dataOf(rpc))
			}
		})
	}
}

func dataOf(e *jsonrpc.Error) []byte {
	if e == nil {
		return nil
	}
	return e.Data
}

// TestRequestInputOutsideMCP checks that a tool asking for input when no
// MCP client called it gets a plain error, and the MCP helpers report
// nothing.
func TestRequestInputOutsideMCP(t *testing.T) {
	ctx := context.Background()
	if err := mcptool.RequestInput(ctx, mcp.InputRequestMap{"x": &mcp.ElicitParams{Message: "?"}}, ""); err == nil || errors.Is(err, mcptool.ErrInputRequired) {
		t.Errorf("RequestInput outside MCP = %v, want a plain error", err)
	}
	if mcptool.InputResponses(ctx) != nil || mcptool.RequestState(ctx) != "" || mcptool.Session(ctx) != nil {
		t.Error("the MCP helpers report something outside a call")
	}
	res := newRegistry(confirm()).Execute(ctx, "confirm", json.RawMessage(`{"what":"x"}`))
	if !res.IsError || !strings.Contains(res.Error, "outside a tools/call") {
		t.Errorf("confirm called locally = %+v, want a tool error saying why", res)
	}
}

// TestServerHTTPHugeNumber sends a 2026-07-28 tools/call whose arguments
// hold a number beyond float64: the model gets an error result naming
// it, not a protocol error.
func TestServerHTTPHugeNumber(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(echo{}))
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tt := range []struct{ args, want string }{
		{`{"text":1e400}`, `/text: expected a string, got number 1e400`},
		{`{"text":"a","n":-1e999}`, `expected no property \"n\"`},
		{`{"text":"fine"}`, `"text":"fine"`},
	} {
		body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":` + tt.args + `,` + meta + `}}`
		req := httptest.NewRequestWithContext(t.Context(), "POST", hs.URL, strings.NewReader(body))
		req.RequestURI = ""
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(got), tt.want) {
			t.Errorf("arguments %s: %d %s\nwant 200 and %s", tt.args, resp.StatusCode, got, tt.want)
		}
	}
}

// TestToolsPending: while the registry is still being filled, tools/list
// waits for it (and ping does not), so a client that lists once sees
// every tool.
func TestToolsPending(t *testing.T) {
	r := tool.NewRegistry()
	pending := make(chan struct{})
	srv := mcptool.NewServer(r, mcptool.WithToolsPending(pending, time.Hour))
	defer srv.Close()
	// Middleware added later runs first: it sees the request arrive
	// before the wait.
	arrived := make(chan struct{}, 1)
	srv.MCP().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				arrived <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	c := connect(t, srv.MCP())
	if err := c.Session().Ping(t.Context(), nil); err != nil {
		t.Fatalf("ping while pending: %v", err)
	}
	listed := make(chan []string, 1)
	go func() {
		res, err := c.Session().ListTools(t.Context(), nil)
		var names []string
		if err == nil {
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
		}
		listed <- names
	}()
	<-arrived
	echo := tool.Must(tool.New("late", "Arrives late.", func(ctx context.Context, in struct{}) (string, error) { return "", nil }))
	if err := r.Register(echo); err != nil {
		t.Fatal(err)
	}
	close(pending)
	if names := <-listed; !slices.Contains(names, "late") {
		t.Fatalf("tools/list = %v, want it to wait for the tool registered before pending closed", names)
	}
}
