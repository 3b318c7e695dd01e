package anthropictool

import (
	"github.com/miniopenclaw/tool"
)

// Types of the Messages API's server-side tool search tools, for
// [ServerSearchTool]: the API searches the deferred tools' names,
// descriptions and parameters itself, with a regular expression the model
// writes or with BM25 over the model's words.
const (
	ToolSearchRegex = "tool_search_tool_regex_20251119"
	ToolSearchBM25  = "tool_search_tool_bm25_20251119"
)

// A ServerTool is the definition of a tool the API runs itself, in a
// request's "tools" array next to [ToolParam] values.
type ServerTool struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// ServerSearchTool returns the definition of the server-side tool search of
// type typ, [ToolSearchRegex] or [ToolSearchBM25]; the API names them
// tool_search_tool_regex and tool_search_tool_bm25.
func ServerSearchTool(typ string) ServerTool {
	name := "tool_search_tool_regex"
	if typ == ToolSearchBM25 {
		name = "tool_search_tool_bm25"
	}
	return ServerTool{Type: typ, Name: name}
}

// DeferredToolParams is [ToolParams] with DeferLoading set on the tools for
// which deferred reports true. Deferred tools stay out of the model's
// context until a tool search finds them: a [ServerSearchTool] sent in the
// same "tools" array, or a search tool of the program's own whose results
// are [ToolReferences]. At least one tool must not be deferred.
func DeferredToolParams(tools []tool.Tool, deferred func(name string) bool) ([]ToolParam, error) {
	params, err := ToolParams(tools)
	if err != nil {
		return nil, err
	}
	for i := range params {
		params[i].DeferLoading = deferred(params[i].Name)
	}
	return params, nil
}

// ToolReferences returns the tool_result block that answers the program's
// own tool search call toolUseID with the names of the deferred tools it
// found, as tool_reference blocks; the API then loads those tools'
// definitions, sent with DeferLoading, into the model's context. With no
// names it is a text result saying nothing matched.
func ToolReferences(toolUseID string, names []string) ContentBlock {
	b := ContentBlock{Type: "tool_result", ToolUseID: toolUseID}
	if len(names) == 0 {
		b.Content = "Nothing fits: no available tool does this. Do not call a tool for it; say that it cannot be done with the tools at hand, or search once more with other words if the request was described poorly."
		return b
	}
	for _, n := range names {
		b.Blocks = append(b.Blocks, ContentBlock{Type: "tool_reference", ToolName: n})
	}
	return b
}
