package mcptool

import (
	"bytes"
	"encoding/json"

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

// sdkTool returns the MCP description of t (see [DefinitionOf]) as a
// go-sdk tool.
func sdkTool(t tool.Tool) (*mcp.Tool, error) {
	d, err := DefinitionOf(t)
	if err != nil {
		return nil, err
	}
	st := &mcp.Tool{Name: d.Name, Title: d.Title, Description: d.Description, InputSchema: d.InputSchema}
	if d.OutputSchema != nil {
		st.OutputSchema = d.OutputSchema
	}
	if a := d.Annotations; a != nil {
		st.Annotations = &mcp.ToolAnnotations{
			Title:           a.Title,
			ReadOnlyHint:    a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint,
			OpenWorldHint:   a.OpenWorldHint,
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

// toolAnnotations maps MCP annotations to ours, applying MCP's defaults
// for hints the server left out. They come from the server and are only
// hints: nothing in this package trusts them.
func toolAnnotations(st *mcp.Tool) tool.Annotations {
	a := hintClaims(statedHints(st.Annotations))
	if st.Title != "" {
		a.Title = st.Title
	}
	return a
}

// hintClaims is what MCP annotations claim, as ours: MCP's defaults for
// the hints left out (destructive and open-world), and never destructive
// when read-only.
func hintClaims(ma *Annotations) tool.Annotations {
	a := tool.Annotations{Destructive: true, OpenWorld: true}
	if ma != nil {
		a.Title = ma.Title
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

// statedHints returns the hints a server sent, as sent; nil for none.
func statedHints(ma *mcp.ToolAnnotations) *Annotations {
	if ma == nil {
		return nil
	}
	return &Annotations{
		Title:           ma.Title,
		ReadOnlyHint:    ma.ReadOnlyHint,
		DestructiveHint: ma.DestructiveHint,
		IdempotentHint:  ma.IdempotentHint,
		OpenWorldHint:   ma.OpenWorldHint,
	}
}

// maxInFlight is the executor's per-tool limit for an imported tool: no
// limit of its own (a batch of remote calls runs in parallel) unless the
// server says the tool is destructive and not read-only, in which case
// the default (one call at a time) applies. The host's choice, n, when
// not zero, overrides both.
func maxInFlight(ma *mcp.ToolAnnotations, n int) int {
	switch {
	case n != 0:
		return n
	case ma != nil && ma.DestructiveHint != nil && *ma.DestructiveHint && !ma.ReadOnlyHint:
		return 0
	}
	return -1
}
