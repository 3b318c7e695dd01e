package openaitool

import (
	"encoding/json"
	"fmt"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsonobj"
	"github.com/miniopenclaw/tool/internal/providercall"
)

// ToolSearchTool is the Responses API's tool search tool in a request's
// "tools" array:
//
//	{"type":"tool_search","execution":"client","description":…,"parameters":{…}}
//
// With Execution "server" the API searches the deferred tools itself; with
// "client" the model's searches come back as tool_search_call items
// ([ToolSearchCalls]) that the program answers with [ToolSearchOutput].
type ToolSearchTool struct {
	Type        string          `json:"type"` // always "tool_search"
	Execution   string          `json:"execution,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ClientToolSearch returns the tool search tool run on the client whose
// description and parameters are those of search, the program's own
// search tool (such as toolsearch.NewTool).
func ClientToolSearch(search tool.Tool) ToolSearchTool {
	return ToolSearchTool{Type: "tool_search", Execution: "client", Description: search.Description(), Parameters: search.Parameters()}
}

// ResponsesDeferred returns the "tools" array for a Responses API request
// in which the tools for which deferred reports true carry
// "defer_loading":true, followed by search, the tool search tool that
// finds them.
func (ts *Tools) ResponsesDeferred(deferred func(name string) bool, search ToolSearchTool) json.RawMessage {
	out := make([]any, 0, len(ts.list)+1)
	for i := range ts.list {
		c := &ts.list[i]
		out = append(out, ResponsesTool{Type: "function", Name: c.name, Description: c.desc, Parameters: c.params, Strict: c.strict, DeferLoading: deferred(c.name)})
	}
	out = append(out, search)
	b, err := jsonobj.Marshal(out)
	if err != nil {
		panic(err) // converted tools and a search tool always marshal
	}
	return b
}

// ToolSearchCalls returns the tool_search_call items of a Responses API
// response body (its "output" array) or of an array of items that the
// client is to run (execution "client"), as [tool.Call] values named
// "tool_search" whose ID is the item's call_id and whose Args are its
// arguments. Other items are skipped; errors are as for [ResponsesCalls].
func ToolSearchCalls(data []byte) ([]tool.Call, error) {
	items, err := outputItems(data)
	if err != nil {
		return nil, err
	}
	var calls []tool.Call
	for _, it := range items {
		var c struct {
			Type      string          `json:"type"`
			ID        json.RawMessage `json:"id"`
			CallID    json.RawMessage `json:"call_id"`
			Execution string          `json:"execution"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(it, &c) != nil || c.Type != "tool_search_call" || c.Execution == "server" {
			continue
		}
		id := jsonobj.Unquote(c.CallID)
		if id == "" {
			id = jsonobj.Unquote(c.ID)
		}
		calls = append(calls, tool.Call{ID: id, Name: "tool_search", Args: argumentsOf(c.Arguments)})
	}
	return providercall.AssignIDs(calls, stableIDPrefix), nil
}

// A ToolSearchOutputItem answers a client-run tool_search_call with the
// definitions of the tools found, which the model may call from then on.
type ToolSearchOutputItem struct {
	Type      string          `json:"type"` // always "tool_search_output"
	CallID    string          `json:"call_id"`
	Execution string          `json:"execution"` // always "client"
	Status    string          `json:"status"`    // always "completed"
	Tools     []ResponsesTool `json:"tools"`
}

// ToolSearchOutput returns the tool_search_output item that answers the
// tool_search_call callID with the definitions of found, converted as
// [NewTools] converts them with opts. It fails as NewTools fails.
func ToolSearchOutput(callID string, found []tool.Tool, opts ...Option) (ToolSearchOutputItem, error) {
	ts, err := NewTools(found, opts...)
	if err != nil {
		return ToolSearchOutputItem{}, err
	}
	item := ToolSearchOutputItem{Type: "tool_search_output", CallID: callID, Execution: "client", Status: "completed", Tools: make([]ResponsesTool, 0, len(ts.list))}
	for i := range ts.list {
		c := &ts.list[i]
		item.Tools = append(item.Tools, ResponsesTool{Type: "function", Name: c.name, Description: c.desc, Parameters: c.params, Strict: c.strict})
	}
	return item, nil
}

// outputItems returns the items of a Responses API response body's
// "output" array, or of an array of items.
func outputItems(data []byte) ([]json.RawMessage, error) {
	var items []json.RawMessage
	switch jsonobj.Kind(data) {
	case "object":
		o, err := jsonobj.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		out, ok := o.Get("output")
		if !ok {
			if e, ok := o.Get("error"); ok && jsonobj.Kind(e) == "object" {
				return nil, fmt.Errorf("%w: the response is an error: %s", ErrMalformed, providercall.Shorten(jsonobj.Compact(e), 300))
			}
			return nil, fmt.Errorf("%w: no output in the response", ErrMalformed)
		}
		if items, err = providercall.Elements(out, providercall.MaxElements); err != nil {
			return nil, fmt.Errorf("%w: output: %v", ErrMalformed, err)
		}
	case "array":
		var err error
		if items, err = providercall.Elements(data, providercall.MaxElements); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	default:
		return nil, fmt.Errorf("%w: not a response", ErrMalformed)
	}
	return items, nil
}
