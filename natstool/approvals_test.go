package natstool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/approvaltest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

var buckets atomic.Int64

// openApprovals opens the approvals bucket name on nc.
func openApprovals(t testing.TB, nc *nats.Conn, name string, max int) *natstool.Approvals {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := natstool.OpenApprovals(ctx, nc, &natstool.ApprovalsOptions{Bucket: name, Max: max})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// twoConnections opens one new bucket through two connections, as two
// processes do.
func twoConnections(s *server.Server, max int) approvaltest.Open {
	return func(t *testing.T) (policy.ApprovalStore, policy.ApprovalStore) {
		name := fmt.Sprint("approvals_", buckets.Add(1))
		return openApprovals(t, connect(t, s), name, max), openApprovals(t, connect(t, s), name, max)
	}
}

// TestApprovalsContract runs the stores' shared contract over the NATS
// store, each handle on its own connection: one answer of 8 racing
// approvers, one use of 8 racing workers, one request of 8 racing
// askers, expiry by the records' own clock.
func TestApprovalsContract(t *testing.T) {
	s := startServer(t, true)
	approvaltest.TestStore(t, twoConnections(s, 0))
	t.Run("Full", func(t *testing.T) {
		approvaltest.TestFull(t, openApprovals(t, connect(t, s), "approvals_full", 4), 4)
	})
}

// TestApprovalsFailClosed: a corrupt record or digest key, and a bucket
// that cannot be reached, make the store fail (never answer "none
// waiting" or "unknown"), and an Authorizer then refuses the call,
// saying why, without running it.
func TestApprovalsFailClosed(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t, true)
	nc := connect(t, srv)
	store := openApprovals(t, nc, "approvals_corrupt", 0)
	js, _ := nc.JetStream()
	kv, err := js.KeyValue("approvals_corrupt")
	if err != nil {
		t.Fatal(err)
	}
	r := approvaltest.Record(approvaltest.ID(1), "d1")
	if _, err := store.Put(ctx, r, approvaltest.T0); err != nil {
		t.Fatalf("control: %v", err)
	}
	if _, err := store.Pending(ctx, approvaltest.T0); err != nil {
		t.Fatalf("control: %v", err)
	}
	for name, junk := range map[string]string{
		"not json":    `{"id":`,
		"another id":  strings.Replace(mustJSON(t, r), approvaltest.ID(1), approvaltest.ID(2), 1),
		"a bad state": strings.Replace(mustJSON(t, r), `"pending"`, `"used-up"`, 1),
		"no digest":   strings.Replace(mustJSON(t, r), `"d1"`, `""`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := kv.Put("r."+approvaltest.ID(1), []byte(junk)); err != nil {
				t.Fatal(err)
			}
			_, err1 := store.Get(ctx, approvaltest.ID(1), approvaltest.T0)
			_, err2 := store.Pending(ctx, approvaltest.T0)
			_, err3 := store.Answer(ctx, approvaltest.ID(1), policy.ApprovalAnswer{Approved: true, By: "ann"}, approvaltest.T0)
			_, _, err4 := store.Consume(ctx, "d1", approvaltest.T0)
			_, err5 := store.Put(ctx, approvaltest.Record(approvaltest.ID(3), "d1"), approvaltest.T0)
			for i, err := range []error{err1, err2, err3, err4, err5} {
				if !errors.Is(err, policy.ErrApprovalStoreCorrupt) || !strings.Contains(err.Error(), "approvals_corrupt") {
					t.Errorf("method %d: %v, want ErrApprovalStoreCorrupt naming the bucket", i+1, err)
				}
			}
		})
	}
	t.Run("a bad digest key", func(t *testing.T) {
		kv.Put("r."+approvaltest.ID(1), []byte(mustJSON(t, r)))
		keys, _ := kv.Keys()
		for _, k := range keys {
			if strings.HasPrefix(k, "d.") {
				kv.Put(k, []byte("../../x"))
			}
		}
		if _, _, err := store.Consume(ctx, "d1", approvaltest.T0); !errors.Is(err, policy.ErrApprovalStoreCorrupt) {
			t.Errorf("Consume = %v, want ErrApprovalStoreCorrupt", err)
		}
	})

	// The bucket unreachable: the server is gone. The corrupt keys above
	// are cleared first: an asking call reads the pending requests (its
	// principal's quota), which a corrupt record fails.
	if keys, err := kv.Keys(); err == nil {
		for _, k := range keys {
			kv.Delete(k)
		}
	}
	a, err := policy.New("ask.cedar", []byte(`@effect("ask") permit (principal, action == Action::"call", resource == Tool::"add");`),
		policy.WithApprovalStore(store))
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	add, _ := counting(t, &runs).Get("add")
	reg := tool.NewRegistry(tool.WithLogger(quiet), tool.WithAuthorizer(a))
	reg.Register(add)
	bob := policy.WithPrincipal(ctx, policy.Principal{ID: "bob"})
	if res := reg.Execute(bob, "add", json.RawMessage(`{"a":1,"b":2}`)); res.Kind != tool.KindDenied || res.Metadata["approval_request"] == nil {
		t.Fatalf("control: %+v, want an approval request", res)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	short, cancel := context.WithTimeout(bob, 3*time.Second)
	defer cancel()
	res := reg.Execute(short, "add", json.RawMessage(`{"a":1,"b":3}`))
	if res.Kind != tool.KindDenied || !strings.Contains(res.Error, "approval store failed") || res.Metadata["approval_request"] != nil {
		t.Errorf("a call while the bucket is unreachable: %+v, want refused saying the store failed", res)
	}
	if _, err := store.Pending(short, approvaltest.T0); err == nil {
		t.Error("Pending of an unreachable bucket succeeded")
	}
	if runs.Load() != 0 {
		t.Errorf("the tool ran %d times", runs.Load())
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestApprovalAcrossWorkers: a call imported from two workers, each
// deciding by its policy with the NATS store on its own connection,
// asks; a person answers from a third connection; the call made again
// runs once, whichever worker takes it, and a third time asks again.
// Calls made again concurrently, eight at a time, run once between them.
func TestApprovalAcrossWorkers(t *testing.T) {
	srv := startServer(t, true)
	const src = `
@id("ask") @reason("adding needs a person") @effect("ask")
permit (principal, action == Action::"call", resource == Tool::"add");
permit (principal in Role::"lead", action == Action::"approve", resource == Tool::"add");`
	var runs atomic.Int64
	for range 2 {
		wnc := connect(t, srv)
		a, err := policy.New("ask.cedar", []byte(src), policy.WithApprovalStore(openApprovals(t, wnc, "approvals", 0)))
		if err != nil {
			t.Fatal(err)
		}
		add, _ := counting(t, &runs).Get("add")
		worker := tool.NewRegistry(tool.WithLogger(quiet), tool.WithAuthorizer(a))
		worker.Register(add)
		serve(t, wnc, worker, natstool.ServeOptions{CallContext: func(ctx context.Context, h nats.Header) (context.Context, error) {
			return policy.FromHeaders(ctx, h)
		}})
	}
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, srv), local, natstool.ImportOptions{CallHeaders: func(ctx context.Context) nats.Header { return policy.Headers(ctx) }})
	waitFor(t, "the tool", func() bool { _, ok := local.Get("add"); return ok })

	bob := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
	args := json.RawMessage(`{"a":40,"b":2}`)
	res := local.Execute(bob, "add", args)
	id, _ := res.Metadata["approval_request"].(map[string]any)["id"].(string)
	if res.Kind != tool.KindDenied || id == "" || !strings.Contains(res.Error, id) {
		t.Fatalf("first call: %+v, want an approval request", res)
	}
	// The person answers from elsewhere.
	anc := connect(t, srv)
	answerer, err := policy.New("ask.cedar", []byte(src), policy.WithApprovalStore(openApprovals(t, anc, "approvals", 0)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := answerer.Answer(bob, id, true, ""); !errors.Is(err, policy.ErrNotApprover) {
		t.Fatalf("bob approving his own call: %v, want ErrNotApprover", err)
	}
	ann := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann", Roles: []string{"lead"}})
	if _, err := answerer.Answer(ann, id, true, "fine"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var ok, asked atomic.Int64
	for range 8 {
		wg.Go(func() {
			switch res := local.Execute(bob, "add", args); {
			case !res.IsError && res.Output == "42":
				ok.Add(1)
			case res.Kind == tool.KindDenied && res.Metadata["approval_request"] != nil:
				asked.Add(1)
			default:
				t.Errorf("a call made again: %+v", res)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || runs.Load() != 1 || asked.Load() != 7 {
		t.Errorf("%d calls ran (the tool %d times), %d asked again; want 1, 1, 7", ok.Load(), runs.Load(), asked.Load())
	}
}

// TestApprovalFaultsNATS: through Authorizers on the NATS store, a
// forged, reused, expired or foreign approval id is refused with the
// error that says which, and nothing runs; a full bucket refuses the
// call that would ask, saying why.
func TestApprovalFaultsNATS(t *testing.T) {
	srv := startServer(t, true)
	const src = `
@effect("ask") permit (principal, action == Action::"call", resource == Tool::"add");
permit (principal in Role::"lead", action == Action::"approve", resource == Tool::"add");`
	now := approvaltest.T0
	clock := policy.WithClock(func() time.Time { return now })
	var runs atomic.Int64
	process := func(bucket string, max int) (*policy.Authorizer, *tool.Registry) {
		a, err := policy.New("ask.cedar", []byte(src), clock, policy.WithApprovalTTL(time.Minute),
			policy.WithApprovalStore(openApprovals(t, connect(t, srv), bucket, max)))
		if err != nil {
			t.Fatal(err)
		}
		add, _ := counting(t, &runs).Get("add")
		reg := tool.NewRegistry(tool.WithLogger(quiet), tool.WithAuthorizer(a))
		reg.Register(add)
		return a, reg
	}
	a, reg := process("faults", 0)
	other, otherReg := process("faults_other", 0)
	bob := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
	ann := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann", Roles: []string{"lead"}})
	ask := func(reg *tool.Registry, args string) (string, tool.Result) {
		t.Helper()
		res := reg.Execute(bob, "add", json.RawMessage(args))
		if req, ok := res.Metadata["approval_request"].(policy.ApprovalRequest); ok {
			return req.ID, res
		}
		return "", res
	}
	expired, _ := ask(reg, `{"a":1,"b":2}`)
	foreign, _ := ask(otherReg, `{"a":1,"b":3}`)
	if _, err := other.Answer(ann, foreign, true, ""); err != nil {
		t.Errorf("control: the foreign id in its own bucket: %v", err)
	}
	now = now.Add(time.Minute) // expired's request is now out of time
	used, _ := ask(reg, `{"a":1,"b":1}`)
	if _, err := a.Answer(ann, used, true, ""); err != nil {
		t.Fatal(err)
	}
	if _, res := ask(reg, `{"a":1,"b":1}`); res.IsError {
		t.Fatalf("control: the approved call: %+v", res)
	}
	for _, tt := range []struct {
		name string
		id   string
		want error
	}{
		{"forged", approvaltest.ID(12345), policy.ErrUnknownApproval},
		{"malformed", "$KV.faults.>", policy.ErrUnknownApproval},
		{"reused", used, policy.ErrApprovalAnswered},
		{"expired", expired, policy.ErrExpiredApproval},
		{"foreign", foreign, policy.ErrUnknownApproval},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := runs.Load()
			_, err := a.Answer(ann, tt.id, true, "")
			if !errors.Is(err, tt.want) {
				t.Errorf("Answer(%s) = %v, want %v", tt.id, err, tt.want)
			}
			if _, res := ask(reg, `{"a":1,"b":1}`); !res.IsError || runs.Load() != before {
				t.Errorf("after the refused answer the used call ran again: %+v", res)
			}
		})
	}
	// Full: the bucket keeps 2, and two wait.
	_, fullReg := process("faults_full", 2)
	ask(fullReg, `{"a":2,"b":1}`)
	ask(fullReg, `{"a":2,"b":2}`)
	id, res := ask(fullReg, `{"a":2,"b":3}`)
	if id != "" || res.Kind != tool.KindDenied || !strings.Contains(res.Error, "too many requests are waiting") {
		t.Errorf("a call asking of a full bucket: %+v, want refused saying so", res)
	}
	if runs.Load() != 1 {
		t.Errorf("the tool ran %d times, want once (the approved call)", runs.Load())
	}
}

// TestApprovalsBucketTTL: the bucket's own TTL removes a record that
// long after its last change, whatever the clock its callers pass: a
// store nobody sweeps still empties. (The records' own expiry, checked
// on every read, is in the contract test.)
func TestApprovalsBucketTTL(t *testing.T) {
	srv := startServer(t, true)
	ctx := context.Background()
	s, err := natstool.OpenApprovals(ctx, connect(t, srv), &natstool.ApprovalsOptions{Bucket: "approvals_ttl", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := approvaltest.Record(approvaltest.ID(1), "d1")
	r.Expires = approvaltest.T0.Add(24 * time.Hour)
	if _, err := s.Put(ctx, r, approvaltest.T0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, r.ID, approvaltest.T0); err != nil {
		t.Fatalf("control: %v", err)
	}
	waitFor(t, "the bucket's TTL to remove the record", func() bool {
		_, err := s.Get(ctx, r.ID, approvaltest.T0)
		return errors.Is(err, policy.ErrUnknownApproval)
	})
	if p, err := s.Pending(ctx, approvaltest.T0); err != nil || len(p) != 0 {
		t.Errorf("Pending after the TTL = %+v, %v", p, err)
	}
}
