package mcptool

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/miniopenclaw/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wrapKey is the property that holds a tool's structured result when its
// output schema is not an object schema. The 2025-11-25 revision (and
// clients built on it, such as the TypeScript SDK 1.x, which reject the
// whole tools/list otherwise) require outputSchema to have "type":"object"
// at the root, so such a schema is served as
// {"type":"object","properties":{"result":SCHEMA},"required":["result"]}
// and the value as {"result":VALUE}, in both protocol eras.
const wrapKey = "result"

// sdkTool returns the MCP description of t: name, title, description,
// inputSchema, outputSchema and annotations.
func sdkTool(t tool.Tool) (*mcp.Tool, error) {
	opts := tool.OptionsOf(t)
	in := json.RawMessage(bytes.Clone(t.Parameters()))
	if !json.Valid(in) {
		return nil, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name())
	}
	st := &mcp.Tool{
		Name:        t.Name(),
		Title:       opts.Annotations.Title,
		Description: t.Description(),
		InputSchema: in,
		Annotations: sdkAnnotations(opts.Annotations),
	}
	if out := opts.OutputSchema; len(bytes.TrimSpace(out)) > 0 {
		if !json.Valid(out) {
			return nil, fmt.Errorf("tool %q: output schema is not valid JSON", t.Name())
		}
		if outputWrapped(out) {
			var b bytes.Buffer
			b.WriteString(`{"type":"object","properties":{"` + wrapKey + `":`)
			b.Write(out)
			b.WriteString(`},"required":["` + wrapKey + `"],"additionalProperties":false}`)
			st.OutputSchema = json.RawMessage(b.Bytes())
		} else {
			st.OutputSchema = json.RawMessage(bytes.Clone(out))
		}
	}
	return st, nil
}

// outputWrapped reports whether an output schema is served wrapped in an
// object (see wrapKey): true when it is set and its root is not
// {"type":"object",...}.
func outputWrapped(schema json.RawMessage) bool {
	if len(bytes.TrimSpace(schema)) == 0 {
		return false
	}
	var root struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(schema, &root) != nil {
		return false
	}
	return root.Type != "object"
}

// sdkAnnotations maps our annotations to MCP's. Our zero value claims
// nothing, so it maps to no annotations at all, which MCP clients read
// as the cautious defaults (destructive and open-world). Otherwise every
// hint is stated explicitly, including those that differ from MCP's
// defaults (destructiveHint and openWorldHint default to true).
func sdkAnnotations(a tool.Annotations) *mcp.ToolAnnotations {
	if a == (tool.Annotations{}) {
		return nil
	}
	destructive, openWorld := a.Destructive, a.OpenWorld
	return &mcp.ToolAnnotations{
		Title:           a.Title,
		ReadOnlyHint:    a.ReadOnly,
		DestructiveHint: &destructive,
		IdempotentHint:  a.Idempotent,
		OpenWorldHint:   &openWorld,
	}
}

// toolAnnotations maps MCP annotations to ours, applying MCP's defaults
// for hints the server left out. They come from the server and are only
// hints: nothing in this package trusts them.
func toolAnnotations(st *mcp.Tool) tool.Annotations {
	a := tool.Annotations{Title: st.Title, Destructive: true, OpenWorld: true}
	if ma := st.Annotations; ma != nil {
		if a.Title == "" {
			a.Title = ma.Title
		}
		a.ReadOnly = ma.ReadOnlyHint
		a.Idempotent = ma.IdempotentHint
		if ma.DestructiveHint != nil {
			a.Destructive = *ma.DestructiveHint
		}
		if ma.OpenWorldHint != nil {
			a.OpenWorld = *ma.OpenWorldHint
		}
	}
	if a.ReadOnly {
		a.Destructive = false
	}
	return a
}
