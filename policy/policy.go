package policy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/x/exp/ast"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy/internal/residual"
)

// An Effect is what a decision says of a call.
type Effect string

// The three effects. A call is denied unless some permit applies and no
// forbid does; it needs an approval when a permit annotated
// @effect("ask") applies (see [Authorizer]).
const (
	Allow Effect = "allow"
	Deny  Effect = "deny"
	Ask   Effect = "ask"
)

// A Decision is the answer to one call, with what led to it.
type Decision struct {
	// Effect is the answer.
	Effect Effect
	// Policies are the ids of the policies that decided: the forbids that
	// applied for Deny (or the policies that failed, or those that read
	// a number they cannot compare exactly), the asking permits for Ask,
	// the permits for Allow. It is empty when nothing applied and the
	// call was denied by default, or its arguments could not be read.
	Policies []string
	// Reason is the message for the model when the call is not allowed.
	// It is the deciding forbid's @reason annotation when it has one, else
	// a generic message; it never names policies.
	Reason string
	// Errors are the policies that could not be evaluated for this call
	// (a condition on an attribute the call lacks, or that orders a
	// string, say), each with why. Cedar skips such a policy; here any
	// policy that fails refuses the call (see [Authorizer]): when no
	// forbid applies, the Effect is Deny, Policies are those that failed
	// and Reason says that a policy could not be evaluated.
	Errors []string
	// Principal and Tool are who called what.
	Principal Principal
	Tool      string
	// Args is the canonical encoding of all the checked arguments, not
	// only those the policies read: keys sorted, no insignificant space. Args and Digest are set when the
	// decision needs them: for Ask, and for every decision when the
	// Authorizer keeps an audit log.
	Args json.RawMessage
	// Digest binds the call: a hex SHA-256 of the principal (its id, its
	// roles and its attributes), the tool (its name and its definition:
	// description, parameters, output schema and annotations) and the
	// canonical arguments. An approval is valid for this digest only, so a
	// tool replaced under the same name does not run on an approval given
	// for the one before.
	Digest string
	// Approved reports that the call was allowed by an approval.
	Approved bool
	// Approval is the id of the approval request the decision made (an
	// Ask that waits for a person) or used (a call a person approved or
	// denied, or an [Approver] approved now); empty otherwise.
	Approval string

	auditArgs json.RawMessage // the redacted arguments the audit log keeps
	answer    *ApprovalRecord // the answer the decision used, for the audit log
}

// An Option configures an [Authorizer].
type Option func(*Authorizer)

// WithRoleParents declares role inheritance: parents[r] are the roles
// role r is a member of, so that a principal holding r is also in each of
// them (principal in Role::"staff" holds for an "admin" whose role is in
// "staff"). Cycles are harmless.
func WithRoleParents(parents map[string][]string) Option {
	return func(a *Authorizer) {
		for r, ps := range parents {
			uid := cedar.NewEntityUID("Role", cedar.String(r))
			set := make([]cedar.EntityUID, len(ps))
			for i, p := range ps {
				set[i] = cedar.NewEntityUID("Role", cedar.String(p))
			}
			a.roles[uid] = cedar.Entity{UID: uid, Parents: cedar.NewEntityUIDSet(set...)}
		}
	}
}

// WithApprover sets who answers calls that need an approval. Without
// one, such a call is refused with an approval request in its result's
// Metadata["approval_request"] (an [ApprovalRequest]); once the host
// grants it with [Authorizer.Grant], the same call, unchanged, runs once.
func WithApprover(ap Approver) Option {
	return func(a *Authorizer) { a.approver = ap }
}

// WithApprovalHint adds to the refusal of a call that waits for an
// approval what hint says about req: where and how a person answers it
// (a command naming req.ID, a page), for the model, the client and its
// user to pass on. Without it the refusal names the request only.
func WithApprovalHint(hint func(req ApprovalRequest) string) Option {
	return func(a *Authorizer) { a.approvalHint = hint }
}

// WithApprovalTTL sets how long an approval request, and a granted
// approval, stays valid. The default is [DefaultApprovalTTL].
func WithApprovalTTL(d time.Duration) Option {
	return func(a *Authorizer) { a.approvalTTL = d }
}

// DefaultMaxPendingApprovals is how many approval requests one
// principal's calls may keep waiting at once unless
// [WithMaxPendingApprovals] says otherwise: an eighth of what a store
// keeps ([DefaultMaxApprovals]), so that one principal cannot fill it.
const DefaultMaxPendingApprovals = 64

// WithMaxPendingApprovals bounds the approval requests one principal's
// calls keep waiting in the store at once: a call that needs a new
// request beyond n is refused, saying so, and asks nothing (the same
// call made again still gets the request that waits for it). The
// default is [DefaultMaxPendingApprovals]; n < 0 sets no bound. The
// count is read from the store when a request would be made, so calls
// racing from several processes may pass it by the number of racers.
func WithMaxPendingApprovals(n int) Option {
	return func(a *Authorizer) { a.maxPending = n }
}

// WithApprovalStore keeps approval requests, and their answers, in s
// rather than in the process's memory ([NewMemoryApprovalStore], the
// default): with a [FileApprovalStore], a request survives a restart and
// is answered from another process ([Authorizer.Answer], clawtool
// approvals). A store that fails refuses the call that needed it, with
// the reason in the result (fail closed).
func WithApprovalStore(s ApprovalStore) Option {
	return func(a *Authorizer) { a.store = s }
}

// WithAudit records every decision [Authorizer.Authorize] makes in l.
// A call whose decision l cannot record is refused (fail closed), and
// after a failed write l takes no more records (the write may have left
// part of a line), so every later call is refused until the host opens
// the log again.
func WithAudit(l *AuditLog) Option {
	return func(a *Authorizer) { a.audit = l }
}

// WithAuditArguments makes the audit log keep each decision's arguments
// (canonical, in the record's args field), with the values of the fields
// named in secret, at any depth, replaced by the word redacted in square
// brackets. Without it the log keeps only a digest of the arguments.
func WithAuditArguments(secret ...string) Option {
	return func(a *Authorizer) {
		a.auditArgs = true
		a.secret = map[string]bool{}
		for _, s := range secret {
			a.secret[s] = true
		}
	}
}

// WithLogger logs every decision [Authorizer.Authorize] makes to l, at
// Info for allowed calls and Warn for the others.
func WithLogger(l *slog.Logger) Option {
	return func(a *Authorizer) { a.logger = l }
}

// WithPathArguments names the arguments that hold file paths (such as
// "path", "file", "dir"), at any depth. Policies see their values
// lexically cleaned: "docs/../secrets/k" is "secrets/k", "docs//a/./b" is
// "docs/a/b", and a path that climbs out of its root keeps its leading
// "../". An argument of that name that holds a list (a JSON array, at
// any depth of arrays) holds paths: each of its strings is cleaned and
// checked the same way. A path that cannot be read one way only is refused before the
// policies run, with a message saying why: one with a backslash (a
// separator to some tools, part of a name to others), a NUL byte, or
// bytes that are not UTF-8. The tool still receives the value as sent.
//
// Cleaning sees names, not files: it cannot know where a symbolic link
// leads, or whether the tool's file system ignores case. A tool that
// resolves its own paths before the call is decided ([tool.WithResolve],
// as the tools of package sandbox/workspace do) hands the policies the
// resolved path, the file it will open, and cleaning leaves that as it
// is.
func WithPathArguments(names ...string) Option {
	return func(a *Authorizer) {
		if a.paths == nil {
			a.paths = map[string]bool{}
		}
		for _, n := range names {
			a.paths[n] = true
		}
	}
}

// WithClock sets the clock decisions, approvals and rate limits read;
// the default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(a *Authorizer) { a.now = now }
}

// WithTrustedHints makes the policies see the annotations of a tool whose
// definition was written elsewhere ([tool.Options].ForeignSchema: a tool
// imported from an MCP server, a WebAssembly plugin's) as that tool's
// server states them. Without it, such a tool's readOnly, destructive,
// idempotent and openWorld attributes are the worst case (false, true,
// false, true), whatever its server says: a server's annotations are
// claims, and a server that calls its wipe tool read-only would get it
// past a permit on resource.readOnly. Give it when every server whose
// tools the registry imports is trusted to describe them truly.
func WithTrustedHints() Option {
	return func(a *Authorizer) { a.trustHints = true }
}

// hints returns the annotations the policies see of a tool with opts:
// its own, or, for a tool whose definition was written elsewhere, the
// worst case unless WithTrustedHints (see there). The title is kept: it
// is only a name.
func (a *Authorizer) hints(opts tool.Options) tool.Annotations {
	if !opts.ForeignSchema || a.trustHints {
		return opts.Annotations
	}
	return tool.Annotations{Title: opts.Annotations.Title, Destructive: true, OpenWorld: true}
}

// WithDefaultPrincipal makes p the principal of every call whose context
// carries none ([PrincipalFrom] reports none, as after [WithoutPrincipal]):
// its decisions, its approvals and answers, its audit records and what it
// lists. A command-line host gives it the user the command line names; a
// server whose transport verifies its callers leaves it out, so that a
// call that brings no credentials is decided for the anonymous principal.
func WithDefaultPrincipal(p Principal) Option {
	return func(a *Authorizer) {
		p.Roles = slices.Clone(p.Roles)
		a.fallback = &carried{p: p, ok: true}
	}
}

// An Authorizer decides calls by Cedar policies. It implements
// [tool.Authorizer]: give it to a registry with [tool.WithAuthorizer] and
// every call the registry runs is decided by it, for the [Principal] in
// the call's context.
//
// # The Cedar model
//
//   - principal: User::"id", whose parents are Role::"r" for each of its
//     roles (and their parents, see [WithRoleParents]); its attributes are
//     the principal's Attrs. Without a principal: Anonymous::"".
//   - action: Action::"call".
//   - resource: Tool::"name", with attributes name, title, readOnly,
//     destructive, idempotent and openWorld (the tool's annotations).
//   - context: args, the call's arguments after strict parsing,
//     validation and defaults (a record: objects are records, arrays
//     sets, null members left out, and numbers as below); now, the time
//     as a datetime; hour, the UTC hour (0-23).
//
// A number in the arguments is a Long when it is a whole number from
// -2^63 to 2^63-1, however it is written (150, 150.0, 1.5e2 and 15000e-2
// are the same Long). Cedar has no other number that < and > can order,
// so a call holding any other number (150.5, 1e300, 2^63) in an argument
// that a policy that may apply reads is refused before the policies run,
// with a message naming the argument; a number no policy reads does not
// matter.
//
// Cedar's rules hold: a call is denied unless some permit applies, and
// any forbid that applies wins. One rule is stricter than Cedar's: Cedar
// skips a policy it cannot evaluate for a call (a condition on an
// attribute the call lacks, one that orders a string), and a skipped
// forbid would let the call through; here any policy that cannot be
// evaluated refuses the call, whatever its effect, with the error in
// [Decision.Errors] and a message saying so. A permit annotated @effect("ask") asks
// for an approval instead of allowing: when an asking permit applies and
// no forbid does, the call needs an approval even if another permit
// allows it (deny, then ask, then allow). A forbid annotated
// @reason("…") gives the message the model reads when it refuses a call;
// @id("…") names a policy in decisions and audit records.
//
// A tool is listed for a principal ([Authorizer.CanList],
// [Authorizer.View]) when some permit may apply to some arguments, no
// forbid applies whatever the arguments and no policy fails whatever the
// arguments, so a principal sees exactly the tools it could call.
//
// # Caching
//
// What the policies say of a principal and a tool before the arguments
// are known is kept (see [WithCacheSize]), keyed by everything of the
// principal Cedar sees (its id, its set of roles, its attributes as Cedar
// values) and the tool's name, and checked against the tool's attributes
// on each use; a reload starts afresh. When no policy that may apply to
// the pair reads the context, the kept answer is the decision, and a call
// is decided without reading its arguments (arguments a caller gives
// rather than a registry are still checked to be readable). Otherwise,
// when what partial evaluation leaves of those policies stays within a
// small subset of Cedar (top-level arguments compared with string, long
// and boolean literals, like, has, &&, ||, !, if-then-else, contains on
// literal sets), the call is decided from its arguments' JSON by a
// compiled form of it, and handed to Cedar whenever any step would be an
// error or read a value the compiled form does not model; else the call
// evaluates, with Cedar, the policies whose answer depends on it, and its
// context holds only the arguments they read, and the time only if one
// reads it. Approvals, rate limits, the audit log and the logger act on
// every call as they would without the cache, and an approval or an
// audit record is bound to all of a call's arguments whatever the
// policies read; the decisions are those of Cedar over the whole policy
// set.
//
// A listing folds the partial evaluations (context unknown) of the
// policies that may apply to each tool. Tools that no policy is scoped
// to by name, while no policy reads a tool's name or identity, and whose
// annotations agree on the attributes the policies read, get the same
// partial evaluations, so one fold, kept for the principal, lists them
// all; a tool a policy sees by name starts from its class's fold and
// adds those policies. A principal's first listing of 1,000 tools so
// evaluates each policy once per class of tools, not once per tool.
type Authorizer struct {
	set      atomic.Pointer[compiled]
	roles    map[cedar.EntityUID]cedar.Entity
	approver Approver
	// approvalHint says where a waiting request is answered; may be nil.
	approvalHint func(ApprovalRequest) string
	store        ApprovalStore
	// claimer is store when it claims answers (ApprovalClaimer), and
	// claims the answers this process claimed whose call has not ended.
	claimer bool
	claims  claims
	// approvalTTL is how long a request, then its answer, holds.
	approvalTTL time.Duration
	// approvalKeys seal answers (the first) and verify them (any); nil:
	// answers are neither sealed nor checked (see WithApprovalKey).
	approvalKeys [][]byte
	// maxPending bounds one principal's waiting requests (see
	// WithMaxPendingApprovals); 0 means the default, < 0 none.
	maxPending int
	limits     *rateLimits
	audit      *AuditLog
	logger     *slog.Logger
	now        func() time.Time
	tools      sync.Map // tool name → *toolEntity
	paths      map[string]bool
	auditArgs  bool
	secret     map[string]bool
	cacheSize  int
	cedarOnly  bool // tests and benchmarks: never the fast path
	// trustHints makes the annotations of tools whose definitions were
	// written elsewhere (WithTrustedHints) count as stated.
	trustHints bool
	// perToolListing (tests and benchmarks) lists each tool through its
	// verdict, judged and cached per tool: the baseline of listings
	// planned per principal.
	perToolListing bool
	// fallback is the principal of a call whose context carries none
	// (WithDefaultPrincipal): the anonymous one unless set.
	fallback *carried
}

// New returns an Authorizer for the Cedar policies in src; name is the
// file name used in error positions.
func New(name string, src []byte, opts ...Option) (*Authorizer, error) {
	a := &Authorizer{
		roles:       map[cedar.EntityUID]cedar.Entity{},
		approvalTTL: DefaultApprovalTTL,
		limits:      newRateLimits(),
		now:         time.Now,
		cacheSize:   DefaultCacheSize,
		fallback:    anonymousCarried,
	}
	for _, opt := range opts {
		opt(a)
	}
	if a.store == nil {
		a.store = NewMemoryApprovalStore()
	}
	_, a.claimer = a.store.(ApprovalClaimer)
	if err := a.Reload(name, src); err != nil {
		return nil, err
	}
	return a, nil
}

// Load returns an Authorizer for the Cedar policy file at path.
func Load(path string, opts ...Option) (*Authorizer, error) {
	src, err := readPolicyFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return New(path, src, opts...)
}

// Reload replaces the policies with those in src, atomically: a call is
// decided entirely by the old policies or entirely by the new ones. On
// error the old policies stay.
func (a *Authorizer) Reload(name string, src []byte) error {
	c, err := compile(name, src)
	if err != nil {
		return err
	}
	c.cache = newVerdicts(a.cacheSize)
	c.plans = newPlans(min(a.cacheSize, maxPlans))
	a.set.Store(c)
	return nil
}

// ReloadFile is [Authorizer.Reload] from a file.
func (a *Authorizer) ReloadFile(path string) error {
	src, err := readPolicyFile(path)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	return a.Reload(path, src)
}

// A rule is one parsed policy.
type rule struct {
	id     cedar.PolicyID
	p      *cedar.Policy
	ast    *ast.Policy
	ask    bool
	reason string
	forbid bool
	only   string // the tool a resource == Tool::"x" scope names, else ""
	// context reports that the policy's conditions mention context: only
	// such a policy can make a decision depend on the call's arguments or
	// its time.
	context bool
	index   int   // in compiled.rules
	dep     int   // what of the tool it depends on: onTool, onAttrs, onNone
	mask    uint8 // for onAttrs, the attributes it reads
	use     residual.Use
}

// compiled is one loaded policy set, with rules indexed by tool.
type compiled struct {
	rules  []*rule
	byID   map[cedar.PolicyID]*rule
	byTool sync.Map // tool name → ruleSet
	cache  *verdicts
	plans  *plans
	// What listings read (see listing.go): the rules scoped to a tool by
	// name, by that name; the others, split into those whose partial
	// evaluation depends on the tool's name (byName) and those that depend
	// at most on the attributes in classMask (byAttrs).
	scoped    map[string][]*rule
	byName    []*rule
	byAttrs   []*rule
	classMask uint8
}

type ruleSet []*rule

// reading returns the ids of the rules of s that read the argument name.
func (s ruleSet) reading(name string) []string {
	var ids []string
	for _, r := range s {
		if r.use.All || slices.Contains(r.use.Args, name) {
			ids = append(ids, string(r.id))
		}
	}
	return ids
}

// use returns what of the context the rules of s read.
func (s ruleSet) use() residual.Use {
	uses := make([]residual.Use, len(s))
	for i, r := range s {
		uses[i] = r.use
	}
	return residual.Union(uses)
}

// All lets Cedar evaluate a ruleSet.
func (s ruleSet) All() iter.Seq2[cedar.PolicyID, *cedar.Policy] {
	return func(yield func(cedar.PolicyID, *cedar.Policy) bool) {
		for _, r := range s {
			if !yield(r.id, r.p) {
				return
			}
		}
	}
}

func compile(name string, src []byte) (*compiled, error) {
	if err := checkSource(name, src); err != nil {
		return nil, err
	}
	list, err := cedar.NewPolicyListFromBytes(name, src)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	c := &compiled{byID: map[cedar.PolicyID]*rule{}}
	for i, p := range list {
		ann := p.Annotations()
		// Annotation names are case sensitive, and Cedar allows any:
		// @Effect("ask") would be ignored, and the permit its author
		// meant to ask would allow.
		for k := range ann {
			for _, known := range []string{"id", "effect", "reason"} {
				if string(k) != known && strings.EqualFold(string(k), known) {
					return nil, fmt.Errorf("policy %s: %s: @%s is not @%s, which is written in lower case (annotation names are case sensitive)", name, pos(p), k, known)
				}
			}
		}
		r := &rule{id: cedar.PolicyID(fmt.Sprintf("policy%d", i)), p: p, ast: (*ast.Policy)(p.AST()), forbid: p.Effect() == cedar.Forbid}
		if why := unknownName(r.ast); why != "" {
			return nil, fmt.Errorf("policy %s: %s: %s", name, pos(p), why)
		}
		if id, ok := ann["id"]; ok {
			r.id = cedar.PolicyID(id)
		}
		if _, dup := c.byID[r.id]; dup {
			return nil, fmt.Errorf("policy %s: %s: two policies have the id %q", name, pos(p), r.id)
		}
		if eff, ok := ann["effect"]; ok {
			if eff != "ask" || r.forbid {
				return nil, fmt.Errorf("policy %s: %s: @effect(%q): only a permit may carry @effect, and only \"ask\"", name, pos(p), eff)
			}
			r.ask = true
		}
		r.reason = string(ann["reason"])
		r.context = readsContext(r.ast)
		r.use = residual.UseOf(r.ast)
		r.index = len(c.rules)
		r.dep, r.mask = toolDependence(r.ast)
		if eq, ok := r.ast.Resource.(ast.ScopeTypeEq); ok && eq.Entity.Type == "Tool" {
			r.only = string(eq.Entity.ID)
		}
		c.rules = append(c.rules, r)
		c.byID[r.id] = r
	}
	c.indexListing()
	return c, nil
}

func pos(p *cedar.Policy) string {
	ps := p.Position()
	return fmt.Sprintf("line %d", ps.Line)
}

// forTool returns the rules that can apply to the tool: all but those
// scoped to another tool by name.
func (c *compiled) forTool(name string) ruleSet {
	if s, ok := c.byTool.Load(name); ok {
		return s.(ruleSet)
	}
	var s ruleSet
	for _, r := range c.rules {
		if r.only == "" || r.only == name {
			s = append(s, r)
		}
	}
	c.byTool.Store(name, s)
	return s
}

// toolEntity caches the Cedar entity of a tool. Everything of a tool that
// Cedar sees but its name is in ann: a cached verdict is valid for a tool
// whose ann is the verdict's.
type toolEntity struct {
	ann    tool.Annotations
	entity cedar.Entity
}

func (a *Authorizer) toolEntity(name string, an tool.Annotations) *toolEntity {
	if v, ok := a.tools.Load(name); ok && v.(*toolEntity).ann == an {
		return v.(*toolEntity)
	}
	e := cedar.Entity{
		UID: cedar.NewEntityUID("Tool", cedar.String(name)),
		Attributes: cedar.NewRecord(cedar.RecordMap{
			"name":        cedar.String(name),
			"title":       cedar.String(an.Title),
			"readOnly":    cedar.Boolean(an.ReadOnly),
			"destructive": cedar.Boolean(an.Destructive),
			"idempotent":  cedar.Boolean(an.Idempotent),
			"openWorld":   cedar.Boolean(an.OpenWorld),
		}),
	}
	te := &toolEntity{ann: an, entity: e}
	a.tools.Store(name, te)
	return te
}

// entities answers Cedar's entity lookups for one request.
type entities struct {
	user, tool cedar.Entity
	roles      map[cedar.EntityUID]cedar.Entity
}

func (e *entities) Get(uid cedar.EntityUID) (cedar.Entity, bool) {
	switch uid {
	case e.user.UID:
		return e.user, true
	case e.tool.UID:
		return e.tool, true
	}
	r, ok := e.roles[uid]
	return r, ok
}

var anonymous = cedar.Entity{UID: cedar.NewEntityUID("Anonymous", "")}

func userEntity(p Principal) cedar.Entity {
	parents := make([]cedar.EntityUID, len(p.Roles))
	for i, r := range p.Roles {
		parents[i] = cedar.NewEntityUID("Role", cedar.String(r))
	}
	e := cedar.Entity{UID: cedar.NewEntityUID("User", cedar.String(p.ID)), Parents: cedar.NewEntityUIDSet(parents...)}
	if len(p.Attrs) > 0 {
		if v, ok := residual.CedarValue(p.Attrs); ok {
			e.Attributes = v.(cedar.Record)
		}
	}
	return e
}

var callAction = cedar.NewEntityUID("Action", "call")

// Decide returns the policies' answer to a call, without consulting
// approvals or rate limits and without recording anything. It is what
// [Authorizer.Authorize] starts from and what policy explain prints.
func (a *Authorizer) Decide(ctx context.Context, req tool.AccessRequest) Decision {
	var d Decision
	a.decide(ctx, &req, &d)
	d.Policies = slices.Clone(d.Policies)
	return d
}

// decide is Decide, into d, with d.Policies possibly shared with the
// cache: the caller copies it before it leaves the package.
func (a *Authorizer) decide(ctx context.Context, req *tool.AccessRequest, d *Decision) {
	who := a.subject(ctx)
	c := a.set.Load()
	a.decideFor(c, who, a.verdict(c, who, req.Name, a.hints(req.Options)), req, d, nil)
}

// decideFor is decide with the generation, the principal and the verdict
// found, and, when fast is not nil, the answer of v's fast program to req
// already computed.
func (a *Authorizer) decideFor(c *compiled, who *carried, v *verdict, req *tool.AccessRequest, d *Decision, fast *fastAnswer) {
	*d = Decision{Principal: who.p, Tool: req.Name}
	// Arguments given by the caller rather than encoded by a registry
	// from checked values must be read one way only, by the policies, the
	// approval digest and the tool alike (see residual.Strict).
	if len(req.Args) > 0 {
		if err := residual.Strict(req.Args); err != nil {
			*d = unreadable(*d)
			d.Reason = argsReason(req.Name, err)
			return
		}
	}
	// A path argument the policies cannot read one way only refuses the
	// call, whatever they read of it (see WithPathArguments).
	if len(a.paths) > 0 {
		if err := a.checkPaths(req); err != nil {
			*d = unreadable(*d)
			d.Reason = argsReason(req.Name, err)
			return
		}
	}
	// A list a policy compares must be one whose order and repeats the
	// policies need not see: Cedar holds it as a set.
	if err := listCompared(v, req); err != nil {
		*d = unreadable(*d)
		d.Reason = argsReason(req.Name, err)
		var le *residual.ListError
		if errors.As(err, &le) {
			d.Policies = v.rules.reading(le.Top)
		}
		a.bindCall(who, req, d)
		return
	}
	if v.static {
		d.Effect, d.Policies, d.Reason = v.effect, v.policies, v.reason
		a.bindCall(who, req, d)
		return
	}
	// The call is bound to all its arguments, whatever the policies read:
	// an approval or an audit record for one call must not fit another
	// that differs only in an argument no policy reads. The fast path may
	// read only some of them, without their encoding: the binding then
	// encodes them all, when there is one.
	// Without a cache each verdict serves one call: compiling its fast
	// program would cost more than the Cedar evaluation it replaces.
	if !a.cedarOnly && c.cache.keeps() {
		var f fastAnswer
		if fast != nil {
			f = *fast
		} else {
			f = a.runFast(v, req)
		}
		if a.fillFast(v, d, &f) {
			a.bindCall(who, req, d)
			return
		}
	}
	a.decideCedar(c, who, v, req, d)
}

// bindCall binds a decision that did not need the call's encoded
// arguments to all of them, when an approval (ask) or the audit log needs
// the binding: encoding them is left until then.
func (a *Authorizer) bindCall(who *carried, req *tool.AccessRequest, d *Decision) {
	if d.Effect != Ask && a.audit == nil {
		return
	}
	all, err := req.Arguments()
	if err != nil {
		*d = unreadable(*d)
		return
	}
	d.bind(who, req, all)
}

// listCompared returns the refusal of a call one of whose lists (JSON
// arrays) of two or more values a policy of v compares with == or !=
// (see residual.FirstList), or nil. For a call whose compared arguments
// [tool.AccessRequest.Argument] reads (a flat struct, which holds no
// list) it encodes nothing.
func listCompared(v *verdict, req *tool.AccessRequest) error {
	u := &v.use
	if v.static || !u.ComparedAll && len(u.Compared) == 0 {
		return nil
	}
	if !u.ComparedAll {
		flat := true
		for _, name := range u.Compared {
			if _, ok := req.Argument(name); !ok {
				flat = false
				break
			}
		}
		if flat {
			return nil
		}
	}
	raw, err := req.Arguments()
	if err != nil {
		return err
	}
	if le := residual.FirstList(raw, *u); le != nil {
		return le
	}
	return nil
}

// A fastAnswer is what a verdict's fast program says of a call: ok false
// when it has none, or when Cedar must decide the call.
type fastAnswer struct {
	p       *residual.Program
	applied uint64
	ok      bool
}

// runFast runs v's fast program, when it has one, on req's arguments.
func (a *Authorizer) runFast(v *verdict, req *tool.AccessRequest) fastAnswer {
	f := fastAnswer{p: fastFor(v)}
	if f.p != nil {
		f.applied, f.ok = f.p.Decide(req, a.paths)
	}
	return f
}

// allows reports whether f is the answer of permits alone: Allow.
func (f *fastAnswer) allows() bool {
	return f.ok && f.applied != 0 && f.applied&(f.p.Forbids|f.p.Asks) == 0
}

// decideFast fills in d with the answer of v's fast program, when it has
// one for req's arguments: the effect, the deciding policies and the
// reason Cedar's answer over v.rules would give, in the same order. It
// reports false, and leaves d as it was, when Cedar must decide. It does
// not bind the call.
func (a *Authorizer) decideFast(v *verdict, d *Decision, req *tool.AccessRequest) bool {
	f := a.runFast(v, req)
	return a.fillFast(v, d, &f)
}

// fillFast is decideFast with the fast program's answer given.
func (a *Authorizer) fillFast(v *verdict, d *Decision, fast *fastAnswer) bool {
	p, applied := fast.p, fast.applied
	if !fast.ok {
		return false
	}
	// The deciding policies, in order: the forbids that apply, else the
	// asking permits, else every rule that applies (all permits then).
	forbids, asks, permits := applied&p.Forbids, applied&p.Asks, applied
	switch {
	case forbids != 0:
		d.Effect, d.Policies = Deny, p.IDs(forbids)
		for i, r := range v.rules {
			if forbids&(1<<i) != 0 && r.reason != "" {
				d.Reason = r.reason
				break
			}
		}
		if d.Reason == "" {
			d.Reason = deniedReason(d.Tool)
		}
	case asks != 0:
		d.Effect, d.Policies, d.Reason = Ask, p.IDs(asks), askReason(d.Tool)
	case permits != 0:
		d.Effect, d.Policies = Allow, p.IDs(permits)
	default:
		d.Effect, d.Reason = Deny, deniedReason(d.Tool)
	}
	return true
}

// decideCedar is decide's answer from Cedar, for a verdict that is not
// static, on a call the fast path left to Cedar.
func (a *Authorizer) decideCedar(c *compiled, who *carried, v *verdict, req *tool.AccessRequest, d *Decision) {
	raw, err := req.Arguments()
	if err != nil {
		*d = unreadable(*d)
		return
	}
	all := raw
	// A number the policies read must be one Cedar compares exactly.
	if ne := residual.FirstInexact(raw, v.use); ne != nil {
		*d = unreadable(*d)
		d.Reason = argsReason(req.Name, ne)
		d.Policies = v.rules.reading(ne.Top)
		if a.audit != nil {
			d.bind(who, req, all)
		}
		return
	}
	// Only the arguments the policies read go into the context.
	argRec, err := residual.ContextArgs(raw, v.use, a.paths)
	if err != nil {
		*d = unreadable(*d)
		d.Reason = argsReason(req.Name, err)
		return
	}
	cr := cedar.Request{
		Principal: v.ents.user.UID,
		Action:    callAction,
		Resource:  v.ents.tool.UID,
	}
	if v.use.Other {
		now := a.now()
		cr.Context = cedar.NewRecord(cedar.RecordMap{
			"args": argRec,
			"now":  cedar.NewDatetime(now),
			"hour": cedar.Long(now.UTC().Hour()),
		})
	} else {
		cr.Context = cedar.NewRecord(cedar.RecordMap{"args": argRec})
	}
	dec, diag := cedar.Authorize(v.rules, v.ents, cr)
	c.fromCedar(dec, diag, d)
	if d.Effect == Ask || a.audit != nil {
		d.bind(who, req, all)
	}
}

// fromCedar fills in d from Cedar's answer over some of c's rules. Cedar
// skips a policy it cannot evaluate; here such a policy refuses the call
// (fail closed): a forbid that fails might have applied, and a permit or
// an asking permit that fails says the policies do not decide this call
// as their author meant. A forbid that applies still gives its reason.
func (c *compiled) fromCedar(dec cedar.Decision, diag cedar.Diagnostic, d *Decision) {
	for _, e := range diag.Errors {
		d.Errors = append(d.Errors, e.String())
	}
	switch {
	case dec == cedar.Deny && len(diag.Reasons) > 0: // forbids applied
		d.Effect = Deny
		for _, r := range diag.Reasons {
			d.Policies = append(d.Policies, string(r.PolicyID))
			if rr := c.byID[r.PolicyID]; d.Reason == "" && rr != nil && rr.reason != "" {
				d.Reason = rr.reason
			}
		}
		if d.Reason == "" {
			d.Reason = deniedReason(d.Tool)
		}
		return
	case len(diag.Errors) > 0:
		d.Effect = Deny
		for _, e := range diag.Errors {
			if id := string(e.PolicyID); !slices.Contains(d.Policies, id) {
				d.Policies = append(d.Policies, id)
			}
		}
		d.Reason = failedReason(d.Tool, diag.Errors[0].Message)
		return
	case dec == cedar.Deny:
		d.Effect, d.Reason = Deny, deniedReason(d.Tool)
		return
	}
	d.Effect = Allow
	var asks []string
	for _, r := range diag.Reasons {
		id := string(r.PolicyID)
		d.Policies = append(d.Policies, id)
		if rr := c.byID[r.PolicyID]; rr != nil && rr.ask {
			asks = append(asks, id)
		}
	}
	if len(asks) > 0 {
		d.Effect = Ask
		d.Policies = asks
		d.Reason = askReason(d.Tool)
	}
}

// unreadable turns d into the refusal of a call whose arguments cannot be
// read.
func unreadable(d Decision) Decision {
	d.Effect, d.Policies = Deny, nil
	d.Reason = fmt.Sprintf("call to tool %q was refused: its arguments could not be read", d.Tool)
	return d
}

// DefersArgs reports that the Authorizer reads a call's arguments only
// through [tool.AccessRequest.Arguments], and only when a policy that may
// apply reads them, a call needs an approval, or the audit log keeps
// them: a registry need not encode them for the other calls.
func (a *Authorizer) DefersArgs() bool { return true }

// An Authorizer defers arguments and may record no outcomes.
var (
	_ tool.ArgsDeferrer   = (*Authorizer)(nil)
	_ tool.OutcomeSkipper = (*Authorizer)(nil)
)

// RecordsOutcomes reports whether [Authorizer.Outcome] records anything:
// whether the Authorizer has an audit log or a logger, or an approval
// store that claims answers ([ApprovalClaimer]). A registry neither
// times nor reports the calls of an Authorizer that does not.
func (a *Authorizer) RecordsOutcomes() bool { return a.observed() || a.claimer }

// observed reports whether decisions and outcomes are logged.
func (a *Authorizer) observed() bool { return a.audit != nil || a.logger != nil }

// bind fills in the canonical arguments and the call's digest.
func (d *Decision) bind(who *carried, req *tool.AccessRequest, args []byte) {
	_, canon, err := residual.DecodeArgs(args)
	if err != nil {
		canon = args
	}
	d.Args = canon
	d.Digest = digest(who, d.Tool, definitionDigest(req), canon)
}

// digest binds a call to its principal (everything of it Cedar sees: its
// id, its roles and its attributes, see principalCacheKey), tool (its
// name and definitionDigest) and canonical arguments.
func digest(who *carried, name string, def [sha256.Size]byte, args []byte) string {
	h := sha256.New()
	field := func(s string) { writeField(h, s) }
	field("clawtool call v3")
	key := who.cacheKey()
	field(string(key[:]))
	field(name)
	field(string(def[:]))
	field(string(args))
	return hex.EncodeToString(h.Sum(nil))
}

// writeField writes s to h preceded by its length, so that no two lists
// of fields hash alike.
func writeField(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// definitionDigest is the SHA-256 of what a person asked to approve a
// call of req's tool is told of the tool, or could look up: its
// description, parameters, output schema and annotations. Settings of the
// run (timeout, output bound, inline) are left out: they do not change
// what the tool does. The zero request (no tool) has a digest too.
func definitionDigest(req *tool.AccessRequest) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) { writeField(h, s) }
	field("clawtool definition v1")
	if req.Tool != nil {
		field(req.Tool.Description())
		field(string(req.Tool.Parameters()))
	} else {
		field("")
		field("")
	}
	field(string(req.Options.OutputSchema))
	an := req.Options.Annotations
	field(an.Title)
	var flags [4]byte
	for i, b := range []bool{an.ReadOnly, an.Destructive, an.Idempotent, an.OpenWorld} {
		if b {
			flags[i] = 1
		}
	}
	field(string(flags[:]))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// A DeniedError is the error [Authorizer.Authorize] returns for a call it
// refuses. Its message is the one the model reads. It matches
// [tool.ErrDenied].
type DeniedError struct {
	// Decision is the decision behind the refusal.
	Decision Decision
	msg      string
	meta     map[string]any
}

// Error returns the message the model reads.
func (e *DeniedError) Error() string { return e.msg }

// Unwrap returns [tool.ErrDenied].
func (e *DeniedError) Unwrap() error { return tool.ErrDenied }

// ResultMetadata is what the refused call's Result.Metadata carries: the
// effect, and the approval request or retry time when there is one, and
// under "policy_errors" the policies that could not be evaluated, with
// why ([Decision.Errors]), when there are some.
func (e *DeniedError) ResultMetadata() map[string]any { return e.meta }

// Authorize decides a call for the principal in ctx and records the
// decision (see [WithAudit], [WithLogger]). A call that needs an approval
// runs when an approval for exactly this call is granted and unused (the
// approval is then used up), or when the [Approver] approves it now;
// otherwise it is refused with an approval request. A call allowed by
// the policies is refused when its principal is over a rate limit (see
// [Authorizer.LimitRate]), with a message saying when to retry.
func (a *Authorizer) Authorize(ctx context.Context, req tool.AccessRequest) error {
	observed := a.observed()
	var start time.Time
	if observed {
		start = a.now()
		// Encode the arguments now, before the tool runs and may change
		// what it was given, so that the outcome's digest is the call's.
		_, _ = req.Arguments()
	}
	who := a.subject(ctx)
	c := a.set.Load()
	v := a.verdict(c, who, req.Name, a.hints(req.Options))
	// A call the policies allow is answered without a Decision when
	// nothing (audit log, logger, rate limit, path arguments) would read
	// one; any other call is decided as Decide decides it.
	var fast *fastAnswer
	// Arguments the caller gave are checked (in decideFor) before any
	// answer: none is given without a Decision.
	if !observed && len(a.paths) == 0 && !a.limits.active() && len(req.Args) == 0 {
		switch {
		case v.static:
			if v.effect == Allow {
				return nil
			}
		case !a.cedarOnly && c.cache.keeps() && listCompared(v, &req) == nil:
			f := a.runFast(v, &req)
			if f.allows() {
				return nil
			}
			fast = &f
		}
	}
	var d Decision
	a.decideFor(c, who, v, &req, &d, fast)
	var err error
	switch d.Effect {
	case Deny:
		d.Policies = slices.Clone(d.Policies)
		meta := map[string]any{"effect": string(Deny)}
		if len(d.Errors) > 0 {
			meta["policy_errors"] = d.Errors
		}
		err = &DeniedError{Decision: d, msg: d.Reason, meta: meta}
	case Ask:
		d.Policies = slices.Clone(d.Policies)
		if a.claimer {
			// The outcome completes the claim by the call's digest: its
			// arguments are encoded before the tool may change them.
			_, _ = req.Arguments()
		}
		err = a.ask(ctx, &d, a.hints(req.Options))
	}
	if err == nil && a.limits.active() {
		if wait, limited := a.limits.take(d.Principal.ID, d.Tool, a.now()); limited {
			d.Policies = slices.Clone(d.Policies)
			d.Effect = Deny
			d.Reason = fmt.Sprintf("rate limit reached for tool %q; retry after %s", d.Tool, wait.Round(time.Millisecond))
			err = &DeniedError{Decision: d, msg: d.Reason, meta: map[string]any{"effect": string(Deny), "retry_after": wait}}
		}
	}
	if a.audit != nil && a.auditArgs {
		raw, _ := req.Arguments()
		d.auditArgs = redact(raw, a.secret)
	}
	if observed {
		if rerr := a.record(ctx, d, a.now().Sub(start)); rerr != nil && err == nil {
			// The log is the proof of what ran: a call it cannot record
			// does not run (fail closed).
			d.Effect, d.Approved = Deny, false
			d.Reason = fmt.Sprintf("call to tool %q was refused: the audit log could not record its decision; do not retry until the host's audit log works again", d.Tool)
			err = &DeniedError{Decision: d, msg: d.Reason, meta: map[string]any{"effect": string(Deny)}}
		}
	}
	return err
}

// Outcome records how a call the Authorizer let run ended, in the audit
// log and the log (see [WithAudit], [WithLogger]); the registry calls it.
// For a call whose approval this process claimed ([ApprovalClaimer]) it
// records in the store that the call ran.
func (a *Authorizer) Outcome(ctx context.Context, req tool.AccessRequest, res tool.Result, took time.Duration) {
	claimed := a.claimer && a.claims.any()
	if !claimed && !a.observed() {
		return
	}
	who := a.subject(ctx)
	p := who.p
	d := Decision{Principal: p, Tool: req.Name}
	raw, _ := req.Arguments()
	d.bind(who, &req, raw)
	if claimed {
		a.complete(ctx, d.Digest)
	}
	if !a.observed() {
		return
	}
	kind := "ok"
	if res.IsError {
		kind = string(res.Kind)
	}
	if a.logger != nil {
		a.logger.LogAttrs(ctx, slog.LevelInfo, "tool call outcome",
			slog.String("principal", p.ID), slog.String("tool", req.Name), slog.String("outcome", kind),
			slog.Duration("took", took), slog.String("digest", d.Digest))
	}
	if a.audit != nil {
		if err := a.audit.RecordOutcome(d, res, took); err != nil && a.logger != nil {
			a.logger.LogAttrs(ctx, slog.LevelError, "audit record failed", slog.String("error", err.Error()))
		}
	}
}

// record logs d and appends it to the audit log; it returns the audit
// log's error, which refuses the call.
func (a *Authorizer) record(ctx context.Context, d Decision, took time.Duration) error {
	if a.logger != nil {
		level := slog.LevelInfo
		if d.Effect != Allow {
			level = slog.LevelWarn
		}
		attrs := []slog.Attr{slog.String("principal", d.Principal.ID), slog.String("tool", d.Tool),
			slog.String("effect", string(d.Effect)), slog.Any("policies", d.Policies),
			slog.Bool("approved", d.Approved), slog.String("digest", d.Digest)}
		if len(d.Errors) > 0 {
			attrs = append(attrs, slog.Any("errors", d.Errors))
		}
		a.logger.LogAttrs(ctx, level, "tool call decision", attrs...)
	}
	if a.audit != nil {
		if err := a.audit.Record(d, took); err != nil {
			if a.logger != nil {
				a.logger.LogAttrs(ctx, slog.LevelError, "audit record failed; the call is refused", slog.String("error", err.Error()))
			}
			return err
		}
	}
	return nil
}

// CanList reports whether the principal in ctx may see the tool: some
// permit may apply to some arguments, and no forbid applies, nor any
// policy fails, whatever the arguments.
func (a *Authorizer) CanList(ctx context.Context, name string, opts tool.Options) bool {
	return a.listable(a.set.Load(), a.subject(ctx), name, a.hints(opts))
}

// View returns the tools of reg the principal in ctx may see (see
// [Authorizer.CanList]): their Definitions for the model, List and
// Execute. It follows reloads of the policies. Calls through it are
// still decided one by one when reg was made with this Authorizer.
func (a *Authorizer) View(ctx context.Context, reg *tool.Registry) *tool.View {
	who := a.subject(ctx)
	return reg.View(func(name string, opts tool.Options) bool {
		return a.listable(a.set.Load(), who, name, a.hints(opts))
	})
}
