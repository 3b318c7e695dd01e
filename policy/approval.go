package policy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/x/exp/ast"

	"github.com/miniopenclaw/tool"
)

// DefaultApprovalTTL is how long an approval request, and a granted
// approval, stays valid unless [WithApprovalTTL] says otherwise.
const DefaultApprovalTTL = 10 * time.Minute

// maxApprovals bounds the records a [MemoryApprovalStore] keeps.
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
//
// The request is kept in the store before Approve is called, pending,
// and req.ID is its id: the same each time the call is made while it
// waits, and the one a person answers elsewhere ([Authorizer.Answer],
// clawtool approvals). An answer Approve gives at once is kept and used
// at once, answered by "the approver", so no request is left for a
// later answer to turn into an approval nobody gave; an answer given
// elsewhere meanwhile stands instead.
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

// newApprovalID returns a fresh random approval id.
func newApprovalID() string {
	var id [12]byte
	_, _ = rand.Read(id[:])
	return hex.EncodeToString(id[:])
}

// ask handles a call the policies say needs an approval. It returns nil
// when the call may run: an answer approving exactly this call was kept
// and is now used up, or the Approver approves it now.
func (a *Authorizer) ask(ctx context.Context, d *Decision, an tool.Annotations) error {
	now := a.now()
	rec, ok, err := a.consume(ctx, d.Digest, now)
	if err != nil {
		return a.storeFailed(ctx, d, err)
	}
	if ok {
		d.Approval, d.answer = rec.ID, &rec
		if rec.State == ApprovalApproved {
			if err := a.answerStands(ctx, d, rec); err != nil {
				return err
			}
			d.Effect, d.Approved = Allow, true
			return nil
		}
		d.Effect = Deny
		d.Reason = deniedBy(d.Tool, rec)
		return &DeniedError{Decision: *d, msg: d.Reason, meta: map[string]any{"effect": string(Deny), "approval": rec}}
	}
	req := ApprovalRequest{
		ID: newApprovalID(), Principal: d.Principal.ID, Tool: d.Tool, Args: d.Args,
		Digest: d.Digest, Policies: d.Policies, Expires: now.Add(a.approvalTTL),
	}
	if a.approver == nil {
		return a.pend(ctx, d, req, an, now)
	}
	// The request is kept before the approver is asked, so that the id
	// it is given is the one a person answers elsewhere too (a host's
	// own UI, clawtool approvals), however often the call is made while
	// it waits.
	kept, err := a.put(ctx, d, req, an, now)
	if err != nil {
		return a.storeFailed(ctx, d, err)
	}
	req.ID, req.Expires = kept.ID, kept.Expires
	ok, err = a.approver.Approve(ctx, req)
	if errors.Is(err, ErrApprovalUnavailable) {
		if a.logger != nil {
			a.logger.InfoContext(ctx, "no approver could be asked; the call waits for a grant", "tool", d.Tool, "reason", err)
		}
		return a.waiting(d, req)
	}
	if err != nil && a.logger != nil {
		a.logger.ErrorContext(ctx, "approver failed", "tool", d.Tool, "error", err)
	}
	// The approver decided now: its answer is kept and used at once, so
	// that the request does not linger for someone to answer later. An
	// answer given meanwhile from elsewhere stands instead.
	ans := ApprovalAnswer{Approved: err == nil && ok, By: byApprover}
	if serr := a.seal(kept, &ans, now); serr != nil {
		return a.storeFailed(ctx, d, serr)
	}
	if _, err := a.store.Answer(ctx, req.ID, ans, now); err != nil && !errors.Is(err, ErrApprovalAnswered) {
		return a.storeFailed(ctx, d, err)
	}
	used, found, cerr := a.consume(ctx, d.Digest, now)
	if cerr != nil {
		return a.storeFailed(ctx, d, cerr)
	}
	d.Approval = req.ID
	if found && used.State == ApprovalApproved {
		if err := a.answerStands(ctx, d, used); err != nil {
			return err
		}
		d.Effect, d.Approved, d.Approval = Allow, true, used.ID
		return nil
	}
	d.Effect = Deny
	switch {
	case found && used.AnsweredBy != byApprover:
		d.Approval, d.answer = used.ID, &used
		d.Reason = deniedBy(d.Tool, used)
	case err != nil:
		d.Reason = fmt.Sprintf("call to tool %q needs a person's approval and none could be obtained; do not retry it unchanged", d.Tool)
	case !found:
		// Another call with the same digest used the answer first.
		d.Reason = fmt.Sprintf("call to tool %q was approved, and the approval was used by an identical call made at the same time; make the call again to ask anew", d.Tool)
	default:
		d.Reason = fmt.Sprintf("call to tool %q was not approved by the person asked; do not retry it unchanged", d.Tool)
	}
	return &DeniedError{Decision: *d, msg: d.Reason, meta: map[string]any{"effect": string(Deny)}}
}

// The names the Authorizer answers under itself: an [Approver]'s answer,
// used at once, and the host's [Authorizer.Grant]. No principal so named
// answers (it would read as the host's answer).
const (
	byApprover = "the approver"
	byHost     = "the host"
)

// answerStands judges again, under the policies in force now, whether
// the answerer of rec, the approved answer the call d has just used, may
// give it: a reload may have forbidden the answerer, or taken its permit
// away, since it answered. It returns nil when the answer stands, and
// else the refusal of the call (the answer is used up: the call asks
// anew when it is made again). An answer with no answerer kept is the
// host's own when it is named as the host's, and is otherwise judged as
// its id alone, without roles or attributes (a record answered before
// stores kept the answerer): a policy that permits by role refuses it.
func (a *Authorizer) answerStands(ctx context.Context, d *Decision, rec ApprovalRecord) error {
	if err := a.checkSeal(rec, a.now()); err != nil {
		return a.answerFell(ctx, d, rec, err.Error())
	}
	// The person approved what the record showed them; the digest binds
	// the answer to the call, not to what was shown. A record whose
	// arguments or preview are not the call's was rewritten in the store
	// after the call asked (TestApprovalShownArgumentsAreTheCalls).
	if len(rec.Args) > 0 && !bytes.Equal(rec.Args, d.Args) || rec.Preview != preview(d.Args) {
		return a.answerFell(ctx, d, rec, "the arguments the person was shown are not the call's (the request was rewritten in the approval store after the call asked)")
	}
	var who Principal
	switch {
	case rec.Answerer != nil && rec.Answerer.ID == rec.AnsweredBy:
		who = rec.Answerer.principal()
	case rec.Answerer != nil:
		return a.answerFell(ctx, d, rec, fmt.Sprintf("the record names %q as its answerer but %q as who answered", printable(rec.Answerer.ID), printable(rec.AnsweredBy)))
	case rec.AnsweredBy == byHost || rec.AnsweredBy == byApprover:
		return nil
	default:
		who = Principal{ID: rec.AnsweredBy}
	}
	if err := a.mayAnswer(&carried{p: who, ok: true}, rec); err != nil {
		_, why, _ := strings.Cut(err.Error(), ErrNotApprover.Error()+": ")
		return a.answerFell(ctx, d, rec, "the policies in force no longer let them approve it ("+why+")")
	}
	return nil
}

// answerFell refuses the call d whose approval rec no longer stands, for
// why, and ends this process's claim of it: the call did not run.
func (a *Authorizer) answerFell(ctx context.Context, d *Decision, rec ApprovalRecord, why string) error {
	if a.claimer {
		a.complete(ctx, d.Digest)
	}
	d.Effect, d.Approved = Deny, false
	d.Reason = fmt.Sprintf("call to tool %q was approved by %s, but the approval does not stand: %s; it is withdrawn: make the call again to ask anew", d.Tool, orAnonymousID(rec.AnsweredBy), why)
	return &DeniedError{Decision: *d, msg: d.Reason, meta: map[string]any{"effect": string(Deny), "approval": rec}}
}

// deniedBy is what the model reads of a call a person denied.
func deniedBy(name string, rec ApprovalRecord) string {
	who := rec.AnsweredBy
	if who == "" {
		who = "the person asked"
	}
	msg := fmt.Sprintf("call to tool %q was denied by %s", name, who)
	if rec.Note != "" {
		msg += ": " + rec.Note
	}
	return msg + "; do not retry it unchanged"
}

// storeFailed refuses a call whose approval could not be looked up or
// kept: the store is full, corrupt or unreadable (fail closed).
func (a *Authorizer) storeFailed(ctx context.Context, d *Decision, err error) error {
	if a.logger != nil {
		a.logger.ErrorContext(ctx, "approval store failed", "tool", d.Tool, "error", err)
	}
	d.Effect = Deny
	switch {
	case errors.Is(err, ErrApprovalQuota):
		d.Reason = fmt.Sprintf("call to tool %q needs a person's approval, and %v; wait for answers before asking more", d.Tool, err)
	case errors.Is(err, ErrApprovalTooLarge) && len(d.Args) > MaxApprovalArgs:
		d.Reason = fmt.Sprintf("call to tool %q needs a person's approval, and its arguments are %d bytes, more than the %d a person is asked to approve (MaxApprovalArgs); the call was refused: make it with smaller arguments", d.Tool, len(d.Args), MaxApprovalArgs)
	case errors.Is(err, ErrApprovalStoreFull):
		d.Reason = fmt.Sprintf("call to tool %q needs a person's approval, and too many requests are waiting; try again later", d.Tool)
	default:
		d.Reason = fmt.Sprintf("call to tool %q needs a person's approval, and the approval store failed, so the call was refused: %v", d.Tool, err)
	}
	return &DeniedError{Decision: *d, msg: d.Reason, meta: map[string]any{"effect": string(Ask)}}
}

// askingReason returns the first asking policy's @reason, or the
// generic message.
func (a *Authorizer) askingReason(d *Decision) string {
	c := a.set.Load()
	for _, id := range d.Policies {
		if r := c.byID[cedar.PolicyID(id)]; r != nil && r.reason != "" {
			return r.reason
		}
	}
	return d.Reason
}

// pend keeps req waiting for an answer and returns the refusal that
// carries it. A request already waiting for the same call is returned
// instead of a new one.
func (a *Authorizer) pend(ctx context.Context, d *Decision, req ApprovalRequest, an tool.Annotations, now time.Time) error {
	rec, err := a.put(ctx, d, req, an, now)
	if err != nil {
		return a.storeFailed(ctx, d, err)
	}
	req.ID, req.Expires = rec.ID, rec.Expires
	return a.waiting(d, req)
}

// put keeps req pending in the store, or returns the request already
// waiting for the same call.
func (a *Authorizer) put(ctx context.Context, d *Decision, req ApprovalRequest, an tool.Annotations, now time.Time) (ApprovalRecord, error) {
	if err := CheckApprovalArgs(req.Args); err != nil {
		return ApprovalRecord{}, err
	}
	if err := a.quota(ctx, req, now); err != nil {
		return ApprovalRecord{}, err
	}
	r := ApprovalRecord{
		ID: req.ID, State: ApprovalPending, Principal: req.Principal, Tool: req.Tool, Annotations: an,
		Digest: req.Digest, Preview: preview(req.Args), Args: req.Args, Policies: req.Policies,
		Reason: a.askingReason(d), Created: now, Expires: req.Expires, TTL: a.approvalTTL,
	}
	if err := a.sealRequest(&r); err != nil {
		return ApprovalRecord{}, err
	}
	rec, err := a.store.Put(ctx, r, now)
	if err == nil {
		d.Reason = rec.Reason // the audit record says why it asked, as the request does
	}
	return rec, err
}

// quota returns an error wrapping ErrApprovalQuota when req would be a
// new request of a principal whose requests already wait as many as
// WithMaxPendingApprovals allows; a request waiting for the same call is
// not new (Put returns it). An error reading the store is returned too:
// the call is refused (fail closed).
func (a *Authorizer) quota(ctx context.Context, req ApprovalRequest, now time.Time) error {
	limit := a.maxPending
	if limit == 0 {
		limit = DefaultMaxPendingApprovals
	}
	if limit < 0 {
		return nil
	}
	pending, err := a.store.Pending(ctx, now)
	if err != nil {
		return err
	}
	n := 0
	for _, r := range pending {
		if r.Digest == req.Digest {
			return nil
		}
		if r.Principal == req.Principal {
			n++
		}
	}
	if n >= limit {
		return fmt.Errorf("%w: %d requests of %s wait for an answer, as many as one principal may keep", ErrApprovalQuota, n, orAnonymousID(req.Principal))
	}
	return nil
}

// orAnonymousID names the anonymous principal in a message.
func orAnonymousID(id string) string {
	if id == "" {
		return "the anonymous caller"
	}
	return id
}

// waiting returns the refusal of a call whose request req waits.
func (a *Authorizer) waiting(d *Decision, req ApprovalRequest) error {
	d.Approval = req.ID
	msg := fmt.Sprintf("call to tool %q needs a person's approval; approval request %s was made. Once it is approved, make the same call again with the same arguments; a changed call needs a new approval", d.Tool, req.ID)
	if a.approvalHint != nil {
		if hint := a.approvalHint(req); hint != "" {
			msg += ". " + hint
		}
	}
	return &DeniedError{Decision: *d, msg: msg, meta: map[string]any{"effect": string(Ask), "approval_request": req}}
}

// Pending returns the approval request with the given id if it is
// waiting and unexpired. Its Args are nil for a record written before
// stores kept the whole arguments.
func (a *Authorizer) Pending(id string) (ApprovalRequest, bool) {
	r, err := a.store.Get(context.Background(), id, a.now())
	if err != nil || r.State != ApprovalPending {
		return ApprovalRequest{}, false
	}
	return ApprovalRequest{ID: r.ID, Principal: r.Principal, Tool: r.Tool, Args: r.Args, Digest: r.Digest, Policies: r.Policies, Expires: r.Expires}, true
}

// Grant approves the pending request id, as the host, without asking the
// policies who may approve (see [Authorizer.Answer] for that): the call
// it describes, and only that call, may then run once before the
// approval expires. It returns an error wrapping [ErrUnknownApproval] for
// an id that is not pending (already granted, say; that error then also
// wraps [ErrApprovalAnswered]) and [ErrExpiredApproval] for one that
// expired.
func (a *Authorizer) Grant(id string) error {
	ctx, now := context.Background(), a.now()
	ans := ApprovalAnswer{Approved: true, By: byHost}
	if len(a.approvalKeys) > 0 {
		rec, err := a.store.Get(ctx, id, now)
		if err != nil {
			return fmt.Errorf("grant %q: %w", id, err)
		}
		if err := a.seal(rec, &ans, now); err != nil {
			return fmt.Errorf("grant %q: the answer cannot be sealed: %w", id, err)
		}
	}
	_, err := a.store.Answer(ctx, id, ans, now)
	if errors.Is(err, ErrApprovalAnswered) {
		return fmt.Errorf("grant %q: %w: %w", id, ErrUnknownApproval, err)
	}
	if err != nil {
		return fmt.Errorf("grant %q: %w", id, err)
	}
	return nil
}

// The actions that decide who may answer an approval request: approve,
// for a request another principal made, and approveOwn, for one's own.
var (
	approveAction    = cedar.NewEntityUID("Action", "approve")
	approveOwnAction = cedar.NewEntityUID("Action", "approveOwn")
)

// ErrApprovalQuota is wrapped by the reason of a call refused because its
// principal's calls keep as many approval requests waiting as
// [WithMaxPendingApprovals] allows.
var ErrApprovalQuota = errors.New("too many approval requests of this principal are waiting")

// ErrNotApprover is wrapped by the error of [Authorizer.Answer] when the
// policies do not let the principal answer the request.
var ErrNotApprover = errors.New("not permitted to answer this approval request")

// Answer answers the pending approval request id, approving or denying
// it, as the principal in ctx, when the policies let that principal
// answer it (see [Authorizer.MayAnswer]). Its answer is kept in the
// store; the call the request is for then runs once, when approved, or
// is told who denied it and note, when denied, the next time it is
// made. A request whose answer was used by a process that died before
// recording that the call ran ([ApprovalRecord.Interrupted], in a store
// that claims, [ApprovalClaimer]) is answered again the same way: the
// person decides whether the call, which may or may not have run, runs
// once more. The errors are the store's ([ErrUnknownApproval],
// [ErrExpiredApproval], [ErrApprovalAnswered] when another answer came
// first) and [ErrNotApprover]'s.
func (a *Authorizer) Answer(ctx context.Context, id string, approve bool, note string) (ApprovalRecord, error) {
	now := a.now()
	rec, err := a.store.Get(ctx, id, now)
	if err != nil {
		return rec, err
	}
	c, claims := a.store.(ApprovalClaimer)
	rearm := claims && rec.Interrupted()
	if rec.State != ApprovalPending && !rearm {
		return rec, fmt.Errorf("approval %s: %w (%s by %s)", id, ErrApprovalAnswered, rec.State, rec.AnsweredBy)
	}
	if err := a.MayAnswer(ctx, rec); err != nil {
		return rec, err
	}
	// What the person was shown must be what was asked: a store others
	// may write could show other arguments than those the digest binds.
	if err := a.VerifyRequest(rec); err != nil {
		return rec, fmt.Errorf("approval %s: not answered: %w", id, err)
	}
	who := a.subject(ctx)
	ans := ApprovalAnswer{Approved: approve, By: who.p.ID, Note: note, Answerer: &ApprovalAnswerer{ID: who.p.ID, Roles: who.p.Roles, Attrs: who.p.Attrs}}
	if b, err := json.Marshal(ans.Answerer); err != nil || len(b) > MaxApprovalAnswerer {
		return rec, fmt.Errorf("approval %s: %w: %s's roles and attributes are %d bytes, more than the %d an answer keeps to be judged again when it is used (MaxApprovalAnswerer)", id, ErrNotApprover, who.p.ID, len(b), MaxApprovalAnswerer)
	}
	if err := a.seal(rec, &ans, now); err != nil {
		return rec, fmt.Errorf("approval %s: the answer cannot be sealed, so it is not given: %w", id, err)
	}
	if rearm {
		return c.Rearm(ctx, id, ans, now)
	}
	return a.store.Answer(ctx, id, ans, now)
}

// MayAnswer returns nil when the policies let the principal in ctx
// answer rec, and an error wrapping [ErrNotApprover] saying why not.
//
// The request is decided by Cedar with principal the answering User,
// action Action::"approve" (or Action::"approveOwn" when the principal
// is the one who asked: no one approves their own call unless a policy
// says so), resource the Tool::"name" of the call, with its
// annotations, and context { requester: the id of who asked, now, hour }.
// The call's arguments are not in the context: a policy that reads
// context.args fails, which refuses. Only the policies whose action
// scope names that action decide (action == Action::"approve", or in a
// list holding it), and the forbids written for any action that do not
// read the context: it is permitted when such a permit applies and no
// such forbid applies, nor any such policy fails. A permit written for
// any action, such as permit (principal, action, resource), was written
// for calls and decides no answer, so policies written before approvals
// existed make no one an approver; a forbid written for any action, such
// as forbid (principal in Role::"suspended", action, resource), forbids
// answering too, unless it reads the context (it was written for calls'
// arguments, which an answer's context lacks). An asking permit never permits
// answering. The anonymous principal never may, nor a principal one of
// whose attributes the policies cannot read (see [Principal]).
func (a *Authorizer) MayAnswer(ctx context.Context, rec ApprovalRecord) error {
	return a.mayAnswer(a.subject(ctx), rec)
}

// mayAnswer is MayAnswer for the principal who.
func (a *Authorizer) mayAnswer(who *carried, rec ApprovalRecord) error {
	if !who.ok || who.p.ID == "" {
		return fmt.Errorf("approval %s: %w: the anonymous principal (or one with an empty id) answers nothing", rec.ID, ErrNotApprover)
	}
	// An attribute the policies cannot read would be left out of the
	// entity and read as absent, so a forbid guarded by has would not
	// apply: such a principal answers nothing, as it calls nothing.
	if who.build(); who.refused != nil {
		return fmt.Errorf("approval %s: %w: %s", rec.ID, ErrNotApprover, strings.TrimPrefix(who.refused.reason, "the call was refused: "))
	}
	if who.p.ID == byHost || who.p.ID == byApprover {
		return fmt.Errorf("approval %s: %w: the name %q is the one the host's own answers carry; a principal so named answers nothing", rec.ID, ErrNotApprover, who.p.ID)
	}
	action := approveAction
	if who.p.ID == rec.Principal {
		action = approveOwnAction
	}
	c := a.set.Load()
	te := a.toolEntity(rec.Tool, rec.Annotations)
	ents := &entities{user: who.userEntity(), tool: te.entity, roles: a.roles}
	now := a.now()
	cr := cedar.Request{
		Principal: ents.user.UID, Action: action, Resource: te.entity.UID,
		Context: cedar.NewRecord(cedar.RecordMap{
			"requester": cedar.String(rec.Principal),
			"now":       cedar.NewDatetime(now),
			"hour":      cedar.Long(now.UTC().Hour()),
		}),
	}
	// Only the policies that name the action decide: a permit written
	// for any action was written for calls. A forbid written for any
	// action forbids answers too (a suspended principal answers nothing),
	// unless it reads the context, which an answer's lacks (the call's
	// arguments): it was written for calls.
	var rules ruleSet
	for _, r := range c.forTool(rec.Tool) {
		_, anyAction := r.ast.Action.(ast.ScopeTypeAll)
		if namesAction(r.ast.Action, action) || r.forbid && anyAction && !r.context {
			rules = append(rules, r)
		}
	}
	dec, diag := cedar.Authorize(rules, ents, cr)
	refuse := func(why string) error {
		return fmt.Errorf("approval %s: %w: %s", rec.ID, ErrNotApprover, why)
	}
	if len(diag.Errors) > 0 {
		e := diag.Errors[0]
		return refuse(fmt.Sprintf("policy %s could not be evaluated: %s", e.PolicyID, e.Message))
	}
	if dec == cedar.Deny && len(diag.Reasons) > 0 {
		r := c.byID[diag.Reasons[0].PolicyID]
		why := fmt.Sprintf("forbidden by policy %s", diag.Reasons[0].PolicyID)
		if r != nil && r.reason != "" {
			why += ": " + r.reason
		}
		return refuse(why)
	}
	if dec == cedar.Allow {
		for _, reason := range diag.Reasons {
			if r := c.byID[reason.PolicyID]; r != nil && !r.ask && !r.forbid {
				return nil
			}
		}
	}
	return refuse(fmt.Sprintf("no permit names %s for %s on Tool::%q", action, who.p.ID, rec.Tool))
}

// namesAction reports whether an action scope names action itself, not
// only any action.
func namesAction(scope ast.IsActionScopeNode, action cedar.EntityUID) bool {
	switch s := scope.(type) {
	case ast.ScopeTypeEq:
		return s.Entity == action
	case ast.ScopeTypeIn:
		return s.Entity == action
	case ast.ScopeTypeInSet:
		return slices.Contains(s.Entities, action)
	}
	return false
}
