package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// storeKinds are the stores the benchmarks compare: in memory, and on
// files in a directory of b's.
func storeKinds(b *testing.B) []struct {
	name string
	mk   func() policy.ApprovalStore
} {
	return []struct {
		name string
		mk   func() policy.ApprovalStore
	}{
		{"memory", func() policy.ApprovalStore { return policy.NewMemoryApprovalStore() }},
		{"file", func() policy.ApprovalStore { return &policy.FileApprovalStore{Dir: b.TempDir()} }},
	}
}

// BenchmarkApprovalStore measures one request's life in a store: Put,
// Answer and Consume (ns/op is one of each; the file store syncs each
// change to disk).
func BenchmarkApprovalStore(b *testing.B) {
	ctx := context.Background()
	for _, tc := range storeKinds(b) {
		b.Run(tc.name, func(b *testing.B) {
			s := tc.mk()
			now := time.Now()
			i := 0
			for b.Loop() {
				i++
				r := record(id(i), fmt.Sprint("d", i))
				r.Created, r.Expires = now, now.Add(time.Hour)
				if _, err := s.Put(ctx, r, now); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Answer(ctx, r.ID, policy.ApprovalAnswer{Approved: true, By: "ann"}, now); err != nil {
					b.Fatal(err)
				}
				if _, ok, err := s.Consume(ctx, r.Digest, now); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkApprovedCall compares, interleaved in one loop, a call the
// policies allow with a call that asks and was already approved (the
// approval is made outside the timed part): allowed-ns, approved-ns and
// their ratio. ns/op also counts the untimed asking and granting.
func BenchmarkApprovedCall(b *testing.B) {
	const src = `
permit (principal, action == Action::"call", resource == Tool::"kv") when { context.args.op == "get" };
@id("ask") @effect("ask") permit (principal, action == Action::"call", resource == Tool::"kv") when { context.args.op == "delete" };`
	for _, tc := range storeKinds(b) {
		b.Run(tc.name, func(b *testing.B) {
			a, err := policy.New("b.cedar", []byte(src), policy.WithApprovalStore(tc.mk()))
			if err != nil {
				b.Fatal(err)
			}
			reg := tool.NewRegistry(tool.WithAuthorizer(a))
			reg.Register(tool.Must(tool.New("kv", "Keeps notes.", func(ctx context.Context, in kvArgs) (string, error) { return "ok", nil })))
			ctx := policy.WithPrincipal(context.Background(), otto)
			var allowed, approved time.Duration
			i := 0
			for b.Loop() {
				i++
				get := json.RawMessage(fmt.Sprintf(`{"op":"get","key":"k%d"}`, i))
				del := json.RawMessage(fmt.Sprintf(`{"op":"delete","key":"k%d"}`, i))
				res := reg.Execute(ctx, "kv", del)
				req, ok := res.Metadata["approval_request"].(policy.ApprovalRequest)
				if !ok {
					b.Fatalf("no request: %+v", res)
				}
				if err := a.Grant(req.ID); err != nil {
					b.Fatal(err)
				}
				t := time.Now()
				if res := reg.Execute(ctx, "kv", get); res.IsError {
					b.Fatal(res)
				}
				t1 := time.Now()
				if res := reg.Execute(ctx, "kv", del); res.IsError {
					b.Fatal(res)
				}
				approved += time.Since(t1)
				allowed += t1.Sub(t)
			}
			b.ReportMetric(float64(allowed.Nanoseconds())/float64(i), "allowed-ns")
			b.ReportMetric(float64(approved.Nanoseconds())/float64(i), "approved-ns")
			b.ReportMetric(float64(approved)/float64(allowed), "approved/allowed")
		})
	}
}
