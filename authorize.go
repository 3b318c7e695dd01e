package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// An Authorizer decides whether a call may run. A [Registry] made with
// [WithAuthorizer] consults it on every call it runs, whichever path the
// call took to get there ([Registry.Execute], an [Executor], a protocol
// server or worker built on the registry), after the arguments have been
// parsed strictly and validated and before the tool runs. It sees the
// arguments the tool will see, defaults applied, never the bytes the
// caller sent: a refused duplicate or case-variant key never reaches it.
//
// Authorize returns nil to let the call run. Any other error refuses it:
// the tool does not run, the model sees a [KindDenied] result whose
// message is the error's message (so it should say what the caller may do
// instead and name no rule internals), and the Go error behind the result
// wraps both [ErrDenied] and the returned error. When the returned error
// has a method ResultMetadata() map[string]any, what it returns is the
// result's Metadata, for the program (an approval request, a retry time).
//
// Authorize may be called concurrently. A panic in it refuses the call
// and is logged like a tool's panic.
type Authorizer interface {
	Authorize(ctx context.Context, req AccessRequest) error
}

// An ArgsDeferrer is an [Authorizer] that decides many calls without
// reading their arguments. When DefersArgs returns true (it must return
// the same answer every time: [NewRegistry] asks once, not at every
// call), the registry leaves [AccessRequest.Args] nil, and the Authorizer
// reads the arguments with [AccessRequest.Arguments], which encodes them
// only when asked.
type ArgsDeferrer interface {
	Authorizer
	DefersArgs() bool
}

// An OutcomeRecorder is an [Authorizer] that also hears how each call it
// let run ended, for an audit trail: a [Registry] calls Outcome with the
// call's Result (what the model saw) and how long the call took, from the
// tool's start to its Result, once per allowed call, after the call. A
// panic in Outcome is recovered and logged. A recorder that is also an
// [OutcomeSkipper] whose RecordsOutcomes returns false is neither called
// nor timed.
type OutcomeRecorder interface {
	Authorizer
	Outcome(ctx context.Context, req AccessRequest, res Result, took time.Duration)
}

// An OutcomeSkipper is an [OutcomeRecorder] that may record nothing:
// when RecordsOutcomes returns false, the registry neither calls Outcome
// nor times calls. It must return the same answer every time, as
// [NewRegistry] asks once.
type OutcomeSkipper interface {
	OutcomeRecorder
	RecordsOutcomes() bool
}

// An AccessRequest is what an [Authorizer] decides on: one call, with
// its checked arguments.
type AccessRequest struct {
	// Tool is the tool to be called.
	Tool Tool
	// Name is the tool's name.
	Name string
	// Options are the tool's options, its Annotations among them.
	Options Options
	// Args is the JSON object of arguments as the tool will receive them:
	// parsed strictly, validated, with defaults applied. For a tool built
	// with [New] it is the JSON encoding of the bound argument value. The
	// Authorizer must not modify it. It is nil for an Authorizer that
	// defers the arguments (see [Authorizer]); use Arguments.
	Args json.RawMessage

	call pendingCall // encodes the arguments when Args is deferred
}

// Arguments returns the call's checked arguments as Args describes them:
// Args itself when it is set, else their encoding, made on first use and
// kept, so that every caller of Arguments for one call sees the same
// bytes. An Authorizer that reads the arguments after the tool has run
// (in Outcome) should have read them once in Authorize: a tool may change
// values it was given (a map, a slice) as it runs.
func (r *AccessRequest) Arguments() (json.RawMessage, error) {
	if r.Args != nil || r.call == nil {
		return r.Args, nil
	}
	return r.call.checkedArgs()
}

// Argument returns the value of the top-level argument name: the member
// name has in the JSON object [AccessRequest.Arguments] returns, read
// from the call's bound arguments without encoding or parsing them. ok
// reports whether Argument can say; when it is false, v is the zero
// ArgumentValue and the caller reads the argument from Arguments instead.
//
// When ok is true, v is exactly what decoding Arguments would give for
// that member: an object without the member (an unknown name, a field
// left out by omitempty or omitzero, or one tagged "-") is
// [ArgumentAbsent]; a string is the string decoding gives, whatever
// escapes its encoding used; an integer is an int64 of the same value.
// Names are matched exactly, as JSON object keys, never by case. And when
// ok is true, Arguments does not fail for the call.
//
// Argument says (ok is true) only for a call of a tool made with [New]
// whose argument type is a struct of string, boolean and integer fields
// with plain json tags (names of ASCII letters, digits, '_' and '-';
// options omitempty and omitzero; no embedded fields and no methods that
// change the encoding), and then for every name except two values of
// those fields: a string that is not valid UTF-8 (encoding/json replaces
// its bytes) and an unsigned integer above the largest int64. It does not
// say for any other call: a tool with a hand-written schema, another
// argument type (a map, a pointer, a struct with a nested, float, slice
// or custom-encoded field), or an AccessRequest not made by a [Registry].
//
// A bound struct is passed to the tool by value, so the answer is the
// same before and after the tool runs. Argument does not allocate.
func (r *AccessRequest) Argument(name string) (v ArgumentValue, ok bool) {
	if r.call == nil {
		return ArgumentValue{}, false
	}
	return r.call.argument(name)
}

// An ArgumentValue is one top-level argument of a call, as
// [AccessRequest.Argument] reads it. The zero ArgumentValue is an
// argument the call does not have.
type ArgumentValue struct {
	// Kind says which of the other fields holds the value.
	Kind ArgumentKind
	// String is the value of an [ArgumentString].
	String string
	// Int64 is the value of an [ArgumentInt64].
	Int64 int64
	// Bool is the value of an [ArgumentBool].
	Bool bool
}

// An ArgumentKind is the JSON type of an [ArgumentValue].
type ArgumentKind uint8

const (
	// ArgumentAbsent is an argument the JSON object does not have.
	ArgumentAbsent ArgumentKind = iota
	// ArgumentString is a JSON string.
	ArgumentString
	// ArgumentInt64 is a JSON number that is an integer within int64.
	ArgumentInt64
	// ArgumentBool is true or false.
	ArgumentBool
)

// defersArgs reports whether a reads a call's arguments only through
// AccessRequest.Arguments.
func defersArgs(a Authorizer) bool {
	d, ok := a.(ArgsDeferrer)
	return ok && d.DefersArgs()
}

// recorderOf returns a's OutcomeRecorder when it records outcomes.
func recorderOf(a Authorizer) (OutcomeRecorder, bool) {
	rec, ok := a.(OutcomeRecorder)
	if !ok {
		return nil, false
	}
	if q, ok := a.(OutcomeSkipper); ok && !q.RecordsOutcomes() {
		return nil, false
	}
	return rec, true
}

// WithAuthorizer makes every call the Registry runs subject to a's
// decision (see [Authorizer]). Nil, the default, lets every call run.
func WithAuthorizer(a Authorizer) RegistryOption {
	return func(c *registryConfig) { c.authorizer = a }
}

// authorize consults the registry's Authorizer about req, a checked
// call, setting req.Args unless the Authorizer defers them. It returns a
// denied Result and its error when the call is refused.
func (r *Registry) authorize(ctx context.Context, e *entry, req *AccessRequest) (res Result, err error, refused bool) {
	defer func() {
		if v := recover(); v != nil {
			p := r.recovered(ctx, e, v)
			res = errorResult(KindDenied, fmt.Sprintf("call to tool %q was refused: its permission check failed (correlation id %s)", e.name, p.CorrelationID))
			err, refused = fmt.Errorf("%w: %w", ErrDenied, p), true
		}
	}()
	if !r.cfg.defersArgs {
		args, aerr := req.call.checkedArgs()
		if aerr != nil {
			return errorResult(KindDenied, fmt.Sprintf("call to tool %q was refused: its arguments could not be shown to the permission check", e.name)),
				fmt.Errorf("%w: encoding checked arguments: %w", ErrDenied, aerr), true
		}
		req.Args = args
	}
	derr := r.cfg.authorizer.Authorize(ctx, *req)
	if derr == nil {
		return Result{}, nil, false
	}
	res = errorResult(KindDenied, derr.Error())
	var m interface{ ResultMetadata() map[string]any }
	if errors.As(derr, &m) {
		res.Metadata = m.ResultMetadata()
	}
	if errors.Is(derr, ErrDenied) {
		return res, derr, true
	}
	return res, fmt.Errorf("%w: %w", ErrDenied, derr), true
}

// recordOutcome tells an OutcomeRecorder how a call ended.
func (r *Registry) recordOutcome(ctx context.Context, e *entry, rec OutcomeRecorder, req AccessRequest, res Result, took time.Duration) {
	defer func() {
		if v := recover(); v != nil {
			r.recovered(ctx, e, v)
		}
	}()
	rec.Outcome(ctx, req, res, took)
}
