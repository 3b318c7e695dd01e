package natstool_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

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
	plainT := make([]time.Duration, 0, b.N)
	signedT := make([]time.Duration, 0, b.N)
	variants := [...]struct {
		call  func()
		times *[]time.Duration
	}{{call(plain), &plainT}, {call(signed), &signedT}}
	b.ResetTimer()
	for i := range b.N {
		for k := range variants {
			v := variants[(i+k)%len(variants)]
			t := time.Now()
			v.call()
			*v.times = append(*v.times, time.Since(t))
		}
	}
	b.StopTimer()
	pp, sp := median(plainT), median(signedT)
	b.ReportMetric(float64(pp.Nanoseconds()), "unsigned-p50-ns")
	b.ReportMetric(float64(sp.Nanoseconds()), "signed-p50-ns")
	b.ReportMetric(float64(sp)/float64(pp), "x-unsigned")
}
