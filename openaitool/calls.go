package openaitool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsonobj"
	"github.com/miniopenclaw/tool/internal/providercall"
)

// ErrMalformed is wrapped by the parsers when a response as a whole cannot
// be read (it is not JSON, or was cut off), so that there is no call to
// attach an error result to.
var ErrMalformed = errors.New("malformed response")

// ChatMessage is a Chat Completions message: a request's system, user,
// assistant or tool message, or the message of a response's choice.
type ChatMessage struct {
	Role string `json:"role"`
	// Content is the message text. An assistant message that only calls
	// tools has none; it is sent as "".
	Content string `json:"content"`
	// ToolCalls are the calls of an assistant message.
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a role:"tool" message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ChatToolCall is one element of an assistant message's "tool_calls".
type ChatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"` // always "function"
	Function ChatFunctionCall `json:"function"`
}

// ChatFunctionCall names the function and carries its arguments, which the
// API sends as a string holding JSON.
type ChatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatCalls returns the tool calls in a Chat Completions response body
// (those of its first choice's message) or in one assistant message, in
// the order the model gave them, as [tool.Call] values ready for an executor.
//
// Problems with one call never fail the others, and never panic: a call
// whose arguments are not a JSON object (malformed, cut off by a length
// limit, double-encoded as a JSON string) keeps those arguments, so that
// running it gives the model an invalid-arguments error result for that
// call; a call to an unknown tool likewise gets a not-found result. A call
// without an id gets a stable one derived from its position, name and
// arguments ("call_" and 16 hex digits); a repeated id gets a suffix so
// that the ids of one batch are unique. Missing arguments count as {}.
//
// ChatCalls returns an error wrapping [ErrMalformed] only when data as a
// whole is not a response or message (not JSON, cut off, no choices), or
// holds more than 8,192 tool calls or choices: it stops reading there.
func ChatCalls(data []byte) ([]tool.Call, error) {
	msg, err := chatMessage(data)
	if err != nil {
		return nil, err
	}
	var raw struct {
		ToolCalls json.RawMessage `json:"tool_calls"`
	}
	if err := json.Unmarshal(msg, &raw); err != nil {
		return nil, fmt.Errorf("%w: tool_calls: %v", ErrMalformed, err)
	}
	toolCalls, err := providercall.Elements(raw.ToolCalls, providercall.MaxElements)
	if err != nil {
		return nil, fmt.Errorf("%w: tool_calls: %v", ErrMalformed, err)
	}
	calls := make([]tool.Call, 0, len(toolCalls))
	for _, tc := range toolCalls {
		var c struct {
			ID       json.RawMessage `json:"id"`
			Function struct {
				Name      json.RawMessage `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		}
		_ = json.Unmarshal(tc, &c) // a malformed element gives a call with no name
		call := tool.Call{ID: jsonobj.Unquote(c.ID), Name: jsonobj.Unquote(c.Function.Name), Args: argumentsOf(c.Function.Arguments)}
		calls = append(calls, call)
	}
	return providercall.AssignIDs(calls, stableIDPrefix), nil
}

// chatMessage finds the assistant message in a response body or returns
// data itself when it is a message.
func chatMessage(data []byte) (json.RawMessage, error) {
	o, err := jsonobj.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	choices, ok := o.Get("choices")
	if !ok {
		if o.Has("tool_calls") || o.Has("role") {
			return data, nil
		}
		if e, ok := o.Get("error"); ok {
			return nil, fmt.Errorf("%w: the response is an error: %s", ErrMalformed, providercall.Shorten(jsonobj.Compact(e), 300))
		}
		return nil, fmt.Errorf("%w: neither a chat completion nor a message", ErrMalformed)
	}
	list, err := providercall.Elements(choices, providercall.MaxElements)
	if err != nil {
		return nil, fmt.Errorf("%w: choices: %v", ErrMalformed, err)
	}
	var first struct {
		Message json.RawMessage `json:"message"`
	}
	if len(list) > 0 {
		if err := json.Unmarshal(list[0], &first); err != nil {
			return nil, fmt.Errorf("%w: choices: %v", ErrMalformed, err)
		}
	}
	if jsonobj.Kind(first.Message) != "object" {
		return nil, fmt.Errorf("%w: no message in choices", ErrMalformed)
	}
	return first.Message, nil
}

// ResponseItem is an item of a Responses API request's "input" or a
// response's "output" that this package reads or writes: a function_call
// (from the model) or a function_call_output (a result going back).
type ResponseItem struct {
	Type string `json:"type"`
	// ID is the item's own id ("fc_…") of a function_call.
	ID string `json:"id,omitempty"`
	// CallID links a function_call_output to its function_call.
	CallID    string `json:"call_id"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	// Output is the result text of a function_call_output.
	Output *string `json:"output,omitempty"`
}

// ResponsesCalls returns the function_call items of a Responses API
// response body (its "output" array) or of an array of items, as
// [tool.Call] values whose ID is the item's call_id (its id when call_id is
// missing). Other items (messages, reasoning) are skipped. Malformed calls
// are handled as in [ChatCalls].
func ResponsesCalls(data []byte) ([]tool.Call, error) {
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
			Name      json.RawMessage `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(it, &c) != nil || c.Type != "function_call" {
			continue
		}
		id := jsonobj.Unquote(c.CallID)
		if id == "" {
			id = jsonobj.Unquote(c.ID)
		}
		calls = append(calls, tool.Call{ID: id, Name: jsonobj.Unquote(c.Name), Args: argumentsOf(c.Arguments)})
	}
	return providercall.AssignIDs(calls, stableIDPrefix), nil
}

// argumentsOf turns the "arguments" member into call arguments: the
// content of a string; an object as it is (some servers send one); nothing
// for null or a missing member; anything else as it is, for the registry
// to refuse.
func argumentsOf(v json.RawMessage) json.RawMessage {
	v = bytes.TrimSpace(v)
	switch jsonobj.Kind(v) {
	case "string":
		var s string
		if json.Unmarshal(v, &s) != nil {
			return v
		}
		return json.RawMessage(s)
	case "null":
		return nil
	case "invalid":
		if len(v) == 0 {
			return nil
		}
	}
	return v
}

// StableID returns the id given to a call that came without one: "call_"
// and 16 hex digits of a hash of its position in the response, its name
// and its arguments, so that parsing the same response twice gives the
// same ids.
func StableID(index int, name string, args []byte) string {
	return providercall.StableID(stableIDPrefix, index, name, args)
}

const stableIDPrefix = "call_"
