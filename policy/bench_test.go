package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// fiftyPolicies returns 50 policies over tools t0..t23 and the workload
// tool "lookup": role permits, argument conditions and forbids. A call of
// lookup is decided by two of them, one of which reads the arguments.
func fiftyPolicies() string {
	var b strings.Builder
	for i := range 24 {
		fmt.Fprintf(&b, "permit (principal in Role::\"r%d\", action == Action::\"call\", resource == Tool::\"t%d\") when { context.args.n < %d };\n", i%5, i, i+10)
		fmt.Fprintf(&b, "forbid (principal, action, resource == Tool::\"t%d\") when { context.args has q && context.args.q like \"*secret*\" };\n", i)
	}
	b.WriteString("permit (principal in Role::\"viewer\", action == Action::\"call\", resource) when { resource.readOnly };\n")
	b.WriteString("forbid (principal, action, resource) when { context.args has q && context.args.q like \"*../*\" };\n")
	return b.String()
}

// fiftyStaticPolicies returns 50 policies of the same shape as
// fiftyPolicies whose conditions read the principal and the tool but
// never the arguments, so that a decision does not depend on them.
func fiftyStaticPolicies() string {
	var b strings.Builder
	for i := range 24 {
		fmt.Fprintf(&b, "permit (principal in Role::\"r%d\", action == Action::\"call\", resource == Tool::\"t%d\") when { principal has tenant && principal.tenant == \"t%d\" };\n", i%5, i, i%3)
		fmt.Fprintf(&b, "forbid (principal, action, resource == Tool::\"t%d\") when { principal has suspended && principal.suspended };\n", i)
	}
	b.WriteString("permit (principal in Role::\"viewer\", action == Action::\"call\", resource) when { resource.readOnly };\n")
	b.WriteString("forbid (principal, action, resource) when { resource.destructive && !(principal in Role::\"admin\") };\n")
	return b.String()
}

type lookupArgs struct {
	Q     string `json:"q"`
	Limit int    `json:"limit,omitempty" default:"10"`
}

func lookupTool() tool.Tool {
	return tool.Must(tool.New("lookup", "Looks up.", func(ctx context.Context, a lookupArgs) (string, error) { return "found " + a.Q, nil },
		tool.WithAnnotations(tool.Annotations{ReadOnly: true}), tool.WithInline()))
}

// BenchmarkDecisionOverhead measures Registry.Execute of the same inline
// tool without a policy and with a 50-policy Cedar set, in one run: the
// two registries alternate in batches of calls, and the medians of the
// batches' per-call times give the p50 figures, their difference the
// decision's cost and their quotient the ratio. An op is one call of
// each. "static" is a policy set none of whose policies read the
// arguments, "args" one where the deciding policies do; "args-cedar" is
// "args" with the residual fast path turned off, every such call
// evaluated by Cedar, as the baseline of the fast path.
func BenchmarkDecisionOverhead(b *testing.B) {
	for _, set := range []struct {
		name, src string
		opts      []policy.Option
	}{
		{"static", fiftyStaticPolicies(), nil},
		{"args", fiftyPolicies(), nil},
		{"args-cedar", fiftyPolicies(), []policy.Option{policy.CedarOnly()}},
	} {
		b.Run(set.name, func(b *testing.B) { decisionOverhead(b, set.src, set.opts...) })
	}
}

func decisionOverhead(b *testing.B, src string, opts ...policy.Option) {
	args := json.RawMessage(`{"q":"golang","limit":5}`)
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u", Roles: []string{"viewer"}, Attrs: map[string]any{"tenant": "t1"}})
	plain := tool.NewRegistry()
	plain.Register(lookupTool())
	a, err := policy.New("bench.cedar", []byte(src), opts...)
	if err != nil {
		b.Fatal(err)
	}
	guarded := tool.NewRegistry(tool.WithAuthorizer(a))
	guarded.Register(lookupTool())
	call := func(reg *tool.Registry) {
		if res := reg.Execute(ctx, "lookup", args); res.IsError {
			b.Fatal(res.Error)
		}
	}
	call(guarded)
	added := testing.AllocsPerRun(1000, func() { call(guarded) }) - testing.AllocsPerRun(1000, func() { call(plain) })
	const batch = 50
	var base, with []float64
	run := func(reg *tool.Registry, n int) float64 {
		start := time.Now()
		for range n {
			call(reg)
		}
		return float64(time.Since(start).Nanoseconds()) / float64(n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		n := min(batch, b.N-done)
		base = append(base, run(plain, n))
		with = append(with, run(guarded, n))
	}
	b.StopTimer()
	p50 := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	pb, pw := p50(base), p50(with)
	b.ReportMetric(pb, "base-p50-ns")
	b.ReportMetric(pw-pb, "decision-p50-ns")
	b.ReportMetric(pw/pb, "ratio-p50")
	b.ReportMetric(added, "decision-allocs")
}

// BenchmarkDefinitionsForPrincipal measures the Definitions of a
// principal's view over 1,000 tools with the 50-policy set: "warm" for
// the same principal again (its listing kept), "cold" for a principal
// never seen before at each op. Every tenth op of "cold" also lists, with
// its timer stopped, for another new principal through an Authorizer
// that judges and caches a verdict per tool (policy.PerToolListing, how
// listings were made before they were planned per principal): the
// medians of the two are p50-ns and per-tool-p50-ns, and ratio-p50 is
// their quotient.
func BenchmarkDefinitionsForPrincipal(b *testing.B) {
	newReg := func(opts ...policy.Option) (*policy.Authorizer, *tool.Registry) {
		a, err := policy.New("bench.cedar", []byte(fiftyPolicies()), opts...)
		if err != nil {
			b.Fatal(err)
		}
		reg := tool.NewRegistry(tool.WithAuthorizer(a))
		for i := range 1000 {
			reg.Register(tool.Must(tool.New(fmt.Sprintf("t%d", i), "T.", func(ctx context.Context, a lookupArgs) (string, error) { return "", nil },
				tool.WithAnnotations(tool.Annotations{ReadOnly: i%2 == 0}))))
		}
		return a, reg
	}
	a, reg := newReg()
	base, baseReg := newReg(policy.PerToolListing())
	principal := func(id string) context.Context {
		return policy.WithPrincipal(context.Background(), policy.Principal{ID: id, Roles: []string{"r1", "viewer"}})
	}
	b.Run("warm", func(b *testing.B) {
		ctx := principal("u")
		a.View(ctx, reg).Definitions()
		b.ReportAllocs()
		for b.Loop() {
			a.View(ctx, reg).Definitions()
		}
	})
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		var fast, perTool []float64
		for b.Loop() {
			i++
			start := time.Now()
			a.View(principal(fmt.Sprintf("u%d", i)), reg).Definitions()
			fast = append(fast, float64(time.Since(start).Nanoseconds()))
			if i%10 == 1 {
				b.StopTimer()
				start := time.Now()
				base.View(principal(fmt.Sprintf("v%d", i)), baseReg).Definitions()
				perTool = append(perTool, float64(time.Since(start).Nanoseconds()))
				b.StartTimer()
			}
		}
		p50 := func(xs []float64) float64 {
			slices.Sort(xs)
			return xs[len(xs)/2]
		}
		pf, pp := p50(fast), p50(perTool)
		b.ReportMetric(pf, "p50-ns")
		b.ReportMetric(pp, "per-tool-p50-ns")
		b.ReportMetric(pp/pf, "ratio-p50")
	})
}
