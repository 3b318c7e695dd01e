package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/x/exp/eval"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy/internal/residual"
)

// TestCacheBounded sends a stream of principals, each never seen before,
// and checks that the verdicts kept stay within the bound, and that a
// call with a cached verdict allocates nothing.
func TestCacheBounded(t *testing.T) {
	a, err := New("p.cedar", []byte(`permit (principal, action, resource) when { principal has n && principal.n > 5 };`), WithCacheSize(64))
	if err != nil {
		t.Fatal(err)
	}
	opts := tool.Options{Annotations: tool.Annotations{ReadOnly: true}}
	for i := range 5000 {
		ctx := WithPrincipal(context.Background(), Principal{ID: fmt.Sprint("u", i), Attrs: map[string]any{"n": i % 10}})
		if got, want := a.CanList(ctx, "t", opts), i%10 > 5; got != want {
			t.Fatalf("principal %d: listed %v", i, got)
		}
		if n := a.set.Load().cache.len(); n > 64 {
			t.Fatalf("after %d principals, %d verdicts are kept", i+1, n)
		}
	}
	// One plan per principal, each bounded, even when a policy reads an
	// attribute every tool has its own value of.
	titles, err := New("p.cedar", []byte(`permit (principal, action, resource) when { resource.title like "a*" };`))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * maxPlans {
		ctx := WithPrincipal(context.Background(), Principal{ID: fmt.Sprint("u", i%(2*maxPlans))})
		for j := range 4 {
			titles.CanList(ctx, fmt.Sprint("t", i, j), tool.Options{Annotations: tool.Annotations{Title: fmt.Sprint("a", i, j)}})
		}
	}
	ctx0 := WithPrincipal(context.Background(), Principal{ID: "many"})
	for j := range 2 * maxPlanEntries {
		titles.CanList(ctx0, fmt.Sprint("t", j), tool.Options{Annotations: tool.Annotations{Title: fmt.Sprint("a", j)}})
	}
	if p := titles.subject(ctx0).plan.Load(); len(p.classes) != maxPlanEntries {
		t.Errorf("the plan of a principal that listed %d titles keeps %d classes, want %d", 2*maxPlanEntries, len(p.classes), maxPlanEntries)
	}
	// Listings keep a fold per class of tools and, for tools a policy
	// sees by name, one per tool: both bounded.
	names, err := New("p.cedar", []byte(`permit (principal, action, resource) when { resource.name like "t1*" };`))
	if err != nil {
		t.Fatal(err)
	}
	for j := range 2 * maxPlanEntries {
		if got, want := names.CanList(ctx0, fmt.Sprint("t", j), tool.Options{}), strings.HasPrefix(fmt.Sprint("t", j), "t1"); got != want {
			t.Fatalf("t%d: listed %v", j, got)
		}
	}
	for _, x := range []*Authorizer{titles, names} {
		ps := x.set.Load().plans
		if len(ps.m) > maxPlans {
			t.Errorf("%d plans kept", len(ps.m))
		}
		for _, p := range ps.m {
			if len(p.m) > maxPlanEntries || len(p.classes) > maxPlanEntries || len(p.tools) > maxPlanEntries {
				t.Errorf("a plan keeps %d partial evaluations, %d classes, %d tools", len(p.m), len(p.classes), len(p.tools))
			}
		}
	}
	if p := names.subject(ctx0).plan.Load(); len(p.tools) != maxPlanEntries {
		t.Errorf("the plan of a principal that listed %d tools by name keeps %d, want %d", 2*maxPlanEntries, len(p.tools), maxPlanEntries)
	}
	ctx := WithPrincipal(context.Background(), Principal{ID: "u", Attrs: map[string]any{"n": 6}})
	req := tool.AccessRequest{Name: "t", Options: opts, Args: []byte(`{}`)}
	if err := a.Authorize(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = a.Authorize(ctx, req) }); n != 0 {
		t.Errorf("a cached decision allocates %v times", n)
	}

	none, err := New("p.cedar", []byte(`permit (principal, action, resource);`), WithCacheSize(0))
	if err != nil {
		t.Fatal(err)
	}
	if !none.CanList(ctx, "t", opts) || none.set.Load().cache.len() != 0 {
		t.Errorf("WithCacheSize(0) kept %d verdicts", none.set.Load().cache.len())
	}
}

// reference decides a call as the Authorizer did before it cached
// anything: every policy, evaluated by Cedar with the whole context;
// then, as the Authorizer's rules are, a policy Cedar could not evaluate
// refuses the call unless a forbid applied, and so does a number that is
// not a whole number in 64 bits (by math/big) in an argument that a policy
// that may apply reads (those of the verdict's rules).
func reference(a *Authorizer, p Principal, ok bool, req tool.AccessRequest) Decision {
	c := a.set.Load()
	d := Decision{Principal: p, Tool: req.Name}
	user := anonymous
	if ok {
		user = userEntity(p)
	}
	err := residual.Strict(req.Args) // arguments a caller gave must be strict
	var argRec cedar.Record
	if err == nil {
		argRec, err = residual.ArgsRecord(req.Args, a.paths)
	}
	if err != nil {
		d = unreadable(d)
		d.Reason = argsReason(req.Name, err)
		return d
	}
	if v := c.judge(&entities{user: user, tool: a.toolEntity(req.Name, req.Options.Annotations).entity, roles: a.roles},
		a.toolEntity(req.Name, req.Options.Annotations), req.Name, nil); !v.static {
		if le := residual.FirstList(req.Args, v.use); le != nil {
			d = unreadable(d)
			d.Reason = argsReason(req.Name, le)
			d.Policies = v.rules.reading(le.Top)
			return d
		}
		if top, at, lit, found := referenceInexact(req.Args, v.use); found {
			d = unreadable(d)
			d.Reason = argsReason(req.Name, &residual.NumberError{At: at, Lit: lit})
			for _, r := range v.rules {
				if r.use.All || slices.Contains(r.use.Args, top) {
					d.Policies = append(d.Policies, string(r.id))
				}
			}
			return d
		}
	}
	now := a.now()
	ents := &entities{user: user, tool: a.toolEntity(req.Name, req.Options.Annotations).entity, roles: a.roles}
	cr := cedar.Request{Principal: user.UID, Action: callAction, Resource: ents.tool.UID, Context: cedar.NewRecord(cedar.RecordMap{
		"args": argRec, "now": cedar.NewDatetime(now), "hour": cedar.Long(now.UTC().Hour()),
	})}
	dec, diag := cedar.Authorize(ruleSet(c.rules), ents, cr)
	for _, e := range diag.Errors {
		d.Errors = append(d.Errors, e.String())
	}
	if len(diag.Errors) > 0 && (dec == cedar.Allow || len(diag.Reasons) == 0) {
		d.Effect = Deny
		for _, e := range diag.Errors {
			d.Policies = append(d.Policies, string(e.PolicyID))
		}
		d.Reason = failedReason(req.Name, diag.Errors[0].Message)
		return d
	}
	var asks []string
	for _, r := range diag.Reasons {
		d.Policies = append(d.Policies, string(r.PolicyID))
		rr := c.byID[r.PolicyID]
		if dec == cedar.Deny && d.Reason == "" && rr.reason != "" {
			d.Reason = rr.reason
		}
		if rr.ask {
			asks = append(asks, string(r.PolicyID))
		}
	}
	switch {
	case dec == cedar.Deny:
		d.Effect = Deny
		if d.Reason == "" {
			d.Reason = deniedReason(req.Name)
		}
	case len(asks) > 0:
		d.Effect, d.Policies, d.Reason = Ask, asks, askReason(req.Name)
	default:
		d.Effect = Allow
	}
	return d
}

// referenceListable is whether a principal may list a tool as the
// Authorizer decided it before it cached anything: some permit may apply,
// by partial evaluation of every policy, and no forbid applies whatever
// the context, nor does any policy fail whatever the context.
func referenceListable(a *Authorizer, p Principal, ok bool, name string, opts tool.Options) bool {
	user := anonymous
	if ok {
		user = userEntity(p)
	}
	ents := &entities{user: user, tool: a.toolEntity(name, opts.Annotations).entity, roles: a.roles}
	env := eval.Env{Entities: ents, Principal: user.UID, Action: callAction, Resource: ents.tool.UID, Context: eval.Variable("context")}
	permitted := false
	for _, r := range a.set.Load().rules {
		residual, keep := eval.PartialPolicy(env, r.ast)
		if keep && len(residual.Conditions) > 0 {
			if _, fails := eval.ToPartialError(residual.Conditions[0].Body); fails {
				return false
			}
		}
		switch {
		case !keep:
		case r.forbid && len(residual.Conditions) == 0:
			return false
		case !r.forbid:
			permitted = true
		}
	}
	return permitted
}

// TestCachedDecisionsMatchCedar compares, over random policy sets,
// principals, tools and arguments, the Authorizer's decisions (first
// when nothing is cached, then from its cache) with Cedar's evaluation of
// the whole policy set: effect, deciding policies, reason and errors; and
// its listings with partial evaluation of the whole set.
func TestCachedDecisionsMatchCedar(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pscopes := []string{"principal", `principal in Role::"r0"`, `principal in Role::"r1"`, `principal == User::"u2"`, `principal is User`}
	rscopes := []string{"resource", `resource == Tool::"t0"`, `resource == Tool::"t1"`, `resource is Tool`, `resource in Tool::"t2"`}
	conds := []string{
		"", `when { context.args.mode == "a" }`, `when { context.args.flag }`, `when { resource.readOnly }`,
		`unless { context.args.mode == "b" }`, `when { principal.tenant == "x" }`, `when { principal has tenant && principal.tenant == "x" }`,
		`when { context.args.n > 3 } when { principal has tenant }`, `when { principal has tenant } when { context.args.n > 3 }`,
		`when { context.args.missing == 1 }`, `when { resource.destructive || context.args.flag }`,
		`when { principal has level && principal.level > 2 && context.args has n }`, `when { context.hour >= 0 }`,
		`when { principal.tenant == "x" } when { false }`, `when { context.args.n > 3 } when { false }`,
		`when { context.args == {"flag": true} }`, `when { context has now && context.args has mode && context.args.mode == "a" }`,
		`when { context.args.z.deep.contains(2) }`,
		`when { resource.name == "t3" }`, `when { Tool::"t3".readOnly }`, `when { resource == Tool::"t2" }`,
		`when { [Tool::"t0"].contains(resource) || context.args.flag }`, `when { resource has title && resource.title == "" }`,
	}
	users := []struct {
		p  Principal
		ok bool
	}{
		{Principal{ID: "u0", Roles: []string{"r0"}}, true},
		{Principal{ID: "u1", Roles: []string{"r1"}, Attrs: map[string]any{"tenant": "x"}}, true},
		{Principal{ID: "u2", Roles: []string{"r2"}, Attrs: map[string]any{"tenant": "y", "level": 3}}, true},
		{Principal{ID: "u2", Roles: []string{"r0"}, Attrs: map[string]any{"tenant": "x", "level": 1}}, true},
		{Principal{}, false},
	}
	argSets := []string{`{}`, `{"mode":"a","flag":true,"n":5}`, `{"mode":"b","flag":false,"n":1}`, `{"mode":"c","n":4}`, `{"flag":true}`,
		`{"mo\u0064e":"a","n":5}`, ` { "n" : 5 , "z" : {"deep": [1, 2, {"a": null}], "s": "x\"y"} } `, `{"x":[1,{"y":tru}],"mode":"a"}`,
		`{"mode":"a","x":"\q"}`, `{"mode":"a","x":1e400,"flag":true}`, `[1]`, `{"mode":"a",}`,
		`{"mode":"a","n":5.0}`, `{"n":4.5,"flag":true}`, `{"mode":"a","z":{"deep":[1.5, null]}}`, `{"mode":"b","n":1e19}`}
	for round := range 150 {
		var b strings.Builder
		for i := range 1 + rng.IntN(7) {
			effect := []string{"permit", "forbid", `@effect("ask") permit`}[rng.IntN(3)]
			fmt.Fprintf(&b, "@id(\"p%d\") @reason(%q) %s (%s, action, %s) %s;\n", i, []string{"", "because"}[rng.IntN(2)], effect,
				pscopes[rng.IntN(len(pscopes))], rscopes[rng.IntN(len(rscopes))], conds[rng.IntN(len(conds))])
		}
		src := b.String()
		a, err := New("random.cedar", []byte(src), WithRoleParents(map[string][]string{"r2": {"r1"}}),
			WithClock(func() time.Time { return time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC) }))
		if err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, src)
		}
		for pass := range 2 {
			for _, u := range users {
				ctx := context.Background()
				if u.ok {
					ctx = WithPrincipal(ctx, u.p)
				}
				for _, ti := range rng.Perm(4) { // t0 and t3 differ only in name
					name := fmt.Sprint("t", ti)
					opts := tool.Options{Annotations: tool.Annotations{ReadOnly: ti != 1, Destructive: ti == 2}}
					if got, want := a.CanList(ctx, name, opts), referenceListable(a, u.p, u.ok, name, opts); got != want {
						t.Fatalf("round %d pass %d: %+v %s: listed %v, want %v; policies:\n%s", round, pass, u.p, name, got, want, src)
					}
					for _, args := range argSets {
						req := tool.AccessRequest{Name: name, Options: opts, Args: []byte(args)}
						got, want := a.Decide(ctx, req), reference(a, u.p, u.ok, req)
						if got.Effect != want.Effect || !slices.Equal(got.Policies, want.Policies) || got.Reason != want.Reason || !slices.Equal(got.Errors, want.Errors) {
							t.Fatalf("round %d pass %d: %+v %s %s:\n got %+v\nwant %+v\npolicies:\n%s", round, pass, u.p, name, args, got, want, src)
						}
					}
				}
			}
		}
	}
}

// TestLatestVerdictFits checks that the verdict a principal's context
// keeps of its latest call is used only for a call it fits: one context
// goes through calls of another tool, with other annotations, to another
// Authorizer, after a reload, and to an Authorizer that keeps no
// verdicts, each answered as a fresh context would be.
func TestLatestVerdictFits(t *testing.T) {
	src := `permit (principal, action, resource == Tool::"a") when { resource.readOnly };
forbid (principal, action, resource == Tool::"b");`
	first, err := New("p.cedar", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	other, err := New("p.cedar", []byte(`permit (principal, action, resource);`))
	if err != nil {
		t.Fatal(err)
	}
	none, err := New("p.cedar", []byte(`forbid (principal, action, resource == Tool::"a");`), WithCacheSize(0))
	if err != nil {
		t.Fatal(err)
	}
	ro := tool.Options{Annotations: tool.Annotations{ReadOnly: true}}
	ctx := WithPrincipal(context.Background(), Principal{ID: "u"})
	steps := []struct {
		name   string
		a      *Authorizer
		tool   string
		opts   tool.Options
		reload string // policies to load before the call
		want   Effect
	}{
		{"first call", first, "a", ro, "", Allow},
		{"same tool again", first, "a", ro, "", Allow},
		{"other annotations", first, "a", tool.Options{}, "", Deny},
		{"back to read-only", first, "a", ro, "", Allow},
		{"other tool", first, "b", ro, "", Deny},
		{"other Authorizer", other, "b", ro, "", Allow},
		{"back to the first", first, "b", ro, "", Deny},
		{"after a reload", first, "b", ro, `permit (principal, action, resource);`, Allow},
		{"no cache", none, "a", ro, "", Deny},
		{"no cache, again", none, "a", ro, "", Deny},
	}
	for _, st := range steps {
		if st.reload != "" {
			if err := st.a.Reload("p.cedar", []byte(st.reload)); err != nil {
				t.Fatal(err)
			}
		}
		req := tool.AccessRequest{Name: st.tool, Options: st.opts, Args: []byte(`{}`)}
		got := st.a.Decide(ctx, req)
		fresh := st.a.Decide(WithPrincipal(context.Background(), Principal{ID: "u"}), req)
		if got.Effect != st.want || fresh.Effect != st.want {
			t.Errorf("%s: %s, a fresh context %s, want %s", st.name, got.Effect, fresh.Effect, st.want)
		}
		if v := st.a.subject(ctx).last.Load(); st.a == none && v != nil && v.set == none.set.Load() {
			t.Errorf("%s: an Authorizer that keeps no verdicts left one on the context", st.name)
		}
	}
}

// referenceInexact finds, by math/big, the first number in the members of
// args that use reads that is not a whole number in 64 bits, or null in
// an array, in key order, and the member it is in.
func referenceInexact(args []byte, use residual.Use) (top, at, lit string, found bool) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return "", "", "", false
	}
	var walk func(v any, at string) (string, string, bool)
	walk = func(v any, at string) (string, string, bool) {
		switch v := v.(type) {
		case json.Number:
			r, ok := new(big.Rat).SetString(string(v))
			if !ok || !r.IsInt() || !r.Num().IsInt64() {
				return at, string(v), true
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if a, l, f := walk(v[k], at+"."+residual.ArgName(k)); f {
					return a, l, f
				}
			}
		case []any:
			for i, e := range v {
				if e == nil {
					return fmt.Sprintf("%s[%d]", at, i), "", true
				}
				if a, l, f := walk(e, fmt.Sprintf("%s[%d]", at, i)); f {
					return a, l, f
				}
			}
		}
		return "", "", false
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if use.All || slices.Contains(use.Args, k) {
			if a, l, f := walk(m[k], residual.ArgName(k)); f {
				return k, a, l, f
			}
		}
	}
	return "", "", "", false
}
