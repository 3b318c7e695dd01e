package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/natstool"
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
	rf.policy.approvalsNATS = rf.nats.url
	rf.policy.forward = true
	rf.nats.headers = rf.policy.callHeaders()
}

// callHeaders returns the function that makes imported NATS tools send
// the principal of each call: the one its context carries, else --as.
// This is the client side: with --nats and no --policy there is no
// Authorizer in this process whose policy.WithDefaultPrincipal could
// supply --as, so the default is applied here, to the outgoing header
// only (the worker decides).
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

// natsApprovals is the approval store of a command given --nats and
// --policy: the JetStream bucket every worker and every clawtool
// approvals --nats shares (natstool.Approvals). It connects on first
// use, and again after a failure; while it cannot, every method fails,
// so a call that needs an approval is refused, saying why (fail closed).
type natsApprovals struct {
	url string
	mu  sync.Mutex
	nc  *nats.Conn
	s   *natstool.Approvals
}

func (n *natsApprovals) store(ctx context.Context) (*natstool.Approvals, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.s != nil {
		return n.s, nil
	}
	nc, err := nats.Connect(n.url, nats.Name("clawtool approvals"), nats.Timeout(5*time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("approvals: NATS %s: %w", n.url, err)
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := natstool.OpenApprovals(octx, nc, nil)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("approvals: NATS %s (the server needs JetStream): %w", n.url, err)
	}
	n.nc, n.s = nc, s
	return s, nil
}

// close closes the connection, if one was made.
func (n *natsApprovals) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nc != nil {
		n.nc.Close()
		n.nc, n.s = nil, nil
	}
}

func (n *natsApprovals) Put(ctx context.Context, r policy.ApprovalRecord, now time.Time) (policy.ApprovalRecord, error) {
	s, err := n.store(ctx)
	if err != nil {
		return policy.ApprovalRecord{}, err
	}
	return s.Put(ctx, r, now)
}

func (n *natsApprovals) Get(ctx context.Context, id string, now time.Time) (policy.ApprovalRecord, error) {
	s, err := n.store(ctx)
	if err != nil {
		return policy.ApprovalRecord{}, err
	}
	return s.Get(ctx, id, now)
}

func (n *natsApprovals) Pending(ctx context.Context, now time.Time) ([]policy.ApprovalRecord, error) {
	s, err := n.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.Pending(ctx, now)
}

func (n *natsApprovals) Answer(ctx context.Context, id string, a policy.ApprovalAnswer, now time.Time) (policy.ApprovalRecord, error) {
	s, err := n.store(ctx)
	if err != nil {
		return policy.ApprovalRecord{}, err
	}
	return s.Answer(ctx, id, a, now)
}

func (n *natsApprovals) Consume(ctx context.Context, digest string, now time.Time) (policy.ApprovalRecord, bool, error) {
	s, err := n.store(ctx)
	if err != nil {
		return policy.ApprovalRecord{}, false, err
	}
	return s.Consume(ctx, digest, now)
}
