package natstool_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/approvaltest"
)

// BenchmarkApprovalStore measures one request's life (Put, Answer,
// Consume) in each store, interleaved in one loop so that all see the
// same machine: in memory, on files (each change synced to disk), and
// in a JetStream bucket on file storage of an embedded server on
// loopback, answered from a second connection as a person's would be.
// memory-ns, file-ns and nats-ns are one life each; lives/s-nats is
// their throughput from one client; nats/file is the ratio.
func BenchmarkApprovalStore(b *testing.B) {
	ctx := context.Background()
	srv := startServer(b, true)
	stores := []struct {
		name         string
		asker, other policy.ApprovalStore
		took         time.Duration
	}{
		{name: "memory"}, {name: "file"}, {name: "nats"},
	}
	mem := policy.NewMemoryApprovalStore()
	stores[0].asker, stores[0].other = mem, mem
	dir := b.TempDir()
	stores[1].asker, stores[1].other = &policy.FileApprovalStore{Dir: dir}, &policy.FileApprovalStore{Dir: dir}
	stores[2].asker, stores[2].other = openApprovals(b, connect(b, srv), "bench", 0), openApprovals(b, connect(b, srv), "bench", 0)
	now := time.Now()
	i := 0
	for b.Loop() {
		i++
		for k := range stores {
			s := &stores[(i+k)%len(stores)] // the order rotates
			r := approvaltest.Record(approvaltest.ID(i), fmt.Sprint("digest", i))
			r.Created, r.Expires = now, now.Add(time.Hour)
			t := time.Now()
			if _, err := s.asker.Put(ctx, r, now); err != nil {
				b.Fatal(s.name, err)
			}
			if _, err := s.other.Answer(ctx, r.ID, policy.ApprovalAnswer{Approved: true, By: "ann"}, now); err != nil {
				b.Fatal(s.name, err)
			}
			if _, ok, err := s.asker.Consume(ctx, r.Digest, now); !ok || err != nil {
				b.Fatal(s.name, ok, err)
			}
			s.took += time.Since(t)
		}
	}
	for _, s := range stores {
		b.ReportMetric(float64(s.took.Nanoseconds())/float64(i), s.name+"-ns")
	}
	b.ReportMetric(float64(i)/stores[2].took.Seconds(), "lives/s-nats")
	b.ReportMetric(float64(stores[2].took)/float64(stores[1].took), "nats/file")
}
