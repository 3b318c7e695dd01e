// Package geminitool connects a tool registry to the Gemini API
// (generateContent) without depending on a Google SDK: the wire shapes are
// small structs of its own, checked against google.golang.org/genai by
// the tests of the interop module.
//
// It does three conversions:
//
//   - Definitions out: [Tools] gives the request's "tools" array, one Tool
//     holding a function declaration per tool, with each schema converted
//     to Gemini's OpenAPI-subset dialect by [Schema] (or refused with a
//     [*SchemaError] naming the keyword).
//   - Tool calls in: [Calls] reads the functionCall parts of a response
//     into [tool.Call] values. Gemini often sends calls without ids; they get
//     stable ones ([StableID]).
//   - Results back: [Results] gives the user content of functionResponse
//     parts, {"output": …} for a success and {"error": …} for a failure, as
//     Gemini's documentation asks.
//
// The parsers never panic and never drop a call: a call whose args are not
// a JSON object, or that names an unknown tool, is returned as it is, and
// running it gives the model an error result for that call.
package geminitool

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsonobj"
	"github.com/miniopenclaw/tool/internal/providercall"
)

// FunctionDeclaration declares one tool to Gemini.
type FunctionDeclaration struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the converted schema; it is omitted for a tool that
	// takes no parameters (Gemini refuses an OBJECT without properties).
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Tool is an element of a request's "tools" array.
type Tool struct {
	FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations"`
}

// Declarations converts tools, in the order given (use
// [tool.Registry.List] for a registry). It returns an error wrapping a
// [*SchemaError], naming the tool and the keyword, for the first tool
// whose schema Gemini's dialect cannot express, and an error for a nil
// tool.
func Declarations(tools []tool.Tool) ([]FunctionDeclaration, error) {
	out := make([]FunctionDeclaration, 0, len(tools))
	for _, t := range tools {
		if t == nil {
			return nil, errors.New("geminitool: nil tool")
		}
		s, err := Schema(t.Parameters())
		if err != nil {
			var se *SchemaError
			if errors.As(err, &se) {
				se.Tool = t.Name()
			}
			return nil, fmt.Errorf("geminitool: %w", err)
		}
		d := FunctionDeclaration{Name: t.Name(), Description: t.Description()}
		if o, _ := jsonobj.Parse(s); o.Has("properties") {
			d.Parameters = s
		}
		out = append(out, d)
	}
	return out, nil
}

// Tools returns the "tools" array of a generateContent request:
// [{"functionDeclarations":[…]}]. See [Declarations].
func Tools(tools []tool.Tool) (json.RawMessage, error) {
	decls, err := Declarations(tools)
	if err != nil {
		return nil, err
	}
	return jsonobj.Marshal([]Tool{{FunctionDeclarations: decls}})
}

// Content is a Gemini content: a role ("user" or "model") and parts.
type Content struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is a part of a [Content] of the kinds this package reads or
// writes.
type Part struct {
	Text             string            `json:"text,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is a call the model asks for.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse answers a [FunctionCall]. Response is a JSON object.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// ErrMalformed is wrapped by [Calls] when a response as a whole cannot be
// read, so that there is no call to attach an error result to.
var ErrMalformed = errors.New("malformed response")

// StableIDPrefix starts the ids [Calls] makes up for calls that came
// without one. [Results] leaves such ids out of the functionResponse parts
// it writes, since the model never saw them.
const StableIDPrefix = "gemini_call_"

// StableID returns the id given to a functionCall that came without one:
// [StableIDPrefix] and 16 hex digits of a hash of its position, name and
// args, so that parsing the same response twice gives the same ids and
// the ids of one batch are distinct.
func StableID(index int, name string, args []byte) string {
	return providercall.StableID(StableIDPrefix, index, name, args)
}

// Calls returns the functionCall parts of a generateContent response body
// (its first candidate's content), of a [Content], or of an array of
// parts, in order, as [tool.Call] values.
//
// A call without an id gets [StableID]; a repeated id gets a suffix. A
// call whose args are not a JSON object keeps them, so that running it
// gives the model an invalid-arguments error result; missing args count
// as {}. Calls never panics, and returns an error wrapping [ErrMalformed]
// only when data as a whole cannot be read (not JSON, cut off, no
// candidates, a prompt blocked by safety settings), or holds more than
// 8,192 parts or candidates: it stops reading there.
func Calls(data []byte) ([]tool.Call, error) {
	parts, err := partsOf(data)
	if err != nil {
		return nil, err
	}
	var calls []tool.Call
	for _, p := range parts {
		var part struct {
			FunctionCall json.RawMessage `json:"functionCall"`
		}
		if json.Unmarshal(p, &part) != nil || len(part.FunctionCall) == 0 || string(part.FunctionCall) == "null" {
			continue
		}
		var fc struct {
			ID   json.RawMessage `json:"id"`
			Name json.RawMessage `json:"name"`
			Args json.RawMessage `json:"args"`
		}
		_ = json.Unmarshal(part.FunctionCall, &fc)
		calls = append(calls, tool.Call{ID: jsonobj.Unquote(fc.ID), Name: jsonobj.Unquote(fc.Name), Args: providercall.Arguments(fc.Args)})
	}
	return providercall.AssignIDs(calls, StableIDPrefix), nil
}

// partsOf finds the parts in a response, a content or data itself.
func partsOf(data []byte) ([]json.RawMessage, error) {
	switch jsonobj.Kind(data) {
	case "array":
		parts, err := providercall.Elements(data, providercall.MaxElements)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		return parts, nil
	case "object":
	default:
		return nil, fmt.Errorf("%w: not a response", ErrMalformed)
	}
	o, err := jsonobj.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	content := json.RawMessage(data)
	if cands, ok := o.Get("candidates"); ok {
		list, err := providercall.Elements(cands, providercall.MaxElements)
		if err != nil {
			return nil, fmt.Errorf("%w: candidates: %v", ErrMalformed, err)
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("%w: no candidates", ErrMalformed)
		}
		var first struct {
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(list[0], &first); err != nil {
			return nil, fmt.Errorf("%w: candidates: %v", ErrMalformed, err)
		}
		content = first.Content
		if jsonobj.Kind(content) != "object" {
			return nil, nil // e.g. finishReason MALFORMED_FUNCTION_CALL: no content
		}
	} else if !o.Has("parts") {
		if fb, ok := o.Get("promptFeedback"); ok {
			return nil, fmt.Errorf("%w: no candidates; prompt feedback: %s", ErrMalformed, jsonobj.Compact(fb))
		}
		if e, ok := o.Get("error"); ok {
			return nil, fmt.Errorf("%w: the response is an error: %s", ErrMalformed, providercall.Shorten(jsonobj.Compact(e), 300))
		}
		return nil, fmt.Errorf("%w: neither a response nor a content", ErrMalformed)
	}
	var c struct {
		Parts json.RawMessage `json:"parts"`
	}
	if err := json.Unmarshal(content, &c); err != nil {
		return nil, fmt.Errorf("%w: parts: %v", ErrMalformed, err)
	}
	parts, err := providercall.Elements(c.Parts, providercall.MaxElements)
	if err != nil {
		return nil, fmt.Errorf("%w: parts: %v", ErrMalformed, err)
	}
	return parts, nil
}

// Text returns the text parts of a response body or content, joined.
func Text(data []byte) string {
	parts, _ := partsOf(data)
	var b strings.Builder
	for _, p := range parts {
		var part struct {
			Text    string `json:"text"`
			Thought bool   `json:"thought"`
		}
		if json.Unmarshal(p, &part) == nil && !part.Thought {
			b.WriteString(part.Text)
		}
	}
	return b.String()
}

// Result returns the functionResponse part that answers call: response
// {"output": Text} for a success (Output, then any Parts described, see
// [tool.Result.Text]), plus "structured" when the result
// has structured content, and {"error": Error} for a failure. The id is
// left out when it was made up by [Calls].
func Result(call tool.Call, r tool.Result) Part {
	resp := jsonobj.Object{}
	if r.IsError {
		resp.Set("error", jsonobj.Quote(providercall.ErrorMessage(r)))
	} else {
		resp.Set("output", jsonobj.Quote(r.Text()))
		if len(r.Structured) > 0 && json.Valid(r.Structured) {
			resp.Set("structured", r.Structured)
		}
	}
	b, err := resp.MarshalJSON()
	if err != nil {
		b = []byte(`{"error":"the result could not be encoded"}`)
	}
	fr := &FunctionResponse{Name: call.Name, Response: b}
	if !strings.HasPrefix(call.ID, StableIDPrefix) {
		fr.ID = call.ID
	}
	return Part{FunctionResponse: fr}
}

// Results returns the user content that answers a turn's calls: one
// functionResponse part per call, in the order of calls, matching each to
// its outcome by ID. A call without an outcome gets an error response
// saying so.
func Results(calls []tool.Call, outcomes []tool.Outcome) Content {
	byID := make(map[string]tool.Result, len(outcomes))
	for _, o := range outcomes {
		byID[o.ID] = o.Result
	}
	c := Content{Role: "user", Parts: make([]Part, len(calls))}
	for i, call := range calls {
		r, ok := byID[call.ID]
		if !ok {
			r = tool.Result{IsError: true, Kind: tool.KindToolError, Error: "the call was not run"}
		}
		c.Parts[i] = Result(call, r)
	}
	return c
}
