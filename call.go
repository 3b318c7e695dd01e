package tool

import "encoding/json"

// A Call is one tool call a model asked for, as the executor runs it.
//
// Its JSON form, {"id","name","args","depends_on"}, is the batch format that
// `clawtool call` and the inspector read.
type Call struct {
	// ID identifies the call within a batch (a provider's tool_call_id).
	// Calls that others depend on must have a non-empty, unique ID.
	ID string `json:"id,omitempty"`
	// Name is the tool to call.
	Name string `json:"name"`
	// Args is the JSON object of arguments.
	Args json.RawMessage `json:"args,omitempty"`
	// DependsOn lists the IDs of calls that must finish before this one
	// starts.
	DependsOn []string `json:"depends_on,omitempty"`
}

// An Outcome is what became of one Call.
type Outcome struct {
	// ID is the Call's ID.
	ID string
	// Result is what the model sees; it is never the zero Result for a
	// failed call.
	Result Result
	// Err is nil when the call succeeded, else an error the program can
	// inspect with errors.Is and errors.As (ErrNotFound, *ArgumentError,
	// ErrTimeout, *PanicError, the tool's own error, ...).
	Err error
}
