package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/eval"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy/internal/residual"
)

// DefaultCacheSize is how many (principal, tool) verdicts an [Authorizer]
// keeps unless [WithCacheSize] says otherwise: enough for a thousand tools
// seen by ten principals.
const DefaultCacheSize = 10000

// WithCacheSize bounds how many (principal, tool) verdicts the Authorizer
// keeps between calls; past n, an entry chosen at random is dropped for
// each new one. A verdict is what the policies say of a principal and a
// tool before the call's arguments are known: when no policy that could
// apply reads the context, the decision itself. Listings are kept apart,
// per principal (for at most 256 principals, each with at most 1,024
// listings of a class of tools and 1,024 of tools a policy names), and
// do not fill this cache. Besides these, a context made with
// [WithPrincipal] keeps the verdict of its latest call and its
// principal's listings. Zero keeps none, so every call and listing
// evaluates the policies afresh. Caching never changes a decision: see
// [Authorizer].
func WithCacheSize(n int) Option {
	return func(a *Authorizer) { a.cacheSize = max(n, 0) }
}

// A verdict is what the policies of one generation say of one principal
// and one tool, whatever the arguments.
type verdict struct {
	te   *toolEntity // the tool entity it was made for
	ents *entities   // Cedar's view of the principal, its roles and the tool
	// listable is whether the tool is listed: only for PerToolListing, the
	// baseline; listings fold per principal (see listing.go).
	listable bool
	// static reports that no policy that may apply reads the context, so
	// effect, policies and reason are the decision for every call.
	static   bool
	effect   Effect
	policies []string // shared: copied before it leaves the package
	reason   string
	// rules are the policies a call must still evaluate when the verdict
	// is not static: those whose scope matches and whose conditions partial
	// evaluation could not settle without the context, in policy order.
	rules ruleSet
	use   residual.Use // what of the context rules read
	// fast decides calls without Cedar when the residual conditions of
	// rules are all within what it supports; else nil (see fastFor).
	// It is compiled on the first call that needs it, not for listings.
	fastOnce sync.Once
	fast     *residual.Program
	// set and name are the generation and the tool it was made for, so
	// that a principal's context can keep its latest verdict (see
	// carried.last) and know when it fits a call.
	set  *compiled
	name string
}

type verdictKey struct {
	principal [sha256.Size]byte
	tool      string
}

// verdicts is a bounded map of verdicts, one per policy generation: a
// reload starts an empty one. A nil *verdicts keeps nothing.
type verdicts struct {
	mu  sync.RWMutex
	m   map[verdictKey]*verdict
	max int
}

func newVerdicts(n int) *verdicts {
	return &verdicts{m: make(map[verdictKey]*verdict, min(n, 1024)), max: n}
}

func (c *verdicts) get(k verdictKey) *verdict {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	v := c.m[k]
	c.mu.RUnlock()
	return v
}

func (c *verdicts) put(k verdictKey, v *verdict) {
	if c == nil || c.max == 0 {
		return
	}
	c.mu.Lock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		for old := range c.m { // map iteration starts at a random entry
			delete(c.m, old)
			break
		}
	}
	c.m[k] = v
	c.mu.Unlock()
}

// keeps reports whether c keeps verdicts.
func (c *verdicts) keeps() bool { return c != nil && c.max > 0 }

func (c *verdicts) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// verdict returns the verdict of the policies of generation c on who and
// the tool, from the cache when the tool's Cedar entity is the one the
// cached verdict was made for. The verdict of who's latest call is kept
// on who as well, so that a principal calling one tool again finds it
// without the cache's lookup; only when the cache keeps verdicts.
func (a *Authorizer) verdict(c *compiled, who *carried, name string, ann tool.Annotations) *verdict {
	if who.build(); who.refused != nil {
		return who.refused
	}
	if v := who.last.Load(); v != nil && v.set == c && v.name == name && v.te.ann == ann {
		return v
	}
	k := verdictKey{principal: who.cacheKey(), tool: name}
	v := c.cache.get(k)
	if v == nil || v.te.ann != ann {
		te := a.toolEntity(name, ann)
		v = c.judge(&entities{user: who.userEntity(), tool: te.entity, roles: a.roles}, te, name, c.plans.get(k.principal))
		c.cache.put(k, v)
	}
	if c.cache.keeps() {
		who.last.Store(v)
	}
	return v
}

// How a policy's partial evaluation depends on the tool.
const (
	onTool  = iota // on the tool's name or identity: evaluated per tool
	onAttrs        // only on the tool's attributes other than its name
	onNone         // not at all: the same for every tool
)

// toolAttrs are the attributes of a tool entity that a plan may key on,
// as bits of a mask.
var toolAttrs = map[cedar.String]uint8{"title": 1, "readOnly": 2, "destructive": 4, "idempotent": 8, "openWorld": 16}

// masked returns ann with only the attributes in mask.
func masked(ann tool.Annotations, mask uint8) tool.Annotations {
	var m tool.Annotations
	if mask&1 != 0 {
		m.Title = ann.Title
	}
	m.ReadOnly = mask&2 != 0 && ann.ReadOnly
	m.Destructive = mask&4 != 0 && ann.Destructive
	m.Idempotent = mask&8 != 0 && ann.Idempotent
	m.OpenWorld = mask&16 != 0 && ann.OpenWorld
	return m
}

// toolDependence says what of the tool a policy's scope and conditions
// can see, and for onAttrs, which attributes (a mask of toolAttrs).
// Entity literals of type Tool count as the tool: the entities a call
// sees hold only the called tool. So does any attribute not in toolAttrs.
func toolDependence(p *ast.Policy) (dep int, mask uint8) {
	dep = onNone
	switch s := p.Resource.(type) {
	case ast.ScopeTypeAll:
	case ast.ScopeTypeIs:
		if s.Type == "Tool" {
			dep = onAttrs
		}
	default:
		return onTool, 0
	}
	for _, cond := range p.Conditions {
		ast.Inspect(ast.NewNode(cond.Body), func(n ast.IsNode) bool {
			if dep == onTool {
				return false
			}
			var op ast.StrOpNode
			switch n := n.(type) {
			case ast.NodeTypeAccess:
				op = n.StrOpNode
			case ast.NodeTypeHas:
				op = n.StrOpNode
			case ast.NodeTypeVariable:
				if n.Name == "resource" {
					dep = onTool
				}
				return false
			case ast.NodeValue:
				if mentionsTool(n.Value) {
					dep = onTool
				}
				return false
			default:
				return true
			}
			if v, ok := op.Arg.(ast.NodeTypeVariable); ok && v.Name == "resource" {
				if bit, ok := toolAttrs[op.Value]; ok {
					dep, mask = onAttrs, mask|bit
				} else {
					dep = onTool // its name, or an attribute this code does not know
				}
				return false
			}
			return true
		})
	}
	return dep, mask
}

func mentionsTool(v cedar.Value) bool {
	switch v := v.(type) {
	case cedar.EntityUID:
		return v.Type == "Tool"
	case cedar.Set:
		for e := range v.All() {
			if mentionsTool(e) {
				return true
			}
		}
	case cedar.Record:
		for _, e := range v.All() {
			if mentionsTool(e) {
				return true
			}
		}
	}
	return false
}

// A plan keeps, for one principal and one policy generation, the partial
// evaluations of the policies that do not depend on the tool's name: one
// per policy, or per policy and tool attributes, rather than one per tool.
type plan struct {
	of *plans // the plans of the generation it belongs to
	mu sync.Mutex
	m  map[planKey]partial
	// classes and tools keep the principal's listings (see listing.go):
	// the fold of compiled.byAttrs by the annotations its rules read, and
	// the listing of each tool a policy sees by name.
	classes map[tool.Annotations]listed
	tools   map[string]toolListing
}

type planKey struct {
	rule int
	ann  tool.Annotations
}

// partial is the outcome of a partial evaluation of a policy.
type partial struct {
	keep  bool // the policy may apply
	conds bool // it still has conditions: it reads the context, or fails
	// fails reports that the policy cannot be evaluated whatever the
	// context: every call it may apply to is refused.
	fails bool
}

func (p *plan) eval(env eval.Env, r *rule, ann tool.Annotations) partial {
	if p == nil || r.dep == onTool {
		return partialOf(env, r)
	}
	k := planKey{rule: r.index, ann: masked(ann, r.mask)}
	p.mu.Lock()
	res, ok := p.m[k]
	p.mu.Unlock()
	if ok {
		return res
	}
	res = partialOf(env, r)
	p.mu.Lock()
	if len(p.m) < maxPlanEntries {
		p.m[k] = res
	}
	p.mu.Unlock()
	return res
}

func partialOf(env eval.Env, r *rule) partial {
	residual, keep := eval.PartialPolicy(env, r.ast)
	res := partial{keep: keep, conds: keep && len(residual.Conditions) > 0}
	if res.conds {
		// Partial evaluation drops the conditions it finds true and
		// stops at one it finds failing: a failure first fails for
		// every context.
		_, res.fails = eval.ToPartialError(residual.Conditions[0].Body)
	}
	return res
}

// plans is a bounded map of plans by principal.
type plans struct {
	mu  sync.Mutex
	m   map[[sha256.Size]byte]*plan
	max int
}

func newPlans(n int) *plans {
	return &plans{m: map[[sha256.Size]byte]*plan{}, max: n}
}

// get returns the plan of a principal, a new one if it has none; nil
// when plans are not kept.
func (ps *plans) get(k [sha256.Size]byte) *plan {
	if ps == nil || ps.max == 0 {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.m[k]; p != nil {
		return p
	}
	if len(ps.m) >= ps.max {
		for old := range ps.m {
			delete(ps.m, old)
			break
		}
	}
	p := &plan{of: ps, m: map[planKey]partial{}}
	ps.m[k] = p
	return p
}

var contextVariable = eval.Variable("context")

// judge evaluates the policies that may apply to a call of the tool by
// the principal with the context unknown.
func (c *compiled) judge(ents *entities, te *toolEntity, name string, pl *plan) *verdict {
	env := eval.Env{
		Entities:  ents,
		Principal: ents.user.UID,
		Action:    callAction,
		Resource:  ents.tool.UID,
		Context:   contextVariable,
	}
	v := &verdict{te: te, ents: ents, static: true, name: name, set: c}
	permitted, blocked := false, false
	var forbids, permits, asks []string
	for _, r := range c.forTool(name) {
		res := pl.eval(env, r, te.ann)
		// A policy that fails for every call refuses them all, so the
		// tool is not listed (the calls are left to Cedar, which says
		// why).
		blocked = blocked || res.fails
		if !res.keep {
			// Partial evaluation stops at the first condition it finds
			// false; a call evaluates the conditions before it too, and
			// one that reads the context may fail there, which Cedar
			// reports as an error. Keep such a policy for the call.
			if r.context && len(r.ast.Conditions) > 1 {
				v.rules = append(v.rules, r)
				v.static = false
			}
			continue
		}
		v.rules = append(v.rules, r)
		if res.conds { // depends on the context, or fails
			v.static = false
			permitted = permitted || !r.forbid
			continue
		}
		switch {
		case r.forbid:
			blocked = true
			forbids = append(forbids, string(r.id))
			if v.reason == "" {
				v.reason = r.reason
			}
		case r.ask:
			permitted = true
			permits = append(permits, string(r.id))
			asks = append(asks, string(r.id))
		default:
			permitted = true
			permits = append(permits, string(r.id))
		}
	}
	v.listable = permitted && !blocked
	if !v.static {
		v.reason = ""
		v.use = v.rules.use()
		return v
	}
	v.rules = nil
	switch {
	case blocked:
		v.effect, v.policies = Deny, forbids
		if v.reason == "" {
			v.reason = deniedReason(name)
		}
	case len(asks) > 0:
		v.effect, v.policies, v.reason = Ask, asks, askReason(name)
	case len(permits) > 0:
		v.effect, v.policies = Allow, permits
	default:
		v.effect, v.reason = Deny, deniedReason(name)
	}
	return v
}

// fastFor returns v's fast program, compiling it on first use; nil when
// v has none.
func fastFor(v *verdict) *residual.Program {
	v.fastOnce.Do(func() { v.fast = compileFast(v) })
	return v.fast
}

// compileFast compiles the residual policies of a verdict's rules, in
// order: what partial evaluation leaves of each for the verdict's
// principal and tool. It returns nil when one of them is outside what the
// fast path supports.
func compileFast(v *verdict) *residual.Program {
	if v.static || len(v.rules) > residual.MaxRules {
		return nil
	}
	env := eval.Env{
		Entities:  v.ents,
		Principal: v.ents.user.UID,
		Action:    callAction,
		Resource:  v.ents.tool.UID,
		Context:   contextVariable,
	}
	rules := make([]residual.Rule, len(v.rules))
	for i, r := range v.rules {
		res, keep := eval.PartialPolicy(env, r.ast)
		if !keep {
			res = neverResidual(env, r)
		}
		rules[i] = residual.Rule{Residual: res, ID: string(r.id), Forbid: r.forbid, Ask: r.ask}
	}
	return residual.Compile(rules, v.use)
}

// neverResidual returns, for a policy partial evaluation found cannot
// apply, what a call still evaluates of it: the residuals of the
// conditions before the first one that is false whatever the context,
// followed by a condition that is false. Cedar evaluates no condition
// when the scope does not match; then only the false condition remains.
func neverResidual(env eval.Env, r *rule) *ast.Policy {
	prefix := *r.ast
	var kept *ast.Policy
	for j := range len(r.ast.Conditions) + 1 {
		prefix.Conditions = r.ast.Conditions[:j]
		res, keep := eval.PartialPolicy(env, &prefix)
		if !keep {
			break
		}
		kept = res
	}
	never := ast.ConditionType{Condition: ast.ConditionWhen, Body: ast.NodeValue{Value: cedar.False}}
	if kept == nil {
		return &ast.Policy{Conditions: []ast.ConditionType{never}}
	}
	out := *kept
	out.Conditions = append(slices.Clip(kept.Conditions), never)
	return &out
}

// failedReason is the refusal of a call a policy could not be evaluated
// for; why is Cedar's message, which names no policy.
func failedReason(name, why string) string {
	return fmt.Sprintf("call to tool %q was refused: a permission policy could not be evaluated for this call: %s", name, why)
}

func deniedReason(name string) string {
	return fmt.Sprintf("you may not call tool %q with these arguments; no permission covers this call", name)
}

func askReason(name string) string {
	return fmt.Sprintf("call to tool %q needs a person's approval", name)
}

// readsContext reports whether a policy's conditions mention context.
func readsContext(p *ast.Policy) bool {
	found := false
	for _, cond := range p.Conditions {
		ast.Inspect(ast.NewNode(cond.Body), func(n ast.IsNode) bool {
			if v, ok := n.(ast.NodeTypeVariable); ok && v.Name == "context" {
				found = true
			}
			return !found
		})
	}
	return found
}

// principalCacheKey digests everything of a principal that Cedar sees: its
// id, its roles (as a set) and its attributes (as Cedar values), so that
// two principals share cached verdicts only when no policy can tell them
// apart.
func principalCacheKey(p Principal, ok bool, e cedar.Entity) [sha256.Size]byte {
	var b bytes.Buffer
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		b.Write(n[:])
		b.WriteString(s)
	}
	field("clawtool principal v1")
	if !ok {
		field("anonymous")
		return sha256.Sum256(b.Bytes())
	}
	field("user")
	field(p.ID)
	roles := slices.Clone(p.Roles)
	slices.Sort(roles)
	roles = slices.Compact(roles)
	field(fmt.Sprint(len(roles)))
	for _, r := range roles {
		field(r)
	}
	field(string(valueKey(e.Attributes)))
	return sha256.Sum256(b.Bytes())
}

// valueKey encodes a Cedar value so that two values have the same
// encoding exactly when they are equal: record keys sorted, set elements
// sorted, every part length-prefixed and tagged with its type.
func valueKey(v cedar.Value) []byte {
	var b bytes.Buffer
	part := func(p []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		b.Write(n[:])
		b.Write(p)
	}
	switch v := v.(type) {
	case cedar.Record:
		b.WriteByte('R')
		keys := slices.Sorted(v.Keys())
		for _, k := range keys {
			e, _ := v.Get(k)
			part([]byte(k))
			part(valueKey(e))
		}
	case cedar.Set:
		b.WriteByte('S')
		var elems [][]byte
		for e := range v.All() {
			elems = append(elems, valueKey(e))
		}
		slices.SortFunc(elems, bytes.Compare)
		for _, e := range elems {
			part(e)
		}
	default:
		part(fmt.Appendf(nil, "%T", v))
		part(v.MarshalCedar())
	}
	return b.Bytes()
}

// maxPlans bounds the plans kept, one per principal, and
// maxPlanEntries the partial evaluations one plan keeps (an entry per
// policy and set of values of the tool attributes it reads), and each of
// its listings: of classes of tools, and of tools a policy sees by name.
const (
	maxPlans       = 256
	maxPlanEntries = 1024
)
