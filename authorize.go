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

// An OutcomeRecorder is an [Authorizer] that also hears how each call it
// let run ended, for an audit trail: a [Registry] calls Outcome with the
// call's Result (what the model saw) and how long the call took, from the
// tool's start to its Result, once per allowed call, after the call. A
// panic in Outcome is recovered and logged.
type OutcomeRecorder interface {
	Authorizer
	Outcome(ctx context.Context, req AccessRequest, res Result, took time.Duration)
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
	// Authorizer must not modify it.
	Args json.RawMessage
}

// WithAuthorizer makes every call the Registry runs subject to a's
// decision (see [Authorizer]). Nil, the default, lets every call run.
func WithAuthorizer(a Authorizer) RegistryOption {
	return func(c *registryConfig) { c.authorizer = a }
}

// authorize consults the registry's Authorizer about a checked call.
// It returns a denied Result and its error when the call is refused.
func (r *Registry) authorize(ctx context.Context, e *entry, c pendingCall) (req AccessRequest, res Result, err error, refused bool) {
	defer func() {
		if v := recover(); v != nil {
			p := r.recovered(ctx, e, v)
			res = errorResult(KindDenied, fmt.Sprintf("call to tool %q was refused: its permission check failed (correlation id %s)", e.name, p.CorrelationID))
			err, refused = fmt.Errorf("%w: %w", ErrDenied, p), true
			req = AccessRequest{}
		}
	}()
	args, aerr := c.checkedArgs()
	if aerr != nil {
		return req, errorResult(KindDenied, fmt.Sprintf("call to tool %q was refused: its arguments could not be shown to the permission check", e.name)),
			fmt.Errorf("%w: encoding checked arguments: %w", ErrDenied, aerr), true
	}
	req = AccessRequest{Tool: e.tool, Name: e.name, Options: e.opts, Args: args}
	derr := r.cfg.authorizer.Authorize(ctx, req)
	if derr == nil {
		return req, Result{}, nil, false
	}
	res = errorResult(KindDenied, derr.Error())
	var m interface{ ResultMetadata() map[string]any }
	if errors.As(derr, &m) {
		res.Metadata = m.ResultMetadata()
	}
	if errors.Is(derr, ErrDenied) {
		return req, res, derr, true
	}
	return req, res, fmt.Errorf("%w: %w", ErrDenied, derr), true
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
