package tool

import (
	"context"
	"encoding/json"
	"fmt"
)

// A View is a window on a [Registry] that shows and runs only some of its
// tools: those a skill needs, or those a user may list. It follows the
// registry: a tool registered later appears in it if keep accepts it. A
// tool outside the view is, through the view, a tool that does not exist.
// Calls through a View run as [Registry.Execute] runs them, under the
// registry's [Authorizer] if it has one. A View is safe for concurrent
// use.
type View struct {
	reg  *Registry
	keep func(name string, opts Options) bool
}

// View returns a view of r limited to the tools keep accepts. keep is
// called with each tool's name and options whenever the view lists or
// runs tools; it must be safe for concurrent use. A nil keep accepts
// every tool.
func (r *Registry) View(keep func(name string, opts Options) bool) *View {
	if keep == nil {
		keep = func(string, Options) bool { return true }
	}
	return &View{reg: r, keep: keep}
}

// Only returns the view of r limited to names, for a skill or role that
// needs exactly those tools, or an error wrapping [ErrNotFound] that names
// the first of names r lacks.
func (r *Registry) Only(names ...string) (*View, error) {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	v := r.View(func(name string, _ Options) bool { return set[name] })
	if err := v.Require(names...); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *View) entries() []*entry {
	all := v.reg.entries()
	kept := make([]*entry, 0, len(all))
	for _, e := range all {
		if v.keep(e.name, e.opts) {
			kept = append(kept, e)
		}
	}
	return kept
}

// List returns the tools in the view in name order.
func (v *View) List() []Tool {
	entries := v.entries()
	tools := make([]Tool, len(entries))
	for i, e := range entries {
		tools[i] = e.tool
	}
	return tools
}

// Get returns the tool registered under name if it is in the view.
func (v *View) Get(name string) (Tool, bool) {
	e := v.reg.lookup(name)
	if e == nil || !v.keep(e.name, e.opts) {
		return nil, false
	}
	return e.tool, true
}

// Definitions returns the tools in the view in the form of
// [Registry.Definitions].
func (v *View) Definitions() json.RawMessage {
	return definitionsOf(v.entries())
}

// Execute runs a call as [Registry.Execute] does, except that a tool
// outside the view gives a [KindNotFound] result that suggests and lists
// only tools in the view.
func (v *View) Execute(ctx context.Context, name string, args json.RawMessage) Result {
	e := v.reg.lookup(name)
	if e == nil || !v.keep(e.name, e.opts) {
		res, _ := v.reg.notFoundAmong(name, v.entries())
		return res
	}
	res, _ := v.reg.run(ctx, e, args, nil)
	return res
}

// Require returns an error naming the first of names that is not in the
// view, such as a tool a skill needs that is missing or hidden; nil when
// all are there.
func (v *View) Require(names ...string) error {
	for _, name := range names {
		if _, ok := v.Get(name); !ok {
			return fmt.Errorf("required tool %q is not available: %w", name, ErrNotFound)
		}
	}
	return nil
}
