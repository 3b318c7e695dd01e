package main

import (
	"context"

	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"
)

// The principal over NATS: a command that imports tools with --nats sends
// the principal of each call (--as, or the one its context carries) in
// the policy.HeaderPrincipal header, and a worker started with --policy
// decides each call for the principal that header names, falling back to
// its own --as, then to the anonymous principal.
//
// Trust: the worker believes the header. Anyone who can publish on the
// worker's subjects can claim any principal, so run workers with --policy
// only on a NATS server that authenticates every connection and lets only
// trusted accounts publish on the service's subjects; the NATS server
// `clawtool nats-server` runs has no authentication and is for one machine.

// forwardPrincipal prepares the flags for calls that leave the process:
// with --nats, --as is allowed without --policy, and the imported tools
// send the caller's principal.
func (rf *registryFlags) forwardPrincipal() {
	if rf.nats.url == "" {
		return
	}
	rf.policy.forward = true
	rf.nats.headers = rf.policy.callHeaders()
}

// callHeaders returns the function that makes imported NATS tools send
// the principal of each call: the one its context carries, else --as.
func (pf *policyFlags) callHeaders() func(context.Context) nats.Header {
	as, hasAs, err := pf.principal()
	if err != nil {
		hasAs = false // reported when the registry is built
	}
	return func(ctx context.Context) nats.Header {
		if _, ok := policy.PrincipalFrom(ctx); !ok && hasAs {
			ctx = policy.WithPrincipal(ctx, as)
		}
		return policy.Headers(ctx)
	}
}

// callContext returns the function that makes a worker with --policy
// decide each call for the principal its caller sent (see above for why
// that needs an authenticated NATS connection), nil without --policy.
func (pf *policyFlags) callContext() func(context.Context, nats.Header) (context.Context, error) {
	if pf.loaded == nil {
		return nil
	}
	return func(ctx context.Context, h nats.Header) (context.Context, error) {
		return policy.FromHeaders(ctx, h)
	}
}
