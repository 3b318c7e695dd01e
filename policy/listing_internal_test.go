package policy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go"

	"github.com/miniopenclaw/tool"
)

type listingArgs struct {
	Mode string `json:"mode,omitempty"`
	N    int    `json:"n,omitempty"`
	Flag bool   `json:"flag,omitempty"`
}

// TestListingMatchesDecisions pins listings, which fold partial
// evaluations per principal and share one fold among tools whose
// attributes agree, to per-tool decisions. Over seeded random policy
// sets, principals and registries of 40 tools (many of them alike but for
// their names, some named by the policies), each principal's View, made
// twice, through a fresh context, after a reload and for the same names
// with other annotations, must list exactly:
//   - the tools partial evaluation of the whole set lists, tool by tool
//     (referenceListable), and those the per-tool verdicts list;
//   - when no policy reads the context, the tools for which Authorize
//     (by an Authorizer that keeps nothing) lets the call run or asks
//     for an approval, and for which Cedar itself, given the whole set,
//     allows the call without an error: a policy that fails hides the
//     tool;
//   - when policies read the context, at least every tool some sampled
//     call of which Authorize lets run or asks for.
func TestListingMatchesDecisions(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	pscopes := []string{"principal", `principal in Role::"r0"`, `principal in Role::"r1"`, `principal == User::"u2"`, `principal is User`, `principal is Anonymous`}
	rscopes := []string{"resource", "resource", "resource", `resource == Tool::"t0"`, `resource == Tool::"t1"`, `resource == Tool::"t5"`,
		`resource is Tool`, `resource in Tool::"t2"`}
	static := []string{
		"", "", `when { resource.readOnly }`, `unless { resource.destructive }`, `when { resource.idempotent && resource.openWorld }`,
		`when { principal.tenant == "x" }`, `when { principal has tenant && principal.tenant == "x" }`,
		`when { principal has level && principal.level > 2 }`, `when { principal.level > 1 }`, `when { principal.suspended }`,
		`when { resource.title like "a*" }`, `when { resource.title == "" }`, `when { resource.title < 3 }`,
		`when { resource has title && resource.title == "ab" }`, `when { principal.tenant == "x" } when { false }`,
		`when { resource.readOnly } unless { principal has tenant && principal.tenant == "y" }`,
		`when { resource.name == "t3" }`, `when { resource.name like "t1*" }`, `when { Tool::"t3".readOnly }`,
		`when { resource == Tool::"t2" }`, `when { [Tool::"t0", Tool::"t4"].contains(resource) }`,
		`when { principal in Role::"r2" || resource.destructive }`, `when { if resource.readOnly then principal.level > 0 else true }`,
	}
	withContext := []string{
		`when { context.args.mode == "a" }`, `when { context.args.flag }`, `unless { context.args.mode == "b" }`,
		`when { context.args.n > 3 } when { principal has tenant }`, `when { principal has tenant } when { context.args.n > 3 }`,
		`when { context.args.missing == 1 }`, `when { resource.destructive || context.args.flag }`,
		`when { resource.readOnly && context.args has mode }`, `when { context.hour >= 0 }`,
		`when { context.args.n > 3 } when { false }`, `when { resource.name == "t4" && context.args.flag }`,
	}
	titles := []string{"", "", "a", "ab", "b"}
	users := []struct {
		p  Principal
		ok bool
	}{
		{Principal{ID: "u0", Roles: []string{"r0"}}, true},
		{Principal{ID: "u1", Roles: []string{"r1"}, Attrs: map[string]any{"tenant": "x"}}, true},
		{Principal{ID: "u2", Roles: []string{"r2"}, Attrs: map[string]any{"tenant": "y", "level": 3}}, true},
		{Principal{ID: "u2", Roles: []string{"r0", "r1"}, Attrs: map[string]any{"tenant": "x", "level": 1, "suspended": false}}, true},
		{Principal{ID: "u3", Attrs: map[string]any{"suspended": true, "level": 0}}, true},
		{Principal{}, false},
	}
	samples := []string{`{}`, `{"mode":"a","flag":true,"n":5}`, `{"mode":"b","n":1}`, `{"flag":true}`, `{"mode":"c","n":4}`}
	randomSet := func(ctxToo bool) string {
		var b strings.Builder
		for i := range 1 + rng.IntN(8) {
			effect := []string{"permit", "permit", "forbid", `@effect("ask") permit`}[rng.IntN(4)]
			cond := static[rng.IntN(len(static))]
			if ctxToo && rng.IntN(2) == 0 {
				cond = withContext[rng.IntN(len(withContext))]
			}
			fmt.Fprintf(&b, "@id(\"p%d\") %s (%s, action, %s) %s;\n", i, effect, pscopes[rng.IntN(len(pscopes))], rscopes[rng.IntN(len(rscopes))], cond)
		}
		return b.String()
	}
	randomRegistry := func() *tool.Registry {
		reg := tool.NewRegistry()
		for i := range 40 {
			ann := tool.Annotations{Title: titles[rng.IntN(len(titles))], ReadOnly: rng.IntN(2) == 0, Destructive: rng.IntN(3) == 0,
				Idempotent: rng.IntN(2) == 0, OpenWorld: rng.IntN(4) == 0}
			reg.Register(tool.Must(tool.New(fmt.Sprint("t", i), "T.", func(context.Context, listingArgs) (string, error) { return "", nil },
				tool.WithAnnotations(ann))))
		}
		return reg
	}
	roles := WithRoleParents(map[string][]string{"r2": {"r1"}})
	var listedN, hiddenN, failedN int
	for round := range 120 {
		ctxToo := round%2 == 1
		reg := randomRegistry()
		src := randomSet(ctxToo)
		a, err := New("random.cedar", []byte(src), roles)
		if err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, src)
		}
		perTool, err := New("random.cedar", []byte(src), roles, PerToolListing())
		if err != nil {
			t.Fatal(err)
		}
		kept := make([]context.Context, len(users)) // each principal's context, listing before and after the reload
		for i, u := range users {
			kept[i] = context.Background()
			if u.ok {
				kept[i] = WithPrincipal(kept[i], u.p)
			}
		}
		for pass := range 3 {
			switch pass {
			case 2: // the same names with other annotations, the same policies
				reg = randomRegistry()
			case 1: // a reload: contexts kept from before must follow it
				src = randomSet(ctxToo)
				for _, x := range []*Authorizer{a, perTool} {
					if err := x.Reload("random.cedar", []byte(src)); err != nil {
						t.Fatalf("round %d: %v\n%s", round, err, src)
					}
				}
			}
			// No quota: every asking call here is a request of its own.
			none, err := New("random.cedar", []byte(src), roles, WithCacheSize(0), WithMaxPendingApprovals(-1))
			if err != nil {
				t.Fatal(err)
			}
			for ui, u := range users {
				ctx, fresh := kept[ui], context.Background()
				if u.ok {
					fresh = WithPrincipal(fresh, u.p)
				}
				var want, gotPerTool []string
				for _, tl := range reg.List() {
					name, opts := tl.Name(), tool.OptionsOf(tl)
					if referenceListable(a, u.p, u.ok, name, opts) {
						want = append(want, name)
					}
					if perTool.CanList(fresh, name, opts) {
						gotPerTool = append(gotPerTool, name)
					}
					callable, failed := false, false
					for _, args := range samples {
						if !ctxToo && args != `{}` {
							break
						}
						err := none.Authorize(fresh, tool.AccessRequest{Name: name, Options: opts, Args: []byte(args)})
						var de *DeniedError
						if err == nil || errors.As(err, &de) && de.PendingApproval() != "" {
							callable = true
						}
						if errors.As(err, &de) && len(de.Decision.Errors) > 0 {
							failed = true
						}
					}
					if failed {
						failedN++
					}
					listed := slices.Contains(want, name)
					if callable && !listed {
						t.Fatalf("round %d pass %d: %+v may call %s but it is not listed; policies:\n%s", round, pass, u.p, name, src)
					}
					if !ctxToo {
						if listed != callable {
							t.Fatalf("round %d pass %d: %+v %s: listed %v, Authorize lets it run %v; policies:\n%s", round, pass, u.p, name, listed, callable, src)
						}
						if c := cedarAllows(a, u.p, u.ok, name, opts); c != listed {
							t.Fatalf("round %d pass %d: %+v %s: listed %v, Cedar allows without error %v; policies:\n%s", round, pass, u.p, name, listed, c, src)
						}
					}
				}
				listedN += len(want)
				hiddenN += reg.Len() - len(want)
				if !slices.Equal(gotPerTool, want) {
					t.Fatalf("round %d pass %d: %+v: per-tool verdicts list %v, want %v; policies:\n%s", round, pass, u.p, gotPerTool, want, src)
				}
				for view, c := range map[string]context.Context{"kept context": ctx, "fresh context": fresh} {
					for again := range 2 {
						if got := viewNames(a, c, reg); !slices.Equal(got, want) {
							t.Fatalf("round %d pass %d, %s, listing %d: %+v sees %v, want %v; policies:\n%s", round, pass, view, again, u.p, got, want, src)
						}
					}
				}
				for _, name := range want {
					tl, _ := reg.Get(name)
					if !a.CanList(ctx, name, tool.OptionsOf(tl)) {
						t.Fatalf("round %d: CanList(%s) disagrees with View", round, name)
					}
				}
			}
		}
	}
	// The generator must reach every case, or the test says little.
	if listedN == 0 || hiddenN == 0 || failedN == 0 {
		t.Errorf("listed %d, hidden %d, failing %d (principal, tool) pairs: the generator misses a case", listedN, hiddenN, failedN)
	}
}

func viewNames(a *Authorizer, ctx context.Context, reg *tool.Registry) []string {
	var names []string
	for _, tl := range a.View(ctx, reg).List() {
		names = append(names, tl.Name())
	}
	return names
}

// cedarAllows is whether Cedar, given the whole policy set, allows a call
// of the tool without an error, with an empty context (for policies that
// do not read it).
func cedarAllows(a *Authorizer, p Principal, ok bool, name string, opts tool.Options) bool {
	user := anonymous
	if ok {
		user = userEntity(p)
	}
	ents := &entities{user: user, tool: a.toolEntity(name, opts.Annotations).entity, roles: a.roles}
	dec, diag := cedar.Authorize(ruleSet(a.set.Load().rules), ents, cedar.Request{Principal: user.UID, Action: callAction, Resource: ents.tool.UID, Context: cedar.NewRecord(nil)})
	return dec == cedar.Allow && len(diag.Errors) == 0
}

// TestListingConcurrent lists from 8 goroutines at once, for one shared
// principal's context and for new ones, while a ninth reloads the same
// policies: every listing is the one made alone (run with -race).
func TestListingConcurrent(t *testing.T) {
	src := `permit (principal in Role::"r", action, resource) when { resource.readOnly };
forbid (principal, action, resource == Tool::"t3");
permit (principal, action, resource) when { resource.name like "t1*" && principal has tenant };`
	a, err := New("p.cedar", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	for i := range 200 {
		reg.Register(tool.Must(tool.New(fmt.Sprint("t", i), "T.", func(context.Context, listingArgs) (string, error) { return "", nil },
			tool.WithAnnotations(tool.Annotations{ReadOnly: i%3 != 0}))))
	}
	p := Principal{ID: "u", Roles: []string{"r"}, Attrs: map[string]any{"tenant": "x"}}
	want := viewNames(a, WithPrincipal(context.Background(), p), reg)
	if len(want) == 0 || len(want) == reg.Len() {
		t.Fatalf("the principal sees %d of %d tools: the test says little", len(want), reg.Len())
	}
	shared := WithPrincipal(context.Background(), p)
	done := make(chan struct{})
	errs := make(chan error, 9)
	go func() {
		defer func() { errs <- nil }()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := a.Reload("p.cedar", []byte(src)); err != nil {
				errs <- err
				return
			}
		}
	}()
	for g := range 8 {
		go func() {
			for i := range 20 {
				ctx := shared
				if i%2 == 1 {
					ctx = WithPrincipal(context.Background(), Principal{ID: fmt.Sprint("u", g, i), Roles: p.Roles, Attrs: p.Attrs})
				}
				if got := viewNames(a, ctx, reg); !slices.Equal(got, want) {
					errs <- fmt.Errorf("goroutine %d listing %d: %v, want %v", g, i, got, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(done)
	if err := <-errs; err != nil {
		t.Error(err)
	}
}
