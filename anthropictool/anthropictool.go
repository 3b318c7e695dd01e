// Package anthropictool connects a tool registry to the Anthropic Messages
// API without depending on an Anthropic SDK: the wire shapes are small
// structs of its own, checked against the official SDK by the tests of the
// interop module.
//
// It does three conversions:
//
//   - Definitions out: [Tools] gives the request's "tools" array,
//     {name, description, input_schema} per tool.
//   - Tool calls in: [Calls] reads the tool_use blocks of a response into
//     [tool.Call] values for an executor.
//   - Results back: [Results] gives the one user message that carries a
//     tool_result block per outcome, with is_error set for failures.
//
// For registries too large to send whole, [DeferredToolParams] marks
// tools with defer_loading; the model finds them with a
// [ServerSearchTool] the API runs (regex or BM25), or with a search tool
// of the program's own whose results are [ToolReferences].
//
// The parsers never panic and never drop a call: a tool_use whose input is
// not a JSON object, or that names an unknown tool, is returned as it is,
// and running it gives the model an error result for that call.
package anthropictool

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsonobj"
	"github.com/miniopenclaw/tool/internal/providercall"
)

// ToolParam is one element of a Messages request's "tools" array.
type ToolParam struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	// DeferLoading keeps the tool out of the model's context until a
	// tool search finds it (see [DeferredToolParams]).
	DeferLoading bool `json:"defer_loading,omitempty"`
}

// ToolParams converts tools, in the order given (use
// [tool.Registry.List] for a registry: it is in name order, which keeps
// prompts cacheable). The input schema is the tool's Parameters as it is:
// the Messages API accepts JSON Schema with an object root, which a
// [tool.Registry] has already checked. ToolParams fails for a nil tool or
// Parameters that are not a JSON object.
func ToolParams(tools []tool.Tool) ([]ToolParam, error) {
	out := make([]ToolParam, 0, len(tools))
	for _, t := range tools {
		if t == nil {
			return nil, errors.New("anthropictool: nil tool")
		}
		params := t.Parameters()
		var b bytes.Buffer
		if err := json.Compact(&b, params); err != nil || jsonobj.Kind(params) != "object" {
			return nil, fmt.Errorf("anthropictool: tool %q: parameters are not a JSON object schema", t.Name())
		}
		out = append(out, ToolParam{Name: t.Name(), Description: t.Description(), InputSchema: b.Bytes()})
	}
	return out, nil
}

// Tools returns the "tools" array of a Messages request for tools; see
// [ToolParams].
func Tools(tools []tool.Tool) (json.RawMessage, error) {
	params, err := ToolParams(tools)
	if err != nil {
		return nil, err
	}
	return jsonobj.Marshal(params)
}

// Message is a Messages API message: {"role":…,"content":[…]}, its
// content a string or an array of content blocks.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// ContentBlock is a content block of the kinds this package reads or
// writes: "text", "tool_use", "tool_result", and the "image",
// "document" and "tool_reference" blocks inside a tool_result. Fields that do not belong to a
// block's type are left empty.
type ContentBlock struct {
	Type string `json:"type"`
	// Text is the text of a "text" block.
	Text string `json:"text,omitempty"`
	// ID, Name and Input describe a "tool_use" block.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError describe a "tool_result" block.
	// Content is omitted for a call that succeeded with empty output.
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	// Blocks, when not empty, is the content of a "tool_result" block
	// as an array of text, image and document blocks, sent in place of
	// Content.
	Blocks []ContentBlock `json:"-"`
	// Source holds the data of an "image" or "document" block.
	Source *Source `json:"source,omitempty"`
	// ToolName names the tool of a "tool_reference" block, inside the
	// tool_result of a tool search (see [ToolReferences]).
	ToolName string `json:"tool_name,omitempty"`
}

// Source is the data of an "image" or "document" block: Data in base64
// with its media type.
type Source struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// MarshalJSON writes b, with Blocks as its "content" when there are any.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	type plain ContentBlock // the fields, without this method
	if len(b.Blocks) == 0 {
		return json.Marshal(plain(b))
	}
	return json.Marshal(struct {
		plain
		Content []ContentBlock `json:"content"`
	}{plain(b), b.Blocks})
}

// ErrMalformed is wrapped by [Calls] when a response as a whole cannot be
// read (it is not JSON, or was cut off), so that there is no call to
// attach an error result to.
var ErrMalformed = errors.New("malformed response")

// Calls returns the tool_use blocks of a Messages response body, of an
// assistant message, or of a content array, in order, as [tool.Call] values
// whose ID is the block's id.
//
// Problems with one block never fail the others, and never panic: a block
// whose input is not a JSON object (a string holding JSON, a number) keeps
// it, so that running the call gives the model an invalid-arguments error
// result; a missing input counts as {}; a block without an id gets a
// stable one ([StableID]); a repeated id gets a suffix so that the ids of
// one batch are unique. Calls returns an error wrapping [ErrMalformed]
// only when data as a whole cannot be read, or holds more than 8,192
// content blocks: it stops reading there.
func Calls(data []byte) ([]tool.Call, error) {
	blocks, err := contentOf(data)
	if err != nil {
		return nil, err
	}
	var calls []tool.Call
	for _, b := range blocks {
		var blk struct {
			Type  string          `json:"type"`
			ID    json.RawMessage `json:"id"`
			Name  json.RawMessage `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(b, &blk) != nil || blk.Type != "tool_use" {
			continue
		}
		calls = append(calls, tool.Call{ID: jsonobj.Unquote(blk.ID), Name: jsonobj.Unquote(blk.Name), Args: providercall.Arguments(blk.Input)})
	}
	return providercall.AssignIDs(calls, stableIDPrefix), nil
}

// contentOf finds the content array in a response, a message, or data
// itself.
func contentOf(data []byte) ([]json.RawMessage, error) {
	switch jsonobj.Kind(data) {
	case "array":
		blocks, err := providercall.Elements(data, providercall.MaxElements)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		return blocks, nil
	case "object":
		o, err := jsonobj.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		content, ok := o.Get("content")
		if !ok {
			if e, ok := o.Get("error"); ok {
				return nil, fmt.Errorf("%w: the response is an error: %s", ErrMalformed, providercall.Shorten(string(e), 300))
			}
			return nil, fmt.Errorf("%w: no content in the message", ErrMalformed)
		}
		if jsonobj.Kind(content) == "string" {
			return nil, nil // a plain text message
		}
		blocks, err := providercall.Elements(content, providercall.MaxElements)
		if err != nil {
			return nil, fmt.Errorf("%w: content: %v", ErrMalformed, err)
		}
		return blocks, nil
	}
	return nil, fmt.Errorf("%w: not a message", ErrMalformed)
}

// Text returns the text blocks of a response body or message, joined.
func Text(data []byte) string {
	blocks, _ := contentOf(data)
	var s strings.Builder // += copied the text so far for each block
	for _, b := range blocks {
		var blk struct{ Type, Text string }
		if json.Unmarshal(b, &blk) == nil && blk.Type == "text" {
			s.WriteString(blk.Text)
		}
	}
	return s.String()
}

// StableID returns the id given to a tool_use that came without one:
// "toolu_" and 16 hex digits of a hash of its position, name and input, so
// that parsing the same response twice gives the same ids.
func StableID(index int, name string, input []byte) string {
	return providercall.StableID(stableIDPrefix, index, name, input)
}

const stableIDPrefix = "toolu_"

// Result returns the tool_result block that answers the tool_use with the
// given id: the Output of a success (no content when it is empty), or the
// Error of a failure with is_error set.
//
// A success with Parts has an array of blocks as its content: the Output
// as a text block, then an image block for each image of a type the API
// takes (JPEG, PNG, GIF, WebP), a document block for each PDF resource,
// and a text block describing any other part (see [tool.Part.String]).
func Result(id string, r tool.Result) ContentBlock {
	b := ContentBlock{Type: "tool_result", ToolUseID: id, Content: r.Output}
	if r.IsError {
		b.Content, b.IsError = providercall.ErrorMessage(r), true
		return b
	}
	if len(r.Parts) == 0 {
		return b
	}
	if r.Output != "" {
		b.Blocks = append(b.Blocks, ContentBlock{Type: "text", Text: r.Output})
	}
	for _, p := range r.Parts {
		b.Blocks = append(b.Blocks, partBlock(p))
	}
	return b
}

// partBlock converts p into a block a tool_result can hold.
func partBlock(p tool.Part) ContentBlock {
	source := func() *Source {
		return &Source{Type: "base64", MediaType: p.MIMEType, Data: base64.StdEncoding.EncodeToString(p.Data)}
	}
	switch {
	case p.Type == tool.PartImage && imageTypes[p.MIMEType]:
		return ContentBlock{Type: "image", Source: source()}
	case p.Type == tool.PartResource && p.MIMEType == "application/pdf" && len(p.Data) > 0:
		return ContentBlock{Type: "document", Source: source()}
	}
	return ContentBlock{Type: "text", Text: p.String()}
}

// imageTypes are the media types of the images the Messages API takes.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// Results returns the user message that answers a turn's tool calls: one
// tool_result block per outcome, in order, all in one message, as the
// Messages API requires.
func Results(outcomes []tool.Outcome) Message {
	m := Message{Role: "user", Content: make([]ContentBlock, len(outcomes))}
	for i, o := range outcomes {
		m.Content[i] = Result(o.ID, o.Result)
	}
	return m
}
