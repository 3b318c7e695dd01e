package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miniopenclaw/tool/policy"
)

// DefaultApprovalTimeout is how long an [ElicitApprover] waits for the
// client's user unless its Timeout says otherwise.
const DefaultApprovalTimeout = 2 * time.Minute

// maxSummaryBytes bounds the arguments shown in an approval question.
const maxSummaryBytes = 500

// approvalSchema is the form an [ElicitApprover] asks the user to fill.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve",` +
	`"description":"Let this call, with exactly these arguments, run once"}},"required":["approve"]}`)

// An ElicitApprover is a [policy.Approver] that puts a call needing an
// approval to the user of the MCP client that made it, with an
// elicitation (elicitation/create): a message naming the principal (cut
// to 200 bytes), the tool and the call's arguments (cut to 500 bytes),
// control and invisible characters escaped in both, and a form with one
// boolean, approve. Give it to
// the [policy.Authorizer] of the registry a [Server] serves
// ([policy.WithApprover]).
//
// The call runs when the user accepts with approve true; the approval is
// for that call only, as every approval is (its digest binds the
// principal, the tool and the arguments), and is used at once. Accepting
// with approve false, or declining, refuses the call. When the user
// cancels, does not answer within Timeout, or the client cannot be asked
// (it did not declare the elicitation capability, the call did not come
// through this package's [Server]), Fallback is asked instead when it is
// set; else the call is refused with an approval request that the host
// may still grant ([policy.ErrApprovalUnavailable]): the isError result
// names the request, and says how to answer it when the Authorizer has
// [policy.WithApprovalHint] (clawtool serve names its approvals
// command).
//
// A 2025-11-25 session is asked with an elicitation/create request while
// the call waits. A 2026-07-28 call, which has no requests from server to
// client, is answered with the elicitation as a multi round-trip input
// request (see [RequestInput]); the client calls again with the user's
// answer, which counts only if the call is the same (principal, tool and
// arguments: the request state is the call's digest). Timeout does not
// apply there: the client holds the question.
//
// Trust: the person asked is the client's user, who may be the principal
// itself. Elicitation keeps a model from acting without its user's say;
// it does not make one user approve another's calls. For that, leave it
// out and grant requests with [policy.Authorizer.Grant].
type ElicitApprover struct {
	Timeout  time.Duration   // default DefaultApprovalTimeout
	Fallback policy.Approver // asked when the client cannot be; may be nil
}

// approvalInputID names the approval among a call's input requests.
const approvalInputID = "clawtool_approval"

// Approve implements [policy.Approver].
func (e ElicitApprover) Approve(ctx context.Context, req policy.ApprovalRequest) (bool, error) {
	if _, whole := shownArgs(req); !whole {
		return e.fallback(ctx, req, fmt.Errorf("the call's arguments are longer than the %d bytes a question shows whole (MaxApprovalArgsShown): the client's user would approve what they cannot read", MaxApprovalArgsShown))
	}
	ss := Session(ctx)
	var init *mcp.InitializeParams
	if ss != nil {
		init = ss.InitializeParams()
	}
	if init == nil || init.ProtocolVersion >= statelessVersion {
		return e.roundTrip(ctx, req)
	}
	if init.Capabilities == nil || init.Capabilities.Elicitation == nil {
		return e.fallback(ctx, req, errors.New("the client cannot be asked: it did not declare elicitation"))
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultApprovalTimeout
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := ss.Elicit(ectx, &mcp.ElicitParams{Message: approvalMessage(req), RequestedSchema: approvalSchema})
	switch {
	case err != nil && ctx.Err() != nil:
		return false, context.Cause(ctx) // the call itself ended
	case err != nil:
		return e.fallback(ctx, req, fmt.Errorf("asking the client: %w", err))
	}
	return e.answer(ctx, req, res)
}

// answer turns the user's answer into the approver's.
func (e ElicitApprover) answer(ctx context.Context, req policy.ApprovalRequest, res *mcp.ElicitResult) (bool, error) {
	switch res.Action {
	case "accept":
		ok, _ := res.Content["approve"].(bool)
		return ok, nil
	case "decline":
		return false, nil
	}
	return e.fallback(ctx, req, fmt.Errorf("the client's user answered %q", res.Action))
}

// roundTrip asks a client without a session (a 2026-07-28 call) with a
// multi round-trip request: the call is answered with the elicitation,
// and the client calls again with the user's answer. The request state
// is the call's digest, so an answer counts only for a call with the same
// principal, tool and arguments.
func (e ElicitApprover) roundTrip(ctx context.Context, req policy.ApprovalRequest) (bool, error) {
	if h := heldFrom(ctx); h != nil {
		// A plain call of a client that declared elicitation: the call
		// waits in the server for the answer, under a round that is used
		// once (mrtr.go), so a replayed retry cannot run it twice.
		res, err := h.ask(ctx, approvalInputID, &mcp.ElicitParams{Message: approvalMessage(req), RequestedSchema: approvalSchema})
		switch {
		case err != nil && ctx.Err() != nil:
			return false, context.Cause(ctx)
		case err != nil:
			return e.fallback(ctx, req, fmt.Errorf("asking the client: %w", err))
		}
		return e.answer(ctx, req, res)
	}
	slot, _ := ctx.Value(inputKey{}).(*inputSlot)
	if slot == nil {
		return e.fallback(ctx, req, errors.New("the call did not come from an MCP client"))
	}
	if res, ok := slot.responses[approvalInputID].(*mcp.ElicitResult); ok && slot.state == req.Digest {
		return e.answer(ctx, req, res)
	}
	requests := mcp.InputRequestMap{approvalInputID: &mcp.ElicitParams{Message: approvalMessage(req), RequestedSchema: approvalSchema}}
	if len(missingCapabilities(slot.ss, slot.caps, requests)) > 0 {
		return e.fallback(ctx, req, errors.New("the client cannot be asked: it did not declare elicitation"))
	}
	if err := RequestInput(ctx, requests, req.Digest); !errors.Is(err, ErrInputRequired) {
		return e.fallback(ctx, req, err)
	}
	slot.mu.Lock()
	slot.approval = req.ID
	slot.mu.Unlock()
	return false, fmt.Errorf("%w: the client was asked with a multi round-trip request", policy.ErrApprovalUnavailable)
}

func (e ElicitApprover) fallback(ctx context.Context, req policy.ApprovalRequest, why error) (bool, error) {
	if e.Fallback != nil {
		return e.Fallback.Approve(ctx, req)
	}
	return false, fmt.Errorf("%w: %v", policy.ErrApprovalUnavailable, why)
}

// approvalMessage is the question an ElicitApprover asks. The principal
// (a token's sub claim) and the arguments are escaped alike: neither may
// end the sentence and write another, or turn the text around.
func approvalMessage(req policy.ApprovalRequest) string {
	who := "the anonymous caller"
	if req.Principal != "" {
		who = graphicText(req.Principal, 200)
	}
	args, _ := shownArgs(req)
	return fmt.Sprintf("Approve a tool call? %s asks to call %q with %s. Approving lets this call, with exactly these arguments, run once.",
		who, req.Tool, args)
}

// MaxApprovalArgsShown bounds the arguments, escaped, that the question
// of an [ElicitApprover] shows. It shows them whole or does not ask: a
// question that showed the start of longer arguments would have the
// user approve what follows unread (canonical arguments sort their keys,
// so a field named "a…" full of harmless text put the rest of a call out
// of sight). Longer arguments go to Fallback, or the call is refused with
// an approval request the host may grant where they are shown.
const MaxApprovalArgsShown = 8 << 10

// shownArgs returns req's arguments as a question shows them, and
// whether that is the whole of them.
func shownArgs(req policy.ApprovalRequest) (string, bool) {
	q := strconv.QuoteToGraphic(string(req.Args))
	q = q[1 : len(q)-1]
	if len(q) > MaxApprovalArgsShown {
		return shortText(q, MaxApprovalArgsShown), false
	}
	return q, true
}

// graphicText is s with control and invisible characters escaped as Go
// escapes them, cut to n bytes (between UTF-8 sequences) with "…".
func graphicText(s string, n int) string {
	q := strconv.QuoteToGraphic(s)
	return shortText(q[1:len(q)-1], n)
}
