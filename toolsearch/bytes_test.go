package toolsearch

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/anthropictool"
	"github.com/miniopenclaw/tool/internal/jsonobj"
	"github.com/miniopenclaw/tool/openaitool"
)

// TestDefinitionBytes measures the tool definitions sent per turn for the
// first 300 tools of the evaluation set, all at once and with deferred
// loading (tool_search only, then tool_search and the five tools a
// search found), as a proxy for tokens. It checks that deferring sends
// less than a tenth of the bytes.
func TestDefinitionBytes(t *testing.T) {
	tools := evalTools(t)[:300]
	r := testRegistry(t, tools...)
	ix := New(r)
	defer ix.Close()
	meta := NewTool(ix, nil)
	if err := r.Register(meta); err != nil {
		t.Fatal(err)
	}
	res := r.Execute(context.Background(), ToolName, json.RawMessage(`{"query":"send a message to a slack channel"}`))
	found := Loaded(res)
	var foundTools []tool.Tool
	for _, name := range found {
		tl, _ := r.Get(name)
		foundTools = append(foundTools, tl)
	}
	chat := func(ts []tool.Tool) int {
		b, err := openaitool.ChatTools(ts)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	anthropic := func(ts []tool.Tool) int {
		b, err := anthropictool.Tools(ts)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	all := chat(tools)
	searchOnly := chat([]tool.Tool{meta})
	afterSearch := chat(append([]tool.Tool{meta}, foundTools...))
	t.Logf("Chat Completions, 300 tools:  all %d bytes; deferred: %d bytes (tool_search), %d bytes after one search loaded %d tools, whose result adds %d bytes once",
		all, searchOnly, afterSearch, len(foundTools), len(res.Output))

	// Messages API, native: every definition travels with defer_loading,
	// but only the loaded ones enter the model's context.
	params, err := anthropictool.DeferredToolParams(tools, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	wire := []any{}
	for _, p := range params {
		wire = append(wire, p)
	}
	metaParam, _ := anthropictool.ToolParams([]tool.Tool{meta})
	wire = append(wire, metaParam[0])
	wireBytes, _ := jsonobj.Marshal(wire)
	t.Logf("Messages API, 300 tools: all %d bytes; deferred (native): %d bytes on the wire, %d bytes in context (tool_search), %d after one search",
		anthropic(tools), len(wireBytes), anthropic([]tool.Tool{meta}), anthropic(append([]tool.Tool{meta}, foundTools...)))
	if len(found) != 5 {
		t.Errorf("the search found %q, want 5 tools", found)
	}
	if afterSearch*10 > all {
		t.Errorf("deferred loading sends %d bytes after a search, all tools %d: want less than a tenth", afterSearch, all)
	}
}
