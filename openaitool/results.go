package openaitool

import (
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/providercall"
)

// ResultText is the text a model reads for r: the [tool.Result.Text] of
// a success (its Output, then its Parts described one per line; "" when
// the tool succeeded with nothing to say), and "Error: " followed by the
// message of a failure, because the OpenAI APIs have no error flag on
// tool results.
func ResultText(r tool.Result) string {
	if r.IsError {
		return "Error: " + providercall.ErrorMessage(r)
	}
	return r.Text()
}

// ChatResult returns the role:"tool" message that answers the call with
// the given id.
func ChatResult(id string, r tool.Result) ChatMessage {
	return ChatMessage{Role: "tool", ToolCallID: id, Content: ResultText(r)}
}

// ChatResults returns one role:"tool" message per outcome, in order, to
// append after the assistant message that made the calls.
func ChatResults(outcomes []tool.Outcome) []ChatMessage {
	msgs := make([]ChatMessage, len(outcomes))
	for i, o := range outcomes {
		msgs[i] = ChatResult(o.ID, o.Result)
	}
	return msgs
}

// AssistantMessage returns the assistant message that made calls, as it
// goes back into the conversation before their results. Use it rather than
// the message as received when the calls were given ids by [ChatCalls].
func AssistantMessage(content string, calls []tool.Call) ChatMessage {
	m := ChatMessage{Role: "assistant", Content: content}
	for _, c := range calls {
		// What the model wrote goes back as it was, even when it is not
		// valid JSON: the error result for the call explains the problem.
		args := string(c.Args)
		if args == "" {
			args = "{}"
		}
		m.ToolCalls = append(m.ToolCalls, ChatToolCall{ID: c.ID, Type: "function", Function: ChatFunctionCall{Name: c.Name, Arguments: args}})
	}
	return m
}

// ResponsesResult returns the function_call_output item that answers the
// call with the given call_id.
func ResponsesResult(callID string, r tool.Result) ResponseItem {
	text := ResultText(r)
	return ResponseItem{Type: "function_call_output", CallID: callID, Output: &text}
}

// ResponsesResults returns one function_call_output item per outcome, in
// order, for the next request's "input".
func ResponsesResults(outcomes []tool.Outcome) []ResponseItem {
	items := make([]ResponseItem, len(outcomes))
	for i, o := range outcomes {
		items[i] = ResponsesResult(o.ID, o.Result)
	}
	return items
}
