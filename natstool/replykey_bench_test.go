package natstool_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
)

// BenchmarkSignedReplies measures what the reply key costs a call: a
// call of "add" on a worker that signs its result, from an importer
// that checks it, against its baseline, the same call on a worker and
// importer without the key, on the same server. The two alternate call
// by call, their order rotating; the figures are medians (p50).
// x-unsigned is the signed call's p50 over the unsigned one's.
func BenchmarkSignedReplies(b *testing.B) {
	s := startServer(b, false)
	var n atomic.Int64
	key, err := natstool.NewReplyKey(testReplySecret)
	if err != nil {
		b.Fatal(err)
	}
	serve(b, connect(b, s), counting(b, &n), natstool.ServeOptions{Name: "plain"})
	serve(b, connect(b, s), counting(b, &n), natstool.ServeOptions{Name: "signed", ReplyKey: key})
	plain, signed := tool.NewRegistry(tool.WithLogger(quiet)), tool.NewRegistry(tool.WithLogger(quiet))
	importInto(b, connect(b, s), plain, natstool.ImportOptions{Filter: func(service, _ string) bool { return service == "plain" }})
	importInto(b, connect(b, s), signed, natstool.ImportOptions{ReplyKey: key, Filter: func(service, _ string) bool { return service == "signed" }})
	args := json.RawMessage(`{"a":2,"b":40}`)
	ctx := context.Background()
	call := func(r *tool.Registry) func() {
		return func() {
			if res := r.Execute(ctx, "add", args); res.IsError || res.Output != "42" {
				b.Fatalf("call: %+v", res)
			}
		}
	}
	for range 200 {
		call(plain)()
		call(signed)()
	}
	times := interleaved(b, call(plain), call(signed))
	pp, sp := median(times[0]), median(times[1])
	b.ReportMetric(float64(pp.Nanoseconds()), "unsigned-p50-ns")
	b.ReportMetric(float64(sp.Nanoseconds()), "signed-p50-ns")
	b.ReportMetric(float64(sp)/float64(pp), "x-unsigned")
}
