package policy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy/internal/residual"
)

// randomExpr returns a random Cedar expression over context.args, mostly
// within what the fast path supports, sometimes outside it (nested
// arguments, decimals, the principal, the time), so that both the fast
// path and its fallback are exercised.
func randomExpr(rng *rand.Rand, depth int) string {
	if depth <= 0 || rng.IntN(3) == 0 {
		return "(" + randomLeaf(rng) + ")"
	}
	sub := func() string { return randomExpr(rng, depth-1) }
	switch rng.IntN(5) {
	case 0:
		return "(" + sub() + " && " + sub() + ")"
	case 1:
		return "(" + sub() + " || " + sub() + ")"
	case 2:
		return "!(" + sub() + ")"
	case 3:
		return "(if " + sub() + " then " + sub() + " else " + sub() + ")"
	}
	return "(" + sub() + " == " + sub() + ")"
}

// randomLeaf returns a random comparison, test or boolean: mostly
// well-typed for arguments of the usual types (a, b and path strings, n
// a long, f a boolean), sometimes not, sometimes outside the fast path.
func randomLeaf(rng *rand.Rand) string {
	args := []string{"a", "b", "n", "f", "o", "path"}
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	str := func() string {
		return pick("context.args.a", "context.args.b", "context.args.path", `"x"`, `"docs/a"`, `""`, `"a*b"`, `"secrets/k"`)
	}
	long := func() string { return pick("context.args.n", fmt.Sprint(rng.IntN(7)-2)) }
	switch rng.IntN(20) {
	case 0, 1, 2:
		return "context.args has " + pick(args...)
	case 3, 4:
		return pick("context.args.a", "context.args.path", "context.args.b") + pick(` like "docs/*"`, ` like "*"`, ` like "x"`, ` like "a\*b"`, ` like "*/*"`, ` like "*secret*"`,
			` like ""`, ` like "*/k"`, ` like "a*b"`, ` like "*a\*b*"`, ` like "docs*k"`, ` like "*s*k"`)
	case 5:
		return "[" + pick(`"x"`, `"docs/a"`, `""`, "1", "true") + ", " + pick(`"a*b"`, "3", "-2", "false", "context.args.a") + "].contains(" + pick(str(), long()) + ")"
	case 6, 7:
		return pick("context.args.f", "true", "false")
	case 8, 9, 10:
		return str() + pick(" == ", " != ") + str()
	case 11, 12, 13, 14:
		return long() + pick(" == ", " != ", " < ", " <= ", " > ", " >= ") + long()
	case 15: // outside the fast path
		return pick(`context.args.o.x == 1`, `context.args.n == decimal("2.5")`, `principal.tenant == context.args.a`,
			`context.hour >= 0`, `context.args.n + 1 > 2`, `context.args.o has x`, `context.args.n.lessThan(decimal("1.0"))`,
			`[1, [2]].contains(context.args.n)`, `context.args.b in [User::"u0"]`, `[context.args.a].contains("x")`)
	}
	// Anything, typed or not.
	any := func() string { return pick(str(), long(), "context.args.f", "context.args.o", "true") }
	return any() + pick(" == ", " != ", " < ", " >= ") + any()
}

// randomArgs returns a random JSON object of arguments: scalars the fast
// path reads, values it leaves to Cedar (records, arrays, decimals,
// numbers Cedar leaves out), nulls, escaped keys, and now and then a
// repeated or case-variant key or malformed input.
func randomArgs(rng *rand.Rand) string {
	strs := []string{`"x"`, `"docs/a"`, `"docs/../secrets/k"`, `""`, `"a*b"`, `"x\"y"`, `"\u0078"`, `"secrets/k"`, `"my-secret"`}
	longs := []string{`0`, `1`, `-2`, `3`, `4`, `3e0`, `-0.0`, `40e-1`}
	odd := []string{`2.0`, `2.5`, `1.234567`, `1e3`, `9223372036854775808`, `null`, `{"x":1}`, `[1,2]`, `[]`, `{}`, `"1"`, `true`,
		`1e-9`, `4700000000000000000.0`, `[null]`, `[1,2.5]`, `{"x":1e300}`}
	typed := map[string][]string{`"a"`: strs, `"b"`: strs, `"path"`: strs, `"n"`: longs, `"f"`: {`true`, `false`}, `"o"`: {`{"x":1}`, `{}`}}
	keys := []string{`"a"`, `"b"`, `"n"`, `"f"`, `"o"`, `"path"`, `"\u0061"`, `"other"`}
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keys {
		if rng.IntN(3) == 0 {
			continue
		}
		if i == 6 && strings.Contains(b.String(), `"a":`) {
			continue // \u0061 is a: a repeated key is refused (see residual.Strict)
		}
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		vals := typed[k]
		if vals == nil || rng.IntN(8) == 0 {
			vals = odd
		}
		if i == 6 { // \u0061 is a, written only when "a" was not
			vals = strs
		}
		fmt.Fprintf(&b, "%s:%s", k, vals[rng.IntN(len(vals))])
	}
	b.WriteString("}")
	switch rng.IntN(40) {
	case 0:
		return `{"a":"x",}`
	case 1:
		return `{"a":"x"} trailing`
	case 2:
		return ``
	case 3:
		return `[1]`
	case 4:
		return `{"a":"x","\u0061":"y"}`
	case 5:
		return `{"n":1,"N":2}`
	}
	return b.String()
}

// randomPolicies returns a random set of one to four policies over the
// tools t0 and t1, their conditions from randomExpr.
func randomPolicies(rng *rand.Rand) string {
	var b strings.Builder
	for i := range 1 + rng.IntN(4) {
		effect := []string{"permit", "forbid", `@effect("ask") permit`}[rng.IntN(3)]
		pscope := []string{"principal", `principal in Role::"r0"`, `principal == User::"u1"`}[rng.IntN(3)]
		rscope := []string{"resource", `resource == Tool::"t0"`, `resource == Tool::"t1"`}[rng.IntN(3)]
		var conds string
		for range rng.IntN(3) {
			conds += fmt.Sprintf(" %s { %s }", []string{"when", "unless"}[rng.IntN(2)], randomExpr(rng, 2))
		}
		if rng.IntN(6) == 0 {
			conds += ` when { principal has tenant }`
		}
		fmt.Fprintf(&b, "@id(\"p%d\") @reason(%q) %s (%s, action, %s)%s;\n", i, []string{"", "because"}[rng.IntN(2)], effect, pscope, rscope, conds)
	}
	return b.String()
}

// randomAuthorizer returns an Authorizer of random policies, with path a
// path argument and a fixed clock.
func randomAuthorizer(t testing.TB, seed uint64, rng *rand.Rand) (*Authorizer, string) {
	src := randomPolicies(rng)
	a, err := New("random.cedar", []byte(src), WithPathArguments("path"),
		WithClock(func() time.Time { return time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC) }))
	if err != nil {
		t.Fatalf("seed %d: %v\n%s", seed, err, src)
	}
	return a, src
}

// fastDifferential checks, for one seed, that a random policy set's
// decisions equal Cedar's over the whole set and the whole context (see
// reference), and, for each call the fast path answers, that its answer
// is that decision. It returns how many calls the fast path answered and
// how many it could have been asked.
func fastDifferential(t testing.TB, seed uint64) (fast, total int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	a, src := randomAuthorizer(t, seed, rng)
	users := []Principal{{ID: "u0", Roles: []string{"r0"}}, {ID: "u1", Attrs: map[string]any{"tenant": "x"}}}
	for range 20 {
		args := randomArgs(rng)
		for _, u := range users {
			ctx := WithPrincipal(context.Background(), u)
			for _, name := range []string{"t0", "t1"} {
				req := tool.AccessRequest{Name: name, Args: []byte(args)}
				want := reference(a, u, true, req)
				got := a.Decide(ctx, req)
				if got.Effect != want.Effect || !slices.Equal(got.Policies, want.Policies) || got.Reason != want.Reason || !slices.Equal(got.Errors, want.Errors) {
					t.Fatalf("seed %d: %s %s %s:\n got %+v\nwant %+v\npolicies:\n%s", seed, u.ID, name, args, got, want, src)
				}
				v := a.verdict(a.set.Load(), a.subject(ctx), name, req.Options.Annotations)
				if v.static {
					continue
				}
				total++
				if fastFor(v) == nil || residual.Strict(req.Args) != nil || listCompared(v, &req) != nil {
					continue // no fast program, or arguments refused before it runs
				}
				fd := Decision{Principal: u, Tool: name}
				ok := a.decideFast(v, &fd, &req)
				if !ok {
					continue
				}
				fast++
				if fd.Effect != want.Effect || !slices.Equal(fd.Policies, want.Policies) || fd.Reason != want.Reason || len(want.Errors) > 0 {
					t.Fatalf("seed %d: fast path, %s %s %s:\n got %+v\nwant %+v\npolicies:\n%s", seed, u.ID, name, args, fd, want, src)
				}
			}
		}
	}
	return fast, total
}

// differentialSeeds seed the fuzz targets of the differential checks.
var differentialSeeds = []uint64{1, 7, 42, 1000, 123456789}

// runDifferential runs a differential check (fast path vs Cedar) over
// seeds seeds (short in -short mode) and checks that the fast path
// answered at least a quarter of the calls that depend on the arguments,
// so that the comparison is not vacuous. check returns how many calls
// the fast path answered and how many it could have.
func runDifferential(t *testing.T, seeds, short int, what string, check func(testing.TB, uint64) (int, int)) {
	t.Helper()
	if testing.Short() {
		seeds = short
	}
	var answered, total int
	for seed := range uint64(seeds) {
		a, n := check(t, seed)
		answered, total = answered+a, total+n
	}
	t.Logf("the fast path answered %d of %d calls that depend on the arguments%s", answered, total, what)
	if answered < total/4 {
		t.Errorf("the fast path answered only %d of %d calls%s", answered, total, what)
	}
}

// TestFastPathMatchesCedar runs the differential check over many seeds.
func TestFastPathMatchesCedar(t *testing.T) {
	runDifferential(t, 600, 100, "", fastDifferential)
}

// FuzzFastPathMatchesCedar is the differential check driven by the
// fuzzer's seed; its corpus runs with the tests.
func FuzzFastPathMatchesCedar(f *testing.F) {
	for _, s := range differentialSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { fastDifferential(t, seed) })
}

// TestFastPathTable pins the fast path's answer, and that it answers, on
// hand-picked cases at the edge of what it models.
func TestFastPathTable(t *testing.T) {
	for _, tc := range []struct {
		cond, args string
		fast       bool // the fast path answers
		effect     Effect
	}{
		{`context.args.n < 3`, `{"n":2}`, true, Allow},
		{`context.args.n < 3`, `{"n":2.0}`, true, Allow}, // a whole number, however written, is a Long
		{`context.args.n < 3`, `{"n":2e0}`, true, Allow},
		{`context.args.n < 3`, `{"n":2.5}`, false, Deny},            // not a whole number: refused, by Cedar's path
		{`context.args.n < 3`, `{"n":-1e300}`, false, Deny},         // nor beyond 64 bits
		{`context.args.a == "x"`, `{"a":"x","n":2.5}`, true, Allow}, // a number no policy reads
		{`context.args.n < 3`, `{"n":"2"}`, false, Deny},            // a type error: the policy fails, which refuses the call
		{`context.args.n < 3`, `{}`, false, Deny},                   // no such attribute
		{`context.args has n`, `{"n":null}`, true, Deny},
		{`context.args has n`, `{"n":1.234567}`, false, Deny}, // refused: has must not miss it
		{`context.args has n`, `{"n":[1]}`, false, Allow},
		{`context.args.a == "x"`, `{"\u0061":"x"}`, true, Allow},
		{`context.args.a == "x"`, `{"a":"\u0078"}`, true, Allow},
		{`context.args.a == "x"`, `{"a":"y","a":"x"}`, false, Deny}, // a repeated key: refused, as a tool may read either (residual.Strict)
		{`context.args.a == "x"`, `{"a":"x","A":"y"}`, true, Deny},  // a case-variant key: refused before the fast path runs, as encoding/json binds either
		{`context.args.a == 1`, `{"a":"1"}`, true, Deny},
		{`context.args.path like "docs/*"`, `{"path":"docs/../secrets/k"}`, true, Deny},
		{`context.args.path like "secrets/*"`, `{"path":"docs/../secrets/k"}`, true, Allow},
		{`context.args.f || context.args.missing`, `{"f":true}`, true, Allow},
		{`context.args.f && context.args.missing`, `{"f":false}`, true, Deny},
		{`context.args.f && context.args.missing`, `{"f":true}`, false, Deny},
		{`if context.args.f then context.args.n > 1 else false`, `{"f":true,"n":2}`, true, Allow},
		{`["a","b"].contains(context.args.a)`, `{"a":"b"}`, true, Allow},
		{`["a",1].contains(context.args.a)`, `{"a":1}`, true, Allow},
		{`context.args.o.x == 1`, `{"o":{"x":1}}`, false, Allow},
	} {
		src := fmt.Sprintf(`@id("p") permit (principal, action, resource) when { %s };`, tc.cond)
		a, err := New("p.cedar", []byte(src), WithPathArguments("path"))
		if err != nil {
			t.Fatal(err)
		}
		ctx := WithPrincipal(context.Background(), Principal{ID: "u"})
		req := tool.AccessRequest{Name: "t", Args: []byte(tc.args)}
		if d := a.Decide(ctx, req); d.Effect != tc.effect {
			t.Errorf("%s on %s: %s, want %s", tc.cond, tc.args, d.Effect, tc.effect)
		}
		v := a.verdict(a.set.Load(), a.subject(ctx), "t", req.Options.Annotations)
		answered := a.decideFast(v, &Decision{Tool: "t"}, &req)
		if answered != tc.fast {
			t.Errorf("%s on %s: the fast path answered: %v, want %v", tc.cond, tc.args, answered, tc.fast)
		}
	}
}

// TestFastPathBounds: a verdict whose policies read more arguments, or
// are more, than a fast program holds is left to Cedar, which decides it.
func TestFastPathBounds(t *testing.T) {
	var many, wide strings.Builder
	for i := range residual.MaxRules + 1 {
		fmt.Fprintf(&many, "permit (principal, action, resource) when { context.args.a == \"%d\" };\n", i)
	}
	wide.WriteString("permit (principal, action, resource) when { true")
	for i := range residual.MaxArgs + 1 {
		fmt.Fprintf(&wide, " && context.args.a%d == 1", i)
	}
	wide.WriteString(" };\n")
	for _, tc := range []struct{ name, src, args string }{
		{"rules", many.String(), `{"a":"3"}`},
		{"arguments", wide.String(), `{"a0":1,"a1":1,"a2":1,"a3":1,"a4":1,"a5":1,"a6":1,"a7":1,"a8":1}`},
	} {
		a, err := New("p.cedar", []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		ctx := WithPrincipal(context.Background(), Principal{ID: "u"})
		req := tool.AccessRequest{Name: "t", Args: []byte(tc.args)}
		if d := a.Decide(ctx, req); d.Effect != Allow {
			t.Errorf("%s: %+v", tc.name, d)
		}
		v := a.verdict(a.set.Load(), a.subject(ctx), "t", req.Options.Annotations)
		if answered := a.decideFast(v, &Decision{Tool: "t"}, &req); answered {
			t.Errorf("%s: the fast path answered beyond its bounds", tc.name)
		}
	}
}

// TestAuthorizeMatchesDecide checks Authorize's answer without a Decision
// (an Authorizer with nothing that reads one: no audit log, logger, rate
// limit or path arguments) against Decide, over random policy sets and
// arguments: a call runs exactly when Decide allows it. It also counts
// the calls the fast program allowed that way, so that the check is not
// vacuous.
func TestAuthorizeMatchesDecide(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 60
	}
	users := []Principal{{ID: "u0", Roles: []string{"r0"}}, {ID: "u1", Attrs: map[string]any{"tenant": "x"}}}
	quick := 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, seed^0x51ed27a3))
		src := randomPolicies(rng)
		a, err := New("random.cedar", []byte(src))
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		for range 20 {
			args := randomArgs(rng)
			for _, u := range users {
				ctx := WithPrincipal(context.Background(), u)
				for _, name := range []string{"t0", "t1"} {
					req := tool.AccessRequest{Name: name, Args: []byte(args)}
					d := a.Decide(ctx, req)
					err := a.Authorize(ctx, req)
					if (err == nil) != (d.Effect == Allow) {
						t.Fatalf("seed %d: %s %s %s: Authorize %v, Decide %s (%s)\npolicies:\n%s", seed, u.ID, name, args, err, d.Effect, d.Reason, src)
					}
					v := a.verdict(a.set.Load(), a.subject(ctx), name, req.Options.Annotations)
					if f := a.runFast(v, &req); !v.static && f.allows() {
						quick++
					}
				}
			}
		}
	}
	t.Logf("%d calls allowed by a fast program without a Decision", quick)
	if quick == 0 {
		t.Error("no call was allowed by a fast program: the check is vacuous")
	}
}
