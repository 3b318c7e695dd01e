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
	if r.Len() != 5 {
		t.Fatalf("imported %d tools, want 5", r.Len())
	}
	for _, want := range []string{
		`output schema cannot be compiled; the tool's output is not checked" tool=bad_output`,
		`input schema: keyword ignored" tool=zod`, "lookaround",
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
		// A pattern with a lookahead is ignored (and logged).
		{"zod", `{"email":".a.b@other.com"}`, ""},
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
