package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// fiftyPolicies returns 50 policies over tools t0..t24 and the workload
// tool "lookup": role permits, argument conditions and forbids.
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

type lookupArgs struct {
	Q     string `json:"q"`
	Limit int    `json:"limit,omitempty" default:"10"`
}

func lookupTool() tool.Tool {
	return tool.Must(tool.New("lookup", "Looks up.", func(ctx context.Context, a lookupArgs) (string, error) { return "found " + a.Q, nil },
		tool.WithAnnotations(tool.Annotations{ReadOnly: true}), tool.WithInline()))
}

// BenchmarkDecisionOverhead measures Registry.Execute of the same inline
// tool without a policy and with a 50-policy Cedar set, in one run, and
// reports the ratio and the added nanoseconds per call.
func BenchmarkDecisionOverhead(b *testing.B) {
	args := json.RawMessage(`{"q":"golang","limit":5}`)
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u", Roles: []string{"viewer"}})
	plain := tool.NewRegistry()
	plain.Register(lookupTool())
	a, err := policy.New("bench.cedar", []byte(fiftyPolicies()))
	if err != nil {
		b.Fatal(err)
	}
	guarded := tool.NewRegistry(tool.WithAuthorizer(a))
	guarded.Register(lookupTool())
	if res := guarded.Execute(ctx, "lookup", args); res.IsError {
		b.Fatal(res.Error)
	}
	run := func(reg *tool.Registry) time.Duration {
		start := time.Now()
		for range b.N {
			if res := reg.Execute(ctx, "lookup", args); res.IsError {
				b.Fatal(res.Error)
			}
		}
		return time.Since(start)
	}
	b.ReportAllocs()
	base := run(plain)
	with := run(guarded)
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "base-ns/op")
	b.ReportMetric(float64((with-base).Nanoseconds())/float64(b.N), "decision-ns/op")
	b.ReportMetric(float64(with)/float64(base), "ratio")
}

// BenchmarkDefinitionsForPrincipal measures the Definitions of a
// principal's view over 1,000 tools with the 50-policy set.
func BenchmarkDefinitionsForPrincipal(b *testing.B) {
	a, err := policy.New("bench.cedar", []byte(fiftyPolicies()))
	if err != nil {
		b.Fatal(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	for i := range 1000 {
		reg.Register(tool.Must(tool.New(fmt.Sprintf("t%d", i), "T.", func(ctx context.Context, a lookupArgs) (string, error) { return "", nil },
			tool.WithAnnotations(tool.Annotations{ReadOnly: i%2 == 0}))))
	}
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u", Roles: []string{"r1", "viewer"}})
	b.ReportAllocs()
	for b.Loop() {
		a.View(ctx, reg).Definitions()
	}
}
