package natstool

import (
	"context"
	"fmt"

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
	// Data is the call's arguments as sent. It must not be modified.
	Data []byte
}

type requestKey struct{}

// withRequest returns ctx carrying r.
func withRequest(ctx context.Context, r Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestFrom returns the request of the call whose headers are being
// made ([ImportOptions.CallHeaders]) or read ([ServeOptions.CallContext]);
// ok is false in any other context, such as that of a job
// ([JobsOptions.Headers], [JobsOptions.Context]).
func RequestFrom(ctx context.Context) (r Request, ok bool) {
	r, ok = ctx.Value(requestKey{}).(Request)
	return r, ok
}

// SignedHeaders returns an [ImportOptions.CallHeaders] that sends the
// principal of each call, if any, with a signature made with s and bound
// to the call's request (policy.HeaderSigner.Headers): a worker that
// verifies with the same key ([VerifiedContext]) decides the call for
// that principal, and refuses the claim on any other call. Outside a
// call's context (a job's, for one) it gives the unsigned claim, as
// policy.Headers does, so that a job's owner ([JobsOptions.Owner]) is
// still its principal; [VerifiedContext] refuses such a claim: signed
// claims for jobs are not made.
func SignedHeaders(s *policy.HeaderSigner) func(ctx context.Context) nats.Header {
	return func(ctx context.Context) nats.Header {
		r, ok := RequestFrom(ctx)
		if !ok {
			return policy.Headers(ctx)
		}
		return s.Headers(ctx, policy.SignedCall{Subject: r.Subject, Reply: r.Reply, Body: r.Data})
	}
}

// VerifiedContext returns a [ServeOptions.CallContext] that decides each
// call for the principal its caller claims only when the claim is signed
// with s's key for that very call (policy.HeaderSigner.FromHeaders):
// every call without a valid signature, including one that claims no
// principal, is refused as denied, saying why. Outside a call's context
// (a job's) it refuses too: jobs carry no signed claims.
func VerifiedContext(s *policy.HeaderSigner) func(ctx context.Context, h nats.Header) (context.Context, error) {
	return func(ctx context.Context, h nats.Header) (context.Context, error) {
		r, ok := RequestFrom(ctx)
		if !ok {
			return ctx, fmt.Errorf("%w: not a call (a job?): only calls carry signed claims", policy.ErrPrincipalSignature)
		}
		return s.FromHeaders(ctx, policy.SignedCall{Subject: r.Subject, Reply: r.Reply, Body: r.Data}, h)
	}
}
