package policy

import (
	"context"
	"errors"
	"fmt"
)

// ErrApprovalUsed is wrapped by the error of [Authorizer.Answered] for a
// request whose answer was already used. (A [MemoryApprovalStore] drops
// used records: there the id is unknown, [ErrUnknownApproval].)
var ErrApprovalUsed = errors.New("approval already used")

// PendingApproval returns the id of the approval request the refused
// call waits for, when the policies asked for an approval and the
// request was kept; "" for any other refusal. A program that runs calls
// for a model (an agent loop) reads it to pause until the request is
// answered instead of handing the refusal to the model.
func (e *DeniedError) PendingApproval() string {
	if req, ok := e.meta["approval_request"].(ApprovalRequest); ok {
		return req.ID
	}
	return ""
}

// Answered reports whether the approval request id has been answered,
// approved or denied, and its answer is waiting to be used by the call
// it is for: the call, made again unchanged by the same principal, then
// runs once (approved) or is told who denied it (denied). It returns
// false while the request is pending, and an error for a request whose
// answer cannot be used: unknown (also a forged id) or gone, expired, or
// already used, which says when it was used (a saved agent run resumed a
// second time gets this error). A store that fails is an error too.
func (a *Authorizer) Answered(ctx context.Context, id string) (bool, error) {
	rec, err := a.store.Get(ctx, id, a.now())
	if err != nil {
		return false, err
	}
	switch {
	case rec.State == ApprovalPending:
		return false, nil
	case rec.Interrupted():
		return false, fmt.Errorf("%s: %w", interruptedMessage(rec), ErrApprovalUsed)
	case !rec.Used.IsZero():
		return false, fmt.Errorf("approval %s: %w: its answer (%s by %s) was used at %s, by the call it was for", id, ErrApprovalUsed, rec.State, rec.AnsweredBy, rec.Used.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return true, nil
}
