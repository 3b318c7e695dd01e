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
// violation, then the received arguments. The message is at most
// [MaxArgumentErrorBytes] long, whatever the arguments: each field of a
// violation is cut to [MaxViolationFieldBytes], the violations past the
// cap are counted rather than listed, and control characters and other
// characters that would hide or reorder text are escaped as \uXXXX.
func (e *ArgumentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid arguments for tool %q", shorten(e.Tool, 80))
	received := ""
	if e.Args != "" {
		received = "\nreceived: " + shorten(visible(shorten(e.Args, 1000)), 1000)
	}
	room := MaxArgumentErrorBytes - len(received) - 80 // 80: the "more problems" line
	if len(e.Violations) == 1 {
		b.WriteString(": ")
		b.WriteString(e.Violations[0].safe().String())
	} else {
		fmt.Fprintf(&b, " (%d problems):", len(e.Violations))
		for i, v := range e.Violations {
			line := v.safe().String()
			if b.Len()+len(line)+3 > room {
				fmt.Fprintf(&b, "\n- … %d more not shown (the message is cut at %d bytes)", len(e.Violations)-i, MaxArgumentErrorBytes)
				break
			}
			b.WriteString("\n- ")
			b.WriteString(line)
		}
	}
	b.WriteString(received)
	return shorten(b.String(), MaxArgumentErrorBytes-len("…"))
}

// Bounds on the message of an [ArgumentError].
const (
	MaxArgumentErrorBytes  = 8 << 10 // the whole message
	MaxViolationFieldBytes = 1000    // each field of each violation
)

// safe returns v with each field cut to MaxViolationFieldBytes and hidden
// characters escaped.
func (v Violation) safe() Violation {
	for _, f := range []*string{&v.Pointer, &v.Expected, &v.Got, &v.Hint} {
		*f = shorten(visible(shorten(*f, MaxViolationFieldBytes)), MaxViolationFieldBytes)
	}
	return v
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
