package natstool_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/policy"
)

// BenchmarkSharedNonces measures what --shared-nonces costs a signed
// call: a call of an imported tool whose worker verifies the claim and
// records its nonce in the JetStream bucket (natstool.Nonces), against
// its baseline, the same signed call to a worker that records the nonce
// in its own memory (the default). Each runs on a JetStream server of
// its own on loopback, both started by the benchmark; the two alternate
// call by call, in an order that rotates, and the figures are medians of
// the per-call times. x-memory is shared over memory.
func BenchmarkSharedNonces(b *testing.B) {
	args := json.RawMessage(`{"a":2,"b":40}`)
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
	caller := func(nonces bool) func() {
		s := startServer(b, true)
		o := &policy.HeaderSignerOptions{}
		if nonces {
			octx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			n, err := natstool.OpenNonces(octx, connect(b, s), nil)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			o.Nonces = n
		}
		verifier, err := policy.NewHeaderSigner(testSignerKey, o)
		if err != nil {
			b.Fatal(err)
		}
		signer, err := policy.NewHeaderSigner(testSignerKey, nil)
		if err != nil {
			b.Fatal(err)
		}
		var runs atomic.Int64
		serve(b, connect(b, s), counting(b, &runs), natstool.ServeOptions{CallContext: natstool.VerifiedContext(verifier)})
		local := tool.NewRegistry(tool.WithLogger(quiet))
		importInto(b, connect(b, s), local, natstool.ImportOptions{CallHeaders: natstool.SignedHeaders(signer)})
		waitFor(b, "the tool", func() bool { _, ok := local.Get("add"); return ok })
		return func() {
			if res := local.Execute(ctx, "add", args); res.Output != "42" {
				b.Fatalf("%+v", res)
			}
		}
	}
	memory, shared := caller(false), caller(true)
	for range 200 { // warm both paths
		memory()
		shared()
	}
	times := interleaved(b, memory, shared)
	memoryP, sharedP := median(times[0]), median(times[1])
	b.ReportMetric(float64(memoryP.Nanoseconds()), "memory-p50-ns")
	b.ReportMetric(float64(sharedP.Nanoseconds()), "shared-p50-ns")
	b.ReportMetric(float64(sharedP)/float64(memoryP), "x-memory")
}
