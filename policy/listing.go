package policy

import (
	"github.com/cedar-policy/cedar-go/x/exp/eval"

	"github.com/miniopenclaw/tool"
)

// Listings. Whether a principal may see a tool is a fold over the partial
// evaluations (context unknown) of the policies that may apply to it; see
// listed. Those partial evaluations depend on the principal, the action
// (always Action::"call") and, for each policy, on what of the tool it
// can see (toolDependence): a policy scoped to a tool by name, or whose
// conditions read the tool's name or identity, is evaluated per tool; any
// other sees at most the attributes in its mask. So two tools that no
// policy is scoped to by name, while no unscoped policy reads a tool's
// name, are listed alike when their annotations agree on the attributes
// some policy reads (compiled.classMask): one fold, kept in the
// principal's plan, decides every tool of that class. Tools a policy
// sees by name are folded one by one, with the class's fold as their
// start, and kept in the plan by name and annotations.

// listed accumulates what partial evaluations say of listing a tool, as
// judge does for a verdict: the tool is listed when some permit may apply
// to some context, no forbid applies whatever the context, and no policy
// fails whatever the context.
type listed struct{ permitted, blocked bool }

func (l *listed) add(r *rule, res partial) {
	l.blocked = l.blocked || res.fails
	switch {
	case !res.keep:
	case !r.forbid:
		l.permitted = true
	case !res.conds:
		l.blocked = true
	}
}

func (l listed) ok() bool { return l.permitted && !l.blocked }

// indexListing splits c's rules for listings: by the tool they are
// scoped to by name, else by whether their partial evaluation depends on
// the tool's name.
func (c *compiled) indexListing() {
	c.scoped = map[string][]*rule{}
	for _, r := range c.rules {
		switch {
		case r.only != "":
			c.scoped[r.only] = append(c.scoped[r.only], r)
		case r.dep == onTool:
			c.byName = append(c.byName, r)
		default:
			c.byAttrs = append(c.byAttrs, r)
			c.classMask |= r.mask
		}
	}
}

// toolListing is a tool's listing kept in a plan, with the annotations it
// was made for.
type toolListing struct {
	ann tool.Annotations
	ok  bool
}

// listable reports whether who may see the tool under the policies of
// generation c: exactly what judge's fold over c.forTool(name) gives, for
// the rules that forTool returns are c.scoped[name], c.byName and
// c.byAttrs.
func (a *Authorizer) listable(c *compiled, who *carried, name string, ann tool.Annotations) bool {
	if who.build(); who.refused != nil {
		return false
	}
	if a.perToolListing {
		return a.verdict(c, who, name, ann).listable
	}
	pl := who.planFor(c)
	scoped := c.scoped[name]
	if len(scoped) == 0 && len(c.byName) == 0 {
		return a.class(c, who, pl, name, ann).ok()
	}
	if pl != nil {
		pl.mu.Lock()
		t, found := pl.tools[name]
		pl.mu.Unlock()
		if found && t.ann == ann {
			return t.ok
		}
	}
	l := a.class(c, who, pl, name, ann)
	env := a.listEnv(who, name, ann)
	for _, r := range scoped {
		l.add(r, partialOf(env, r))
	}
	for _, r := range c.byName {
		l.add(r, partialOf(env, r))
	}
	if pl != nil {
		pl.mu.Lock()
		if _, found := pl.tools[name]; found || len(pl.tools) < maxPlanEntries {
			if pl.tools == nil {
				pl.tools = map[string]toolListing{}
			}
			pl.tools[name] = toolListing{ann: ann, ok: l.ok()}
		}
		pl.mu.Unlock()
	}
	return l.ok()
}

// class returns the fold of c.byAttrs for who and a tool with the
// annotations ann, from pl when it has it (pl may be nil).
func (a *Authorizer) class(c *compiled, who *carried, pl *plan, name string, ann tool.Annotations) listed {
	k := masked(ann, c.classMask)
	if pl != nil {
		pl.mu.Lock()
		l, found := pl.classes[k]
		pl.mu.Unlock()
		if found {
			return l
		}
	}
	var l listed
	if len(c.byAttrs) > 0 {
		env := a.listEnv(who, name, ann)
		for _, r := range c.byAttrs {
			l.add(r, pl.eval(env, r, ann))
		}
	}
	if pl != nil {
		pl.mu.Lock()
		if len(pl.classes) < maxPlanEntries {
			if pl.classes == nil {
				pl.classes = map[tool.Annotations]listed{}
			}
			pl.classes[k] = l
		}
		pl.mu.Unlock()
	}
	return l
}

// listEnv is the environment of a partial evaluation for who and the
// tool, with the context unknown.
func (a *Authorizer) listEnv(who *carried, name string, ann tool.Annotations) eval.Env {
	ents := &entities{user: who.userEntity(), tool: a.toolEntity(name, ann).entity, roles: a.roles}
	return eval.Env{
		Entities:  ents,
		Principal: ents.user.UID,
		Action:    callAction,
		Resource:  ents.tool.UID,
		Context:   contextVariable,
	}
}

// planFor returns c's plan of the principal, kept on it for the next
// tool of a listing; nil when c keeps no plans.
func (c *carried) planFor(set *compiled) *plan {
	if p := c.plan.Load(); p != nil && p.of == set.plans {
		return p
	}
	p := set.plans.get(c.cacheKey())
	if p != nil {
		c.plan.Store(p)
	}
	return p
}
