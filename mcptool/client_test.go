package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/tooltest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// remote builds a go-sdk server with the tools the client tests import.
func remote(t *testing.T) *mcp.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "0"}, &mcp.ServerOptions{PageSize: 2})
	type textIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "files.read/v2", Description: "A name outside our set."},
		func(_ context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "called as " + req.Params.Name}}}, nil, nil
		})
	type sumIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type sumOut struct {
		Sum int `json:"sum"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "sum", Description: "Adds.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in sumIn) (*mcp.CallToolResult, sumOut, error) {
			return nil, sumOut{in.A + in.B}, nil
		})
	object := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "lies", Description: "Breaks its output schema.", InputSchema: object,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{"sum": "many"}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fails", Description: "Always fails.", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk on fire"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "media", Description: "Returns content of every kind.", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a picture"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
				&mcp.TextContent{Text: "and a note"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://n", MIMEType: "text/plain", Text: "note"}},
				&mcp.ImageContent{Data: []byte{4}}, // no MIME type: described, not a Part
				&mcp.ResourceLink{URI: "test://r", Name: "r"},
			}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "media_fails", Description: "Fails with a screenshot.", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{
				&mcp.TextContent{Text: "page did not load"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2}},
			}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "progress", Description: "Reports progress.", InputSchema: object},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= 3 && tok != nil; i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprint("step ", i)})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "hang", Description: "Never answers.", InputSchema: object},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	return s
}

// hostile lists tools whose schemas must be refused, one reason each.
var hostile = map[string]string{
	"huge":     `{"type":"object","description":"` + strings.Repeat("x", 300<<10) + `"}`,
	"deep":     `{"type":"object","properties":{"a":` + strings.Repeat(`{"items":`, 100) + `{}` + strings.Repeat(`}`, 100) + `}}`,
	"string":   `{"type":"string"}`,
	"invalid":  `{"type":"object","properties":{"a":{"type":5}}}`,
	"dangling": `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`,
	"cycle":    `{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
}

// withHostileTools makes s list the hostile tools, plus one tool with a
// legitimately recursive schema and one with an output schema that does
// not compile, after its own.
func withHostileTools(s *mcp.Server) {
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil && lr.NextCursor == "" {
				for _, name := range slices.Sorted(func(yield func(string) bool) {
					for n := range hostile {
						if !yield(n) {
							return
						}
					}
				}) {
					lr.Tools = append(lr.Tools, &mcp.Tool{Name: name, InputSchema: json.RawMessage(hostile[name])})
				}
				// An output schema that is not a schema only turns output checking off.
				lr.Tools = append(lr.Tools, &mcp.Tool{Name: "bad_output", InputSchema: json.RawMessage(`{"type":"object"}`),
					OutputSchema: json.RawMessage(`{"type":"object","minProperties":"two"}`)})
				lr.Tools = append(lr.Tools, &mcp.Tool{Name: "tree", Description: "Recursive.",
					InputSchema: json.RawMessage(`{"type":"object","$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"properties":{"root":{"$ref":"#/$defs/node"}}}`)})
			}
			return res, err
		}
	})
}

// connect connects a Client to s over in-memory transports.
func connect(t *testing.T, s *mcp.Server, opts ...mcptool.ClientOption) *mcptool.Client {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c, err := mcptool.Connect(t.Context(), ct, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestImport(t *testing.T) {
	s := remote(t)
	withHostileTools(s)
	c := connect(t, s, mcptool.WithPrefix("r_"), mcptool.WithFilter(func(name string) bool { return name != "hang" }))
	r := tool.NewRegistry()
	err := c.Import(t.Context(), r)

	var got []string
	for _, tl := range r.List() {
		got = append(got, tl.Name())
	}
	want := []string{"r_bad_output", "r_echo", "r_fails", "r_files_read_v2_afe91f73", "r_lies", "r_media", "r_media_fails", "r_progress", "r_sum", "r_tree"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("imported tools (-want +got):\n%s", diff)
	}
	if err == nil {
		t.Fatal("Import: no error for the hostile tools")
	}
	if !errors.Is(err, tool.ErrInvalidSchema) {
		t.Errorf("Import error %v does not wrap tool.ErrInvalidSchema", err)
	}
	for name := range hostile {
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
			t.Errorf("Import error does not name tool %q:\n%v", name, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != len(hostile) {
		t.Errorf("Import error has %d lines, want one per hostile tool (%d):\n%v", n, len(hostile), err)
	}

	sum, _ := r.Get("r_sum")
	a := tool.OptionsOf(sum).Annotations
	if !a.ReadOnly || a.Destructive || !a.OpenWorld {
		t.Errorf("r_sum annotations = %+v, want read-only, open-world (MCP's default)", a)
	}
}

func TestLocalNames(t *testing.T) {
	// The mapping must be stable across connections and keep distinct
	// names distinct; the call must go out under the server's own name.
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "0"}, nil)
	for _, name := range []string{"a.b", "a_b", "a/b", strings.Repeat("x", 70), strings.Repeat("x", 71)} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Params.Name}}}, nil
			})
	}
	c := connect(t, s)
	r := tool.NewRegistry()
	if err := c.Import(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if r.Len() != 5 {
		t.Fatalf("imported %d tools, want 5", r.Len())
	}
	for _, tl := range r.List() {
		res := r.Execute(t.Context(), tl.Name(), nil)
		if res.IsError || len(tl.Name()) > 64 {
			t.Errorf("%s: %+v", tl.Name(), res)
		}
		if res.Output != "a_b" && tl.Name() == "a_b" {
			t.Errorf("a_b called as %q", res.Output)
		}
	}
	if res := r.Execute(t.Context(), "a_b_108bf50c", nil); res.Output != "a.b" {
		t.Errorf("a.b maps to a_b_108bf50c, which called %q (%s)", res.Output, res.Error)
	}
}

func TestRemoteCalls(t *testing.T) {
	c := connect(t, remote(t))
	r := tool.NewRegistry()
	if err := c.Import(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool, args string
		want             tool.Result
	}{
		{"text", "echo", `{"text":"hi"}`, tool.Result{Output: "echo: hi"}},
		{"mapped name", "files_read_v2_afe91f73", `{"text":""}`, tool.Result{Output: "called as files.read/v2"}},
		{"structured", "sum", `{"a":2,"b":3}`, tool.Result{Output: `{"sum":5}`, Structured: json.RawMessage(`{"sum":5}`)}},
		{"isError", "fails", `{}`, tool.Result{IsError: true, Kind: tool.KindToolError, Error: "disk on fire"}},
		{"content parts", "media", `{}`, tool.Result{Output: "a picture\nand a note\n[image , 1 bytes]", Parts: []tool.Part{
			tool.Image("image/png", []byte{1, 2, 3}),
			tool.TextResource("test://n", "text/plain", "note"),
			tool.ResourceLink("test://r", "r"),
		}}},
		{"isError with an image", "media_fails", `{}`, tool.Result{IsError: true, Kind: tool.KindToolError,
			Error: "page did not load\n[image image/png, 2 bytes]"}},
		{"structured content breaks the schema", "lies", `{}`, tool.Result{IsError: true, Kind: tool.KindToolError,
			Error: "MCP server: tool \"lies\" returned structured content that does not match its output schema:\n- /sum: expected an integer, got string \"many\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Execute(t.Context(), tt.tool, json.RawMessage(tt.args))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Execute(%s, %s) (-want +got):\n%s", tt.tool, tt.args, diff)
			}
		})
	}
}

// TestRemoteInvalidArguments checks that bad arguments are refused on our
// side, before anything is sent, also when the tool is called directly.
func TestRemoteInvalidArguments(t *testing.T) {
	s := remote(t)
	sent := make(chan string, 10)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				sent <- method
			}
			return next(ctx, method, req)
		}
	})
	c := connect(t, s)
	tools, err := c.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var sum tool.Tool
	for _, tl := range tools {
		if tl.Name() == "sum" {
			sum = tl
		}
	}
	res, err := sum.Execute(t.Context(), json.RawMessage(`{"a":"x","b":1}`))
	if !res.IsError || res.Kind != tool.KindInvalidArguments || !errors.Is(err, tool.ErrInvalidArguments) {
		t.Errorf("Execute with bad arguments = %+v, %v; want an invalid_arguments result", res, err)
	}
	r := tool.NewRegistry()
	r.Register(sum)
	if res := r.Execute(t.Context(), "sum", json.RawMessage(`{"a":1}`)); res.Kind != tool.KindInvalidArguments {
		t.Errorf("Registry.Execute with a missing argument = %+v", res)
	}
	select {
	case m := <-sent:
		t.Errorf("a %s reached the server", m)
	default:
	}
}

func TestRemoteProgress(t *testing.T) {
	s := remote(t)
	// Progress notifications are handled concurrently with responses, so
	// one sent just before the response may be handled after the call
	// has returned, and is then dropped (progress is best effort). This
	// tool waits until the client has seen its reports before it answers.
	seen := make(chan struct{})
	s.AddTool(&mcp.Tool{Name: "progress", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= 3 && tok != nil; i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprint("step ", i)})
			}
			select {
			case <-seen:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	c := connect(t, s)
	r := tool.NewRegistry()
	if err := c.Import(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	var got []string
	ctx := tool.WithProgress(t.Context(), func(p, total float64, msg string) {
		got = append(got, fmt.Sprintf("%g/%g %s", p, total, msg)) // reports come one at a time
		if len(got) == 3 {
			close(seen)
		}
	})
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if res := r.Execute(ctx, "progress", nil); res.IsError {
		t.Fatal(res.Error)
	}
	if diff := cmp.Diff([]string{"1/3 step 1", "2/3 step 2", "3/3 step 3"}, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

func TestRemoteHungAndDead(t *testing.T) {
	s := remote(t)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcptool.Connect(t.Context(), ct, mcptool.WithCallTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := tool.NewRegistry()
	if err := c.Import(t.Context(), r); err != nil {
		t.Fatal(err)
	}

	if res := r.Execute(t.Context(), "hang", nil); res.Kind != tool.KindTimeout {
		t.Errorf("hung server: %+v, want a timeout result", res)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if res := r.Execute(ctx, "echo", json.RawMessage(`{"text":"x"}`)); res.Kind != tool.KindCanceled {
		t.Errorf("canceled call: %+v, want a canceled result", res)
	}

	ss.Close() // the server goes away
	select {
	case <-c.Done():
	case <-time.After(wait):
		t.Fatal("Done not closed after the server hung up")
	}
	res := r.Execute(t.Context(), "echo", json.RawMessage(`{"text":"x"}`))
	if !res.IsError || res.Kind != tool.KindToolError || !strings.Contains(res.Error, "echo") {
		t.Errorf("dead server: %+v, want a tool_error result naming the tool", res)
	}
}

// TestImportFollowsListChanged checks that the registry follows the
// server's tool set.
func TestImportFollowsListChanged(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "0"}, nil)
			handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
			}
			object := json.RawMessage(`{"type":"object"}`)
			s.AddTool(&mcp.Tool{Name: "one", InputSchema: object}, handler)
			c := connect(t, s, mcptool.WithProtocolVersion(era))
			r := tool.NewRegistry()
			r.Register(named("local"))
			changed := make(chan string, 10)
			r.OnChange(func(name string) { changed <- name })
			if err := c.Import(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			<-changed // one
			expect := func(what string, want ...string) {
				t.Helper()
				select {
				case <-changed:
				case <-time.After(wait):
					t.Fatalf("%s: registry did not change", what)
				}
				var got []string
				for _, tl := range r.List() {
					got = append(got, tl.Name())
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: tools (-want +got):\n%s", what, diff)
				}
			}
			s.AddTool(&mcp.Tool{Name: "two", InputSchema: object}, handler)
			expect("add", "local", "one", "two")
			s.RemoveTools("one")
			expect("remove", "local", "two")
		})
	}
}

func TestImportRefusesTakenNames(t *testing.T) {
	c := connect(t, remote(t))
	r := newRegistry(named("echo"))
	err := c.Import(t.Context(), r)
	if !errors.Is(err, tool.ErrDuplicate) {
		t.Errorf("Import over a local tool: %v, want an error wrapping tool.ErrDuplicate", err)
	}
	if res := r.Execute(t.Context(), "echo", nil); res.Output != "echo" {
		t.Errorf("the local echo was replaced: %+v", res)
	}
}

// TestRoundTrip imports the tools of our own server.
func TestRoundTrip(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(add{}, words{}, media{}))
	defer srv.Close()
	c := connect(t, srv.MCP())
	r := tool.NewRegistry()
	if err := c.Import(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	res := r.Execute(t.Context(), "add", json.RawMessage(`{"a":1,"b":2}`))
	if res.IsError || string(res.Structured) != `{"sum":3}` {
		t.Errorf("add: %+v", res)
	}
	res = r.Execute(t.Context(), "words", json.RawMessage(`{"text":"a b"}`))
	if res.IsError || string(res.Structured) != `{"result":["a","b"]}` || res.Output != `["a","b"]` {
		t.Errorf("words: %+v", res)
	}
	res = r.Execute(t.Context(), "add", json.RawMessage(`{"a":-1,"b":-1}`))
	if !res.IsError || res.Error != "both addends are negative" {
		t.Errorf("add failing: %+v", res)
	}
	res = r.Execute(t.Context(), "media", nil)
	if diff := cmp.Diff(tool.Result{Output: "here:", Parts: mediaParts}, res); diff != "" {
		t.Errorf("media (-want +got):\n%s", diff)
	}
}

// TestRemoteToolConformance runs the tooltest checks on an imported tool:
// the remote tool must keep the Tool contract like a local one.
func TestRemoteToolConformance(t *testing.T) {
	c := connect(t, remote(t))
	tools, err := c.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name() == "sum" {
			tooltest.Run(t, func(*testing.T) tool.Tool { return tl }, json.RawMessage(`{"a":1,"b":2}`))
		}
	}
}
