package policy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy"
)

// TestMemoryApprovalStoreBytesBounded: the in-memory store bounded its
// records (10,000) but not their arguments, each up to MaxApprovalArgs
// (64 KiB): principals asking with large arguments, each within its
// quota of 64, made the process keep 640 MiB. The store now keeps at most
// MaxMemoryApprovalBytes of arguments and refuses a request past them as
// full; a used answer frees its bytes. The control: with the byte bound
// off, the same requests are kept past it.
func TestMemoryApprovalStoreBytesBounded(t *testing.T) {
	args := []byte(`{"s":"` + strings.Repeat("x", policy.MaxApprovalArgs-len(`{"s":""}`)) + `"}`)
	fits := policy.MaxMemoryApprovalBytes / len(args)
	now := time.Now()
	put := func(s *policy.MemoryApprovalStore, i int) error {
		_, err := s.Put(context.Background(), policy.ApprovalRecord{
			ID: fmt.Sprintf("%024x", i), Principal: fmt.Sprintf("p%d", i/64), Tool: "kv", Digest: fmt.Sprintf("%064x", i),
			Args: args, Created: now, Expires: now.Add(time.Minute), TTL: time.Minute,
		}, now)
		return err
	}
	for _, bounded := range []bool{false, true} {
		t.Run(fmt.Sprintf("bounded=%v", bounded), func(t *testing.T) {
			s := policy.NewMemoryApprovalStore()
			if !bounded {
				policy.UnboundedBytes(s)
			}
			for i := range fits {
				if err := put(s, i); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
			}
			err := put(s, fits)
			if !bounded {
				if err != nil || policy.KeptBytes(s) <= policy.MaxMemoryApprovalBytes {
					t.Fatalf("control: %v, %d bytes kept; want the request kept past the bound", err, policy.KeptBytes(s))
				}
				return
			}
			if !errors.Is(err, policy.ErrApprovalStoreFull) || !strings.Contains(err.Error(), "bytes of arguments") {
				t.Fatalf("request past the bound: %v, want ErrApprovalStoreFull naming the bytes", err)
			}
			if kept := policy.KeptBytes(s); kept > policy.MaxMemoryApprovalBytes {
				t.Fatalf("%d bytes kept, more than %d", kept, policy.MaxMemoryApprovalBytes)
			}
			// A used answer makes room.
			if _, err := s.Answer(context.Background(), fmt.Sprintf("%024x", 0), policy.ApprovalAnswer{Approved: true, By: "the host"}, now); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := s.Consume(context.Background(), fmt.Sprintf("%064x", 0), now); !ok || err != nil {
				t.Fatalf("Consume: %v %v", ok, err)
			}
			if err := put(s, fits); err != nil {
				t.Fatalf("after a used answer made room: %v", err)
			}
		})
	}
}
