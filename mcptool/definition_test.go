package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
)

type defTool struct{ name, params string }

func (t defTool) Name() string                { return t.name }
func (t defTool) Description() string         { return "A test tool." }
func (t defTool) Parameters() json.RawMessage { return json.RawMessage(t.params) }
func (t defTool) Execute(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, nil
}

// forwarding wraps a tool as a plugins.Host does: it forwards
// Annotated, with Options of its own when opts is set.
type forwarding struct {
	tool.Tool
	opts *tool.Options
}

func (f forwarding) Options() tool.Options {
	if f.opts != nil {
		return *f.opts
	}
	return tool.OptionsOf(f.Tool)
}

func (f forwarding) MCPAnnotations() (*Annotations, bool) {
	if a, ok := f.Tool.(Annotated); ok {
		return a.MCPAnnotations()
	}
	return nil, false
}

func TestDefinitionOf(t *testing.T) {
	base := defTool{"notes", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`}
	imported := &remoteTool{name: "notes", description: "A test tool.", params: json.RawMessage(base.params),
		opts:  tool.Options{Annotations: tool.Annotations{Destructive: false, OpenWorld: true}},
		hints: &Annotations{DestructiveHint: new(false)}}
	for _, tt := range []struct {
		name string
		t    tool.Tool
		want string
	}{
		{"plain", base, `{"name":"notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`},
		{"annotated", tool.With(base, tool.WithAnnotations(tool.Annotations{Title: "Notes", ReadOnly: true, Idempotent: true})),
			`{"name":"notes","title":"Notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"title":"Notes","readOnlyHint":true,"idempotentHint":true}}`},
		{"title only", tool.With(base, tool.WithAnnotations(tool.Annotations{Title: "Notes"})),
			`{"name":"notes","title":"Notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"title":"Notes"}}`},
		{"read-only only", tool.With(base, tool.WithAnnotations(tool.Annotations{ReadOnly: true})),
			`{"name":"notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"readOnlyHint":true}}`},
		{"destructive and open-world", tool.With(base, tool.WithAnnotations(tool.Annotations{Destructive: true, OpenWorld: true})),
			`{"name":"notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"destructiveHint":true,"openWorldHint":true}}`},
		{"imported, as its server stated", &remoteTool{name: "notes", description: "A test tool.", params: json.RawMessage(base.params),
			opts:  tool.Options{Annotations: tool.Annotations{Destructive: false, OpenWorld: true}},
			hints: &Annotations{DestructiveHint: new(false)}},
			`{"name":"notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"destructiveHint":false}}`},
		// A wrapper that forwards them keeps them (plugins served them
		// without: a client took the tool for destructive).
		{"imported, wrapped, forwarded", forwarding{Tool: imported},
			`{"name":"notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"destructiveHint":false}}`},
		{"imported, wrapped, stated none", forwarding{Tool: &remoteTool{name: "notes", description: "A test tool.", params: json.RawMessage(base.params),
			opts: tool.Options{Annotations: tool.Annotations{Destructive: true, OpenWorld: true}}}},
			`{"name":"notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`},
		// One that changes what they claim is described by its own Options.
		{"imported, wrapped, claims changed", forwarding{Tool: imported, opts: &tool.Options{Annotations: tool.Annotations{ReadOnly: true}}},
			`{"name":"notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"readOnlyHint":true}}`},
		{"not imported, forwarding nothing", forwarding{Tool: base, opts: &tool.Options{Annotations: tool.Annotations{Idempotent: true}}},
			`{"name":"notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"idempotentHint":true}}`},
		{"object output", tool.With(base, tool.WithOutputSchema(json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}}}`))),
			`{"name":"notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"outputSchema":{"type":"object","properties":{"id":{"type":"integer"}}}}`},
		{"array output wrapped", tool.With(base, tool.WithOutputSchema(json.RawMessage(`{"type":"array","items":{"type":"string"}}`))),
			`{"name":"notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"outputSchema":{"type":"object","properties":{"result":{"type":"array","items":{"type":"string"}}},"required":["result"],"additionalProperties":false}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := DefinitionOf(tt.t)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(d)
			if string(got) != tt.want {
				t.Errorf("DefinitionOf =\n%s\nwant\n%s", got, tt.want)
			}
			// The plain shape and the SDK shape the Server serves agree.
			st, err := sdkTool(tt.t)
			if err != nil {
				t.Fatal(err)
			}
			sdk, _ := json.Marshal(st)
			var a, b any
			json.Unmarshal(got, &a)
			json.Unmarshal(sdk, &b)
			// go-sdk always writes readOnlyHint and idempotentHint; false
			// is MCP's default for both, so it claims nothing.
			if an, _ := b.(map[string]any)["annotations"].(map[string]any); an != nil {
				for _, k := range []string{"readOnlyHint", "idempotentHint"} {
					if an[k] == false {
						delete(an, k)
					}
				}
			}
			if diff := cmp.Diff(b, a); diff != "" {
				t.Errorf("Definition and the served mcp.Tool differ (-sdk +plain):\n%s", diff)
			}
		})
	}
}

func TestDefinitionsErrors(t *testing.T) {
	if _, err := Definitions([]tool.Tool{defTool{"bad", `{`}}); err == nil {
		t.Error("invalid parameters accepted")
	}
	if _, err := Definitions([]tool.Tool{nil}); err == nil {
		t.Error("nil tool accepted")
	}
	out, err := Definitions(nil)
	if err != nil || string(out) != "[]" {
		t.Errorf("Definitions(nil) = %s, %v", out, err)
	}
}

func ExampleDefinitions() {
	notes := tool.With(defTool{"notes", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`},
		tool.WithAnnotations(tool.Annotations{Title: "Notes", Idempotent: true}))
	out, err := Definitions([]tool.Tool{notes})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output:
	// [{"name":"notes","title":"Notes","description":"A test tool.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"title":"Notes","idempotentHint":true}}]
}
