package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve a registry to an MCP client. Here the client is go-sdk's, over an
// in-memory pipe; a real program would call srv.ServeStdio(ctx) or mount
// srv on an HTTP mux at /mcp.
func ExampleNewServer() {
	ctx := context.Background()
	reg := tool.NewRegistry()
	if err := reg.Register(add{}); err != nil {
		log.Fatal(err)
	}
	srv := mcptool.NewServer(reg)
	defer srv.Close()

	clientT, serverT := mcp.NewInMemoryTransports()
	go srv.Run(ctx, serverT)

	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("tool:", t.Name, "-", t.Description)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 40}})
	if err != nil {
		log.Fatal(err)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	fmt.Println("result:", string(structured))
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("isError:", res.IsError)
	msg, _, _ := strings.Cut(res.Content[0].(*mcp.TextContent).Text, ":")
	fmt.Println(msg)
	// Output:
	// tool: add - Adds two integers.
	// result: {"sum":42}
	// isError: true
	// invalid arguments for tool "add"
}

// Import the tools of an MCP server into a registry. The server here is
// built with go-sdk and reached over an in-memory pipe; a real program
// would connect with mcptool.Command("npx", "some-mcp-server") or
// mcptool.URL("http://127.0.0.1:8080/mcp").
func ExampleConnect() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	type in struct {
		City string `json:"city" jsonschema:"the city"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "weather.today", Description: "Today's weather in a city."},
		func(_ context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Sunny in " + in.City}}}, nil, nil
		})
	clientT, serverT := mcp.NewInMemoryTransports()
	go server.Run(ctx, serverT)

	c, err := mcptool.Connect(ctx, clientT, mcptool.WithPrefix("wx_"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	reg := tool.NewRegistry()
	if err := c.Import(ctx, reg); err != nil {
		log.Fatal(err)
	}
	for _, t := range reg.List() {
		fmt.Println("tool:", t.Name())
	}
	res := reg.Execute(ctx, reg.List()[0].Name(), json.RawMessage(`{"city":"Lisbon"}`))
	fmt.Println(res.Output)
	// Output:
	// tool: wx_weather_today_d4f4f7a0
	// Sunny in Lisbon
}

// A tool served over MCP asks the client's model for a completion
// (sampling) through Session. The client here is go-sdk's and answers
// from a fixed string; Claude Desktop or an agent would ask its model.
func ExampleSession() {
	ctx := context.Background()
	summarize := tool.Must(tool.New("summarize", "Summarizes a text with the client's model.",
		func(ctx context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			ss := mcptool.Session(ctx)
			if ss == nil || ss.InitializeParams().Capabilities == nil || ss.InitializeParams().Capabilities.Sampling == nil {
				return "", fmt.Errorf("the client cannot sample")
			}
			res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 50,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarize: " + in.Text}}}})
			if err != nil {
				return "", err
			}
			return "summary: " + res.Content.(*mcp.TextContent).Text, nil
		}))
	cs, stop := serveInMemory(ctx, summarize, "2025-11-25", &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "fixed", Content: &mcp.TextContent{Text: "short."}}, nil
		},
	})
	defer stop()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "summarize", Arguments: map[string]any{"text": "a long story"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// summary: short.
}

// A tool asks the client's user to confirm before it acts, with a multi
// round-trip request: the first call returns the request, the client
// answers it and calls again, and the second call reads the answer. The
// client here is go-sdk's, which does the round trip by itself.
func ExampleRequestInput() {
	ctx := context.Background()
	deleteFile := tool.Must(tool.New("delete_file", "Deletes a file after the user confirms.",
		func(ctx context.Context, in struct {
			Path string `json:"path"`
		}) (string, error) {
			answers := mcptool.InputResponses(ctx)
			if answers == nil {
				return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{
					"confirm": &mcp.ElicitParams{Message: "Delete " + in.Path + "?",
						RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
				}, "")
			}
			if el, _ := answers["confirm"].(*mcp.ElicitResult); el == nil || el.Action != "accept" {
				return in.Path + " kept", nil
			}
			return in.Path + " deleted", nil
		}))
	cs, stop := serveInMemory(ctx, deleteFile, "", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Println("user asked:", req.Params.Message)
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	defer stop()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "/tmp/old.log"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// user asked: Delete /tmp/old.log?
	// /tmp/old.log deleted
}

// serveInMemory serves t with a Server over an in-memory pipe, as
// ExampleNewServer does step by step, and returns a go-sdk client session
// on it (protocol version "" means the newest) and a function that closes
// both.
func serveInMemory(ctx context.Context, t tool.Tool, version string, opts *mcp.ClientOptions) (*mcp.ClientSession, func()) {
	reg := tool.NewRegistry()
	if err := reg.Register(t); err != nil {
		log.Fatal(err)
	}
	srv := mcptool.NewServer(reg)
	clientT, serverT := mcp.NewInMemoryTransports()
	go srv.Run(ctx, serverT)
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, opts)
	cs, err := client.Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		log.Fatal(err)
	}
	return cs, func() { cs.Close(); srv.Close() }
}
