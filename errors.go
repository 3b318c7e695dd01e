package tool

import (
	"errors"
	"fmt"
	"strings"
)

// Errors the library returns to the program. The model never sees these
// values directly: it reads the message of an error [Result].
var (
	// ErrNotFound is the cause of a call to a name no tool has.
	ErrNotFound = errors.New("tool not found")

	// ErrDuplicate is wrapped by [Registry.RegisterUnique] when a tool of
	// the same name is already registered.
	ErrDuplicate = errors.New("duplicate tool name")

	// ErrInvalidName is wrapped by [Registry.Register] when a tool's name
	// does not match ^[a-zA-Z0-9_-]{1,64}$.
	ErrInvalidName = errors.New("invalid tool name")

	// ErrInvalidSchema is wrapped by [Registry.Register] and [New] when a
	// tool's parameters are not a usable object schema.
	ErrInvalidSchema = errors.New("invalid schema")

	// ErrInvalidArguments is the cause of a call whose arguments were
	// malformed or did not match the schema. The error is an
	// [*ArgumentError] that lists every problem.
	ErrInvalidArguments = errors.New("invalid arguments")

	// ErrTimeout is the cause of a call stopped by its tool's time limit,
	// as opposed to the caller's own cancellation.
	ErrTimeout = errors.New("tool call timed out")

	// ErrIgnoredContext is the cause of a call whose tool was still running
	// a grace period after its context ended. Go cannot stop a goroutine:
	// the tool's goroutine is left running and counted in [Stats].
	ErrIgnoredContext = errors.New("tool ignored its context")

	// ErrDenied is the cause of a call a policy refused.
	ErrDenied = errors.New("permission denied")
)

// A Violation is one way in which arguments failed to match a schema.
type Violation struct {
	// Pointer is the JSON pointer (RFC 6901) of the offending value;
	// "" is the whole arguments object.
	Pointer string
	// Expected says what the schema allows there.
	Expected string
	// Got says what came instead, with long values shortened.
	Got string
	// Hint is an optional suggestion, such as a close property name.
	Hint string
}

// String formats v as one line: "/path: expected …, got …".
func (v Violation) String() string {
	var b strings.Builder
	if v.Pointer == "" {
		b.WriteString("(root)")
	} else {
		b.WriteString(v.Pointer)
	}
	b.WriteString(": expected ")
	b.WriteString(v.Expected)
	if v.Got != "" {
		b.WriteString(", got ")
		b.WriteString(v.Got)
	}
	if v.Hint != "" {
		b.WriteString(" (")
		b.WriteString(v.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// An ArgumentError reports arguments that could not be used: not valid
// JSON, over a limit, or not matching the tool's schema. It unwraps to
// [ErrInvalidArguments].
type ArgumentError struct {
	// Tool is the name of the tool that was called.
	Tool string
	// Violations lists every problem found, in document order.
	Violations []Violation
	// Args is the received arguments, shortened to a few hundred bytes.
	Args string
}

// Error formats the problems for a model to act on: one line per
// violation, then the received arguments.
func (e *ArgumentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid arguments for tool %q", e.Tool)
	if len(e.Violations) == 1 {
		b.WriteString(": ")
		b.WriteString(e.Violations[0].String())
	} else {
		fmt.Fprintf(&b, " (%d problems):", len(e.Violations))
		for _, v := range e.Violations {
			b.WriteString("\n- ")
			b.WriteString(v.String())
		}
	}
	if e.Args != "" {
		b.WriteString("\nreceived: ")
		b.WriteString(e.Args)
	}
	return b.String()
}

// Unwrap returns [ErrInvalidArguments].
func (e *ArgumentError) Unwrap() error { return ErrInvalidArguments }

// A PanicError records a panic recovered from a tool's Execute. The model
// sees only the tool name and the correlation ID; the value and the stack
// are logged.
type PanicError struct {
	Tool          string
	Value         any
	Stack         []byte
	CorrelationID string
}

// Error returns a short description without the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %q panicked: %v (correlation id %s)", e.Tool, e.Value, e.CorrelationID)
}
