package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultApprovalTTL is how long an approval request, and a granted
// approval, stays valid unless [WithApprovalTTL] says otherwise.
const DefaultApprovalTTL = 10 * time.Minute

// maxApprovals bounds the pending requests and unused grants kept.
const maxApprovals = 10000

// An ApprovalRequest asks a person to approve one call. It is bound to
// the call by Digest: an approval granted for it lets exactly that call
// (same principal, tool and arguments) run, once, before Expires.
type ApprovalRequest struct {
	ID        string          `json:"id"`
	Principal string          `json:"principal"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Digest    string          `json:"digest"`
	Policies  []string        `json:"policies"`
	Expires   time.Time       `json:"expires"`
}

// An Approver answers approval requests as they arise: a terminal
// prompt, an MCP elicitation to the client, a callback. Approve returns
// true to let the call run now, and false when the person asked refused
// it. An error wrapping [ErrApprovalUnavailable] means no one could be
// asked (the client cannot be asked, the person did not answer in time):
// the call is then refused with an approval request, as without an
// Approver, which the host may still grant. Any other error refuses the
// call and is logged; the model is told only that no approval was
// obtained.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (bool, error)
}

// ApproverFunc adapts a function to [Approver].
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (bool, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (bool, error) {
	return f(ctx, req)
}

// ErrApprovalUnavailable is wrapped by an [Approver] that could not ask
// anyone about a call.
var ErrApprovalUnavailable = errors.New("no one could be asked to approve the call")

// Errors of [Authorizer.Grant].
var (
	ErrUnknownApproval = errors.New("unknown approval request")
	ErrExpiredApproval = errors.New("approval request expired")
)

type approvals struct {
	ttl     time.Duration
	mu      sync.Mutex
	pending map[string]ApprovalRequest // by ID
	granted map[string]time.Time       // digest → expiry
}

func newApprovals() *approvals {
	return &approvals{ttl: DefaultApprovalTTL, pending: map[string]ApprovalRequest{}, granted: map[string]time.Time{}}
}

// consume uses up a granted, unexpired approval for digest.
func (s *approvals) consume(digest string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.granted[digest]
	if !ok {
		return false
	}
	delete(s.granted, digest)
	return now.Before(exp)
}

func (s *approvals) sweepLocked(now time.Time) {
	for id, r := range s.pending {
		if !now.Before(r.Expires) {
			delete(s.pending, id)
		}
	}
	for d, exp := range s.granted {
		if !now.Before(exp) {
			delete(s.granted, d)
		}
	}
}

// ask handles a call the policies say needs an approval. It returns nil
// when the call may run.
func (a *Authorizer) ask(ctx context.Context, d *Decision) error {
	now := a.now()
	if a.approvals.consume(d.Digest, now) {
		d.Effect, d.Approved = Allow, true
		return nil
	}
	var id [12]byte
	_, _ = rand.Read(id[:])
	req := ApprovalRequest{
		ID: hex.EncodeToString(id[:]), Principal: d.Principal.ID, Tool: d.Tool, Args: d.Args,
		Digest: d.Digest, Policies: d.Policies, Expires: now.Add(a.approvals.ttl),
	}
	if a.approver != nil {
		ok, err := a.approver.Approve(ctx, req)
		if err == nil && ok {
			d.Effect, d.Approved = Allow, true
			return nil
		}
		if errors.Is(err, ErrApprovalUnavailable) {
			if a.logger != nil {
				a.logger.InfoContext(ctx, "no approver could be asked; the call waits for a grant", "tool", d.Tool, "reason", err)
			}
			return a.pend(d, req, now)
		}
		d.Effect = Deny
		if err != nil {
			if a.logger != nil {
				a.logger.ErrorContext(ctx, "approver failed", "tool", d.Tool, "error", err)
			}
			d.Reason = fmt.Sprintf("call to tool %q needs a person's approval and none could be obtained; do not retry it unchanged", d.Tool)
		} else {
			d.Reason = fmt.Sprintf("call to tool %q was not approved by the person asked; do not retry it unchanged", d.Tool)
		}
		return &DeniedError{Decision: *d, msg: d.Reason, meta: map[string]any{"effect": string(Deny)}}
	}
	return a.pend(d, req, now)
}

// pend keeps req waiting for a grant and returns the refusal that
// carries it.
func (a *Authorizer) pend(d *Decision, req ApprovalRequest, now time.Time) error {
	a.approvals.mu.Lock()
	a.approvals.sweepLocked(now)
	full := len(a.approvals.pending) >= maxApprovals
	if !full {
		a.approvals.pending[req.ID] = req
	}
	a.approvals.mu.Unlock()
	if full {
		d.Reason = fmt.Sprintf("call to tool %q needs a person's approval, and too many requests are waiting; try again later", d.Tool)
		return &DeniedError{Decision: *d, msg: d.Reason, meta: map[string]any{"effect": string(Ask)}}
	}
	msg := fmt.Sprintf("call to tool %q needs a person's approval; approval request %s was made. Once it is approved, make the same call again with the same arguments; a changed call needs a new approval", d.Tool, req.ID)
	return &DeniedError{Decision: *d, msg: msg, meta: map[string]any{"effect": string(Ask), "approval_request": req}}
}

// Pending returns the approval request with the given id if it is
// waiting and unexpired.
func (a *Authorizer) Pending(id string) (ApprovalRequest, bool) {
	a.approvals.mu.Lock()
	defer a.approvals.mu.Unlock()
	r, ok := a.approvals.pending[id]
	if !ok || !a.now().Before(r.Expires) {
		return ApprovalRequest{}, false
	}
	return r, true
}

// Grant approves the pending request id: the call it describes, and only
// that call, may then run once before the approval expires. It returns
// an error wrapping [ErrUnknownApproval] for an id that is not pending
// (already granted, say) and [ErrExpiredApproval] for one that expired.
func (a *Authorizer) Grant(id string) error {
	now := a.now()
	a.approvals.mu.Lock()
	defer a.approvals.mu.Unlock()
	r, ok := a.approvals.pending[id]
	if !ok {
		return fmt.Errorf("grant %q: %w", id, ErrUnknownApproval)
	}
	delete(a.approvals.pending, id)
	if !now.Before(r.Expires) {
		return fmt.Errorf("grant %q: %w", id, ErrExpiredApproval)
	}
	if len(a.approvals.granted) >= maxApprovals {
		a.approvals.sweepLocked(now)
	}
	a.approvals.granted[r.Digest] = now.Add(a.approvals.ttl)
	return nil
}
