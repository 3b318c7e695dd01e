package natstool

import (
	"context"
	"fmt"
	"slices"

	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"
)

// Request is a call's request message as the importer sends it and the
// worker receives it: what a signed principal claim is bound to. The
// importer puts it in the context it gives [ImportOptions.CallHeaders],
// and the worker in the context it gives [ServeOptions.CallContext];
// read it with [RequestFrom].
type Request struct {
	// Subject is the tool's subject.
	Subject string
	// Reply is the subject the result goes to.
	Reply string
	// Data is the call's arguments as sent (for a job, its message's
	// body). It must not be modified.
	Data []byte
	// Job is set for the message of a durable job: made by [Jobs.Submit],
	// [Jobs.Answer] or [Jobs.Resume] for [JobsOptions.Headers], and read
	// by a worker for [JobsOptions.Context] (Reply is then empty).
	Job bool
	// Headers are the job message's headers, besides the principal's
	// claim, that a signed claim covers (policy.SignedCall.Headers): the
	// values [WithCoveredHeaders] gave when the message was made, and
	// the values of the names in [JobsOptions.CoveredHeaders] the
	// worker received (nil for a name absent). Nil for calls, and for
	// jobs that cover none.
	Headers nats.Header
}

type requestKey struct{}

// withRequest returns ctx carrying r.
func withRequest(ctx context.Context, r Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// WithCoveredHeaders returns ctx, the context [JobsOptions.Headers] is
// given to make a job message's headers, with h added to the headers its
// [Request] says the message carries besides the claim (a name with no
// values: absent), so that [SignedHeaders] binds their values into its
// signature. A Headers that puts headers of its own on the message, for
// a worker to act on, calls it with them before it calls the signer,
// and names them in [JobsOptions.CoveredHeaders], where the worker reads
// them for [VerifiedJobContext]. Outside a message's context it returns
// ctx unchanged.
func WithCoveredHeaders(ctx context.Context, h nats.Header) context.Context {
	r, ok := RequestFrom(ctx)
	if !ok {
		return ctx
	}
	merged := nats.Header{}
	for k, v := range r.Headers {
		merged[k] = slices.Clone(v)
	}
	for k, v := range h {
		merged[k] = slices.Clone(v)
	}
	r.Headers = merged
	return withRequest(ctx, r)
}

// RequestFrom returns the request of the call whose headers are being
// made ([ImportOptions.CallHeaders], [JobsOptions.Headers]) or read
// ([ServeOptions.CallContext], [JobsOptions.Context]); ok is false in
// any other context, such as the one [JobsOptions.Owner] or
// [JobsOptions.Headers] get to tell a job's owner.
func RequestFrom(ctx context.Context) (r Request, ok bool) {
	r, ok = ctx.Value(requestKey{}).(Request)
	return r, ok
}

// SignedHeaders returns an [ImportOptions.CallHeaders] or
// [JobsOptions.Headers] that sends the principal of each call or job, if
// any, with a signature made with s and bound to its message
// (policy.HeaderSigner.Headers): a worker that verifies with the same key
// ([VerifiedContext] for calls, [VerifiedJobContext] for jobs) decides it
// for that principal, and refuses the claim on any other message.
// Outside a message's context (the one a job's owner is told by) it
// gives the unsigned claim, as policy.Headers does, so that a job's owner
// is still its principal.
func SignedHeaders(s *policy.HeaderSigner) func(ctx context.Context) nats.Header {
	return func(ctx context.Context) nats.Header {
		r, ok := RequestFrom(ctx)
		if !ok {
			return policy.Headers(ctx)
		}
		return s.Headers(ctx, policy.SignedCall{Subject: r.Subject, Reply: r.Reply, Body: r.Data, Headers: r.Headers})
	}
}

// VerifiedContext returns a [ServeOptions.CallContext] that decides each
// call for the principal its caller claims only when the claim is signed
// with s's key for that very call (policy.HeaderSigner.FromHeaders):
// every call without a valid signature, including one that claims no
// principal, is refused as denied, saying why. It refuses jobs too:
// give a queue's jobs [VerifiedJobContext] as [JobsOptions.Context].
func VerifiedContext(s *policy.HeaderSigner) func(ctx context.Context, h nats.Header) (context.Context, error) {
	return func(ctx context.Context, h nats.Header) (context.Context, error) {
		r, ok := RequestFrom(ctx)
		if !ok || r.Job {
			return ctx, fmt.Errorf("%w: not a call (a job?): jobs are verified by natstool.VerifiedJobContext", policy.ErrPrincipalSignature)
		}
		return s.FromHeaders(ctx, policy.SignedCall{Subject: r.Subject, Reply: r.Reply, Body: r.Data}, h)
	}
}

// VerifiedJobContext returns a [JobsOptions.Context] that runs each job
// for the principal its submitter claims only when the claim is signed
// with s's key for that job's message ([SignedHeaders] as the
// submitter's [JobsOptions.Headers]); any other job is recorded as
// denied, saying why. A job waits in its queue and is delivered again
// when its worker dies, so make s with a MaxAge of at least the queue's
// TTL ([JobsOptions.TTL]) and with Repeats; the job's record keeps a job
// that is done from running again. It refuses calls. The headers of
// [JobsOptions.CoveredHeaders] must be as signed: a job message whose
// covered headers were changed, or whose signature (an older signer's)
// covers none, is refused.
func VerifiedJobContext(s *policy.HeaderSigner) func(ctx context.Context, h nats.Header) (context.Context, error) {
	return func(ctx context.Context, h nats.Header) (context.Context, error) {
		r, ok := RequestFrom(ctx)
		if !ok || !r.Job {
			return ctx, fmt.Errorf("%w: not a job: calls are verified by natstool.VerifiedContext", policy.ErrPrincipalSignature)
		}
		return s.FromHeaders(ctx, policy.SignedCall{Subject: r.Subject, Body: r.Data, Headers: r.Headers}, h)
	}
}
