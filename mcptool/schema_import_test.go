package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// schemaServer serves tools whose schemas use what servers written
// elsewhere emit: formats meant as annotations, JavaScript patterns,
// unevaluatedProperties, and an output schema that does not compile.
func schemaServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "schemas", Version: "0"}, nil)
	echo := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}},
			StructuredContent: json.RawMessage(`{"anything":1}`)}, nil
	}
	for name, schema := range map[string]string{
		"when":   `{"type":"object","properties":{"at":{"type":"string","format":"date-time"}}}`,
		"zod":    `{"type":"object","properties":{"email":{"type":"string","pattern":"^(?!\\.)[a-z.]+@example\\.com$"}}}`,
		"code":   `{"type":"object","properties":{"code":{"type":"string","pattern":"^\\u0065\\d+$"}}}`,
		"tag":    `{"type":"object","properties":{"tag":{"type":"string","pattern":"v(?=\\d)"}}}`,
		"closed": `{"type":"object","properties":{"a":{"type":"integer"}},"allOf":[{"properties":{"b":{"type":"string"}}}],"unevaluatedProperties":false}`,
	} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(schema)}, echo)
	}
	s.AddTool(&mcp.Tool{Name: "bad_output", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"$ref":"https://example.com/elsewhere.json"}}}`)}, echo)
	return s
}

func TestImportedSchemas(t *testing.T) {
	var logs bytes.Buffer
	c := connect(t, schemaServer(), mcptool.WithClientLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	r := tool.NewRegistry()
	if err := c.Import(t.Context(), r); err != nil {
		t.Fatalf("Import: %v", err)
	}
	if r.Len() != 6 {
		t.Fatalf("imported %d tools, want 6", r.Len())
	}
	for _, want := range []string{
		`output schema cannot be compiled; the tool's output is not checked" tool=bad_output`,
		`input schema: keyword ignored" tool=tag`, "lookaround",
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	for _, tc := range []struct {
		tool, args string
		wantErr    string // "" for a call that reaches the server
	}{
		// format is an annotation by default: a date-time without a zone passes.
		{"when", `{"at":"2026-01-02T10:00:00"}`, ""},
		// zod's lookaheads after ^ are checked; other lookaround makes the
		// pattern ignored (and logged).
		{"zod", `{"email":"a.b@example.com"}`, ""},
		{"zod", `{"email":".a.b@example.com"}`, `/email: expected a string matching`},
		{"tag", `{"tag":"anything"}`, ""},
		// A \u escape is translated.
		{"code", `{"code":"e12"}`, ""},
		{"code", `{"code":"x12"}`, `/code: expected a string matching`},
		{"closed", `{"a":1,"b":"x"}`, ""},
		{"closed", `{"a":1,"c":true}`, `/c: expected no property "c"`},
		// The output is not checked: the structured content does not matter.
		{"bad_output", `{}`, ""},
	} {
		res := r.Execute(t.Context(), tc.tool, json.RawMessage(tc.args))
		if tc.wantErr == "" {
			if res.IsError || res.Output != "ok" {
				t.Errorf("%s %s: %+v, want ok", tc.tool, tc.args, res)
			}
			continue
		}
		if !res.IsError || !strings.Contains(res.Error, tc.wantErr) {
			t.Errorf("%s %s: error %q, want it to contain %q", tc.tool, tc.args, res.Error, tc.wantErr)
		}
	}
}

func TestImportFormatAssertion(t *testing.T) {
	c := connect(t, schemaServer(), mcptool.WithFormatAssertion())
	r := tool.NewRegistry()
	if err := c.Import(t.Context(), r); err != nil {
		t.Fatalf("Import: %v", err)
	}
	res := r.Execute(t.Context(), "when", json.RawMessage(`{"at":"2026-01-02T10:00:00"}`))
	if !res.IsError || !strings.Contains(res.Error, "/at: expected") {
		t.Errorf("a date-time without a zone: %+v, want refused with format asserted", res)
	}
	if res := r.Execute(t.Context(), "when", json.RawMessage(`{"at":"2026-01-02T10:00:00Z"}`)); res.IsError {
		t.Errorf("a valid date-time: %+v", res)
	}
}

// TestImportSchemaResources checks that a $ref to a schema the host
// registered in advance resolves, by embedding it, and that without it the
// tool is left out with a clear error rather than anything fetched.
func TestImportSchemaResources(t *testing.T) {
	server := func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "refs", Version: "0"}, nil)
		s.AddTool(&mcp.Tool{Name: "move", InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"$ref":"https://schemas.example/point.json"}},"required":["to"]}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
		return s
	}
	r := tool.NewRegistry()
	err := connect(t, server()).Import(t.Context(), r)
	if err == nil || !strings.Contains(err.Error(), `no schema is registered under "https://schemas.example/point.json"; schemas are never fetched`) || r.Len() != 0 {
		t.Fatalf("without the resource: Import error %v, %d tools; want the tool left out, saying why", err, r.Len())
	}

	point := json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}`)
	c := connect(t, server(), mcptool.WithSchemaResources(map[string]json.RawMessage{"https://schemas.example/point.json": point}))
	if err := c.Import(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	move, ok := r.Get("move")
	if !ok {
		t.Fatal("move not imported")
	}
	if !strings.Contains(string(move.Parameters()), `"$defs":{"https://schemas.example/point.json":{"$id":"https://schemas.example/point.json","type":"object"`) {
		t.Errorf("the registered schema is not embedded: %s", move.Parameters())
	}
	if res := r.Execute(t.Context(), "move", json.RawMessage(`{"to":{"x":1,"y":2}}`)); res.IsError {
		t.Errorf("valid call: %+v", res)
	}
	if res := r.Execute(t.Context(), "move", json.RawMessage(`{"to":{"x":1}}`)); !res.IsError || !strings.Contains(res.Error, `/to/y: expected required property "y"`) {
		t.Errorf("invalid call: %+v", res)
	}

	ct, _ := mcp.NewInMemoryTransports()
	if _, err := mcptool.Connect(t.Context(), ct, mcptool.WithSchemaResources(map[string]json.RawMessage{"point.json": point})); err == nil {
		t.Error("a relative resource URI: no error")
	}
}
