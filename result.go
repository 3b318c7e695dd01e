package tool

import (
	"encoding/json"
	"strings"
)

// A Result is what a tool call gives back to the model.
//
// A successful call has IsError false; its Output may be empty, which means
// "succeeded, nothing to say", not failure. A failed call has IsError true,
// a message for the model in Error and the kind of failure in Kind.
//
// The JSON form is {"output":…,"error":…,"is_error":…} followed by the
// optional fields when they are set.
//
// A tool that returns more than text (an image, audio, a resource) puts
// the text in Output and the rest in Parts.
type Result struct {
	// Output is the text the model reads when the call succeeded. Tools
	// built with [New] put a string result here as it is, and any other
	// result as its JSON encoding.
	Output string `json:"output"`

	// Error is the message the model reads when the call failed.
	Error string `json:"error"`

	// IsError reports whether the call failed.
	IsError bool `json:"is_error"`

	// Kind classifies a failure; it is empty when IsError is false.
	Kind ErrorKind `json:"kind,omitempty"`

	// Structured is optional structured content: a JSON value conforming
	// to the tool's output schema (Options.OutputSchema).
	Structured json.RawMessage `json:"structured,omitempty"`

	// Parts are the pieces of a successful result that are not text
	// (images, audio, resources), in order after Output. Providers and
	// MCP clients that take them receive them as they are; others read
	// [Result.Text]. The Parts of a failed result are not sent.
	Parts []Part `json:"parts,omitempty"`

	// Metadata holds facts about the call for the program, not the model:
	// for example "correlation_id" for a recovered panic,
	// "truncated_bytes" when the result budget cut Output, or "attempts"
	// when a call was retried.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Text returns what a reader of text only sees of a successful result:
// Output, then each Part described by [Part.String], one per line.
func (r Result) Text() string {
	if len(r.Parts) == 0 {
		return r.Output
	}
	var b strings.Builder
	b.WriteString(r.Output)
	for _, p := range r.Parts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// An ErrorKind classifies why a call failed. New kinds may be added; treat
// an unknown kind like [KindToolError].
type ErrorKind string

// The kinds of failure the library reports.
const (
	// KindNotFound: no tool has the requested name.
	KindNotFound ErrorKind = "not_found"
	// KindInvalidArguments: the arguments were malformed or did not match
	// the tool's schema; the tool did not run.
	KindInvalidArguments ErrorKind = "invalid_arguments"
	// KindToolError: the tool ran and reported a failure.
	KindToolError ErrorKind = "tool_error"
	// KindPanic: the tool panicked; the panic was recovered and logged.
	KindPanic ErrorKind = "panic"
	// KindTimeout: the tool's own time limit ran out.
	KindTimeout ErrorKind = "timeout"
	// KindCanceled: the caller canceled the call (its context ended).
	KindCanceled ErrorKind = "canceled"
	// KindDenied: a policy refused the call; the tool did not run.
	KindDenied ErrorKind = "denied"
	// KindUnavailable: nothing could run the call right now, for example
	// no worker serves a remote tool; the tool did not run, and the same
	// call may succeed later.
	KindUnavailable ErrorKind = "unavailable"
)

// errorResult returns a failed Result with the given kind and message.
func errorResult(kind ErrorKind, msg string) Result {
	return Result{Error: msg, IsError: true, Kind: kind}
}
